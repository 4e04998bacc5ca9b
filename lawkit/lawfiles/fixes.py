"""The commands lawkit's messages name as the fix for a law file's problem, written once, so
that `lawkit check`, `lawkit rekey` and `lawfile.load(require="current")` say the same.

Standard library only: `check` imports it on the path its cache answers, without PyYAML or
pydantic.
"""

from __future__ import annotations

from collections.abc import Sequence

REKEY_FIX = 'lawkit rekey --why "..."'
ADOPT_FIX = 'lawkit rekey --adopt --why "..."'


def refit_fix(path: str) -> str:
    """The refit of one law file: `fit` with no `--formula` refits every law of `--out`."""
    return f"lawkit fit CAPTURE... --out {path}"


def stale_message(named: str, digest: str) -> str:
    """What `check` says of a file on another digest than the engine's."""
    return f"names {named}, the engine is at {digest}"


def stale_fix(paths: Sequence[str]) -> str:
    """The fix of stale files: a re-key, which is right only when the engine change cannot
    move host time (the laws still hold), else a refit (issue 23): named with the file when
    there is one, else for each."""
    if len(paths) == 1:
        return f"{REKEY_FIX} if the engine change cannot move host time, else refit: " \
               f"{refit_fix(paths[0])}"
    return f"{REKEY_FIX} if the engine change cannot move host time, else refit each: " \
           f"{refit_fix('FILE')}"
