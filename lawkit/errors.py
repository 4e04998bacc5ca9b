"""The errors lawkit raises for what a user can fix.

    LawkitError          base: one line a person can act on; the CLI prints it and exits 2
    ├── ConfigError      the workspace config is missing, malformed or names a bad value
    ├── LawFileError     a law file does not parse or validate (file and line in the message)
    ├── CaptureError     a capture file is unreadable or holds a bad value (file, column, row)
    ├── FitError         a fit cannot be made (rank deficiency, empty selection, ...)
    ├── RefusalError     a write was refused: nothing on disk changed
    └── GitError         git is missing, too old, or a revision does not resolve

A bug is never a LawkitError: the CLI prints `lawkit: internal error`, the traceback and where
to report it, and exits 3 (never 1, the code for "found a problem").

A message is one line whatever it quotes: a file, column or law name may hold line breaks,
other control characters, invisible format characters (a right-to-left override) or undecodable
bytes, so those are escaped (`\\n`, `\\x1b`, `\\u202e`, `\\udcff`), and a message longer than
`MAX_MESSAGE` characters is cut in the middle.
"""

from __future__ import annotations

import unicodedata

MAX_MESSAGE = 2000
"""The longest message, in characters: past it the middle is replaced by ` [...] `."""
_KEEP_TAIL = 400  # the end of a message often says where ("... at character 80123")


def printable(text: str) -> str:
    """`text` with line breaks, control and format characters and lone surrogates escaped (tabs
    kept): safe to print on one line of any terminal, in any encoding's strict mode."""
    if text.isprintable():
        return text
    return "".join(_escaped(c) for c in text)


def one_line(text: str) -> str:
    """`text` as one printable line (see `printable`), cut in the middle past `MAX_MESSAGE`
    characters."""
    text = printable(text)
    if len(text) > MAX_MESSAGE:
        head = MAX_MESSAGE - _KEEP_TAIL - len(" [...] ")
        text = f"{text[:head]} [...] {text[-_KEEP_TAIL:]}"
    return text


def _escaped(char: str) -> str:
    if char != "\t" and unicodedata.category(char) in ("Cc", "Cf", "Cs", "Zl", "Zp"):
        return char.encode("unicode_escape", "backslashreplace").decode("ascii")
    return char


class LawkitError(Exception):
    """An error the user can act on; its message is one line."""

    exit_code = 2

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        message = one_line(message)
        path = one_line(path) if path is not None else None
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
