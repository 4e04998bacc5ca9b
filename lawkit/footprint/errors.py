"""The errors of the footprint wing, both LawkitErrors (the CLI prints them and exits 2).

    LawkitError
    ├── FootprintError   a footprint file is unreadable or malformed, or cannot be written
    ├── LockFileError    a lock file (the target environment) is unreadable, malformed or of
    │                    a kind lawkit does not read (file and line in the message)
    └── RefusalError
        └── RecordRefused   `footprint record` refused: a process left no data, the command
                            failed, nothing hashed ran... nothing was written
"""

from __future__ import annotations

from lawkit.errors import LawkitError, RefusalError


class FootprintError(LawkitError):
    """A footprint file is unreadable or malformed, or cannot be written."""


class LockFileError(LawkitError):
    """A lock file is unreadable, malformed or of a kind lawkit does not read."""


class RecordRefused(RefusalError):
    """A recording was refused; no footprint was written."""
