"""The errors of the footprint wing, both LawkitErrors (the CLI prints them and exits 2).

    LawkitError
    ├── FootprintError   a footprint file is unreadable or malformed, or cannot be written
    └── RefusalError
        └── RecordRefused   `footprint record` refused: a process left no data, the command
                            failed, nothing hashed ran... nothing was written
"""

from __future__ import annotations

from lawkit.errors import LawkitError, RefusalError


class FootprintError(LawkitError):
    """A footprint file is unreadable or malformed, or cannot be written."""


class RecordRefused(RefusalError):
    """A recording was refused; no footprint was written."""
