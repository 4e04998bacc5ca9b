"""The errors lawkit raises for what a user can fix.

    LawkitError          base: one line a person can act on; the CLI prints it and exits 2
    ├── ConfigError      the workspace config is missing, malformed or names a bad value
    ├── LawFileError     a law file does not parse or validate (file and line in the message)
    ├── CaptureError     a capture file is unreadable or holds a bad value (file, column, row)
    ├── FitError         a fit cannot be made (rank deficiency, empty selection, ...)
    ├── RefusalError     a write was refused: nothing on disk changed
    └── GitError         git is missing, too old, or a revision does not resolve

A bug is never a LawkitError: it surfaces as a traceback.
"""

from __future__ import annotations


class LawkitError(Exception):
    """An error the user can act on; its message is one line."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        self.path = path
        self.line = line
        self.detail = message
        where = path if path is not None else ""
        if path is not None and line is not None:
            where = f"{path}:{line}"
        super().__init__(f"{where}: {message}" if where else message)


class ConfigError(LawkitError):
    """The workspace config is missing, malformed or names a bad value."""


class LawFileError(LawkitError):
    """A law file does not parse or validate."""


class CaptureError(LawkitError):
    """A capture file is unreadable or holds a bad value."""


class FitError(LawkitError):
    """A fit cannot be made from the data given."""


class RefusalError(LawkitError):
    """A write was refused; nothing on disk changed."""


class GitError(LawkitError):
    """git is missing, too old, or a revision does not resolve."""
