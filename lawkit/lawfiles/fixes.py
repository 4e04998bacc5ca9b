"""The commands lawkit's messages name as the fix for a law file's problem, written once, so
that `lawkit check`, `lawkit rekey` and `lawfile.load(require="current")` say the same.

Standard library only: `check` imports it on the path its cache answers, without PyYAML or
pydantic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

REKEY_FIX = 'lawkit rekey --why "..."'
ADOPT_FIX = 'lawkit rekey --adopt --why "..."'


def refit_fix(path: str) -> str:
    """The refit of one law file: `fit` with no `--formula` refits every law of `--out`."""
    return f"lawkit fit CAPTURE... --out {path}"


def stale_message(named: str, digest: str) -> str:
    """What `check` says of a file on another digest than the engine's."""
    return f"names {named}, the engine is at {digest}"


def stale_fix(paths: Sequence[str],
              verdicts: Mapping[str, tuple[str, Sequence[str]]] | None = None,
              require: str | None = None) -> str:
    """The fix of stale files: a re-key, which is right only when the engine change cannot
    move host time (the laws still hold), else a refit: named with the file when
    there is one, else for each. ``verdicts`` holds, for a file whose footprint verdict is
    known, the verdict and the laws that are not untouched: an untouched file is re-keyed; a
    startup one is re-keyed if the person judges the start-up change cannot move the steps'
    time, or refitted (only refitted where the workspace's policy ``require`` is
    ``untouched``); a steps one refitted; each named with its verdict."""
    known = verdicts or {}
    untouched = [p for p in paths if p in known and known[p][0] == "untouched"]
    touched = [p for p in paths if p in known and p not in untouched]
    rest = [p for p in paths if p not in known]
    parts = []
    if untouched:
        named = "" if len(untouched) == len(paths) else f" {' '.join(untouched)}"
        parts.append(f"{REKEY_FIX}{named} (footprint verdict untouched: no code the captured "
                     "runs executed changed)")
    groups: dict[tuple[str, tuple[str, ...]], list[str]] = {}
    for path in touched:
        verdict, laws = known[path]
        groups.setdefault((verdict, tuple(laws)), []).append(path)
    for (verdict, laws), files in groups.items():
        refit = refit_fix(files[0]) if len(files) == 1 else f"{refit_fix('FILE')}, each"
        said = f"(footprint verdict {verdict}: {', '.join(laws)})"
        if verdict == "startup" and require != "untouched":
            parts.append(f"{REKEY_FIX} {' '.join(files)} {said} if the start-up change cannot "
                         f"move the steps' time (you judge), else refit: {refit}")
        else:
            parts.append(f"refit {' '.join(files)} {said}: {refit}")
    if rest:
        parts.append(_unjudged_fix(rest) if require is None else _refit_with_footprint(rest))
    return " && ".join(parts)


def _refit_with_footprint(paths: Sequence[str]) -> str:
    """The fix of stale files with no footprint verdict where the workspace has a re-key policy:
    it refuses a re-key resting on none, so a refit that records one."""
    refit = "lawkit fit CAPTURE... --footprint FOOTPRINT --out"
    each = f"{refit} {paths[0]}" if len(paths) == 1 else f"{refit} FILE, each"
    return (f"refit {' '.join(paths)} (no footprint verdict, which [rekey] require needs for a "
            f"re-key): {each}")


def _unjudged_fix(paths: Sequence[str]) -> str:
    if len(paths) == 1:
        return f"{REKEY_FIX} if the engine change cannot move host time, else refit: " \
               f"{refit_fix(paths[0])}"
    return f"{REKEY_FIX} if the engine change cannot move host time, else refit each: " \
           f"{refit_fix('FILE')}"
