"""What a change touches: a footprint's units compared with a target tree, and the verdict.

Each unit of the footprint is unchanged, ``changed`` (its digest differs) or ``absent`` (its
file or its qualified name is gone); each unit of the target the footprint lacks is ``new``. A
changed or absent unit counts as the phases it ran in (``steps`` before ``startup``, else
``not run``); a new unit counts as ``steps`` when a class shell or module body holding it ran,
and every unit of a new hashed file counts as ``steps``. The verdict is ``steps`` if any unit
counts as steps, else ``startup`` if any counts as startup, else ``untouched``; ``unknown``
when there is no footprint to compare with.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lawkit.config import Workspace
from lawkit.errors import LawkitError, printable
from lawkit.footprint.document import Footprint, UnitRecord
from lawkit.footprint.trees import SourceTree, rev_sources, work_tree_sources
from lawkit.footprint.units import Unit, layout_only, units_of

VERDICTS = ("untouched", "startup", "steps", "unknown")

OldSource = Callable[[str, str], bytes | None]
"""Finds a file's bytes as the footprint saw them, from (relpath, sha256); None if unknown."""


@dataclass(frozen=True)
class UnitChange:
    """One changed, absent or new unit, and what it counts as."""

    path: str
    unit: str
    change: str  # "changed" | "absent" | "new"
    phases: tuple[str, ...]
    counts_as: str  # "steps" | "startup" | "not run"
    layout_only: bool = False

    def to_json(self) -> dict[str, Any]:
        """The unit as in `footprint diff --json`."""
        return {"path": self.path, "unit": self.unit, "change": self.change,
                "phases": list(self.phases), "counts_as": self.counts_as,
                "layout_only": self.layout_only}

    def line(self) -> str:
        """One line of `footprint diff`'s text output."""
        ran = f"ran in {', '.join(self.phases)}" if self.phases else "never ran"
        if self.change == "new":
            ran = "new"
        extra = "  (layout, comments or docstrings only)" if self.layout_only else ""
        return printable(f"{self.change:<8} {self.path}  {self.unit}  {ran}: counts as "
                         f"{self.counts_as}{extra}")


@dataclass(frozen=True)
class FootprintDiff:
    """The units a change touches, compared with a footprint, and the verdict they make."""

    verdict: str
    footprint_digest: str
    target_digest: str
    key: str
    units: tuple[UnitChange, ...]

    def lines(self) -> list[str]:
        """The verdict line, then one line per changed, absent or new unit."""
        count = len(self.units)
        head = (f"{self.verdict}: {self.key}={self.footprint_digest} (footprint) -> "
                f"{self.key}={self.target_digest}, {count} unit{'' if count == 1 else 's'} "
                "changed, absent or new")
        return [head, *(u.line() for u in self.units)]

    def to_json(self) -> dict[str, Any]:
        """The document `footprint diff --json` prints."""
        return {"verdict": self.verdict,
                "digest": {"footprint": self.footprint_digest, "target": self.target_digest},
                "units": [u.to_json() for u in self.units]}


def counts_as(phases: tuple[str, ...] | list[str]) -> str:
    """What a changed or absent unit that ran in ``phases`` counts as."""
    if "steps" in phases:
        return "steps"
    return "startup" if "startup" in phases else "not run"


def verdict_of(changes: tuple[UnitChange, ...] | list[UnitChange]) -> str:
    """The verdict of a set of unit changes: steps, startup or untouched."""
    kinds = {c.counts_as for c in changes}
    if "steps" in kinds:
        return "steps"
    return "startup" if "startup" in kinds else "untouched"


def law_verdict(diff: FootprintDiff | None) -> str:
    """A law file's verdict: the diff's, or ``unknown`` without a footprint."""
    return "unknown" if diff is None else diff.verdict


def diff_footprint(footprint: Footprint, target: SourceTree,
                   old_source: OldSource | None = None) -> FootprintDiff:
    """Compare a footprint with a target tree, unit by unit."""
    changes: list[UnitChange] = []
    for path in sorted(set(footprint.files) | set(target.files)):
        record = footprint.files.get(path)
        if record is None:
            changes += [UnitChange(path, u.qualname, "new", (), "steps")
                        for u in units_of(target.files[path])]
        elif path not in target.files:
            changes += [UnitChange(path, name, "absent", u.phases, counts_as(u.phases))
                        for name, u in record.units.items()]
        elif target.sha256(path) != record.sha256:
            old = old_source(path, record.sha256) if old_source is not None else None
            changes += _file_changes(path, record.units, units_of(target.files[path]), old)
    return FootprintDiff(verdict_of(changes), footprint.digest, target.digest, footprint.key,
                         tuple(changes))


def _file_changes(path: str, recorded: Mapping[str, UnitRecord], now: list[Unit],
                  old: bytes | None) -> list[UnitChange]:
    """The changes within one file that both sides hold."""
    by_name = {u.qualname: u for u in now}
    old_units = {u.qualname: u for u in units_of(old)} if old is not None else {}
    changes: list[UnitChange] = []
    for name, rec in recorded.items():
        unit = by_name.get(name)
        if unit is None:
            changes.append(UnitChange(path, name, "absent", rec.phases, counts_as(rec.phases)))
        elif unit.digest != rec.digest:
            before = old_units.get(name)
            layout = before is not None and before.digest == rec.digest and \
                layout_only(before.data, unit.data)
            changes.append(UnitChange(path, name, "changed", rec.phases, counts_as(rec.phases),
                                      layout))
    for unit in now:
        if unit.qualname not in recorded:
            holder_ran = any(recorded[h].phases for h in _holders(unit, by_name)
                             if h in recorded)
            changes.append(UnitChange(path, unit.qualname, "new", (),
                                      "steps" if holder_ran else "not run"))
    return changes


def _holders(unit: Unit, by_name: Mapping[str, Unit]) -> list[str]:
    """The class shells and module body that hold a unit, innermost first."""
    out: list[str] = []
    holder = unit.holder
    while holder is not None:
        out.append(holder)
        above = by_name.get(holder)
        holder = above.holder if above is not None else None
    return out


def diff_work_tree(ws: Workspace, footprint: Footprint) -> FootprintDiff:
    """Compare a footprint with the engine's work tree."""
    from lawkit.footprint.history import git_old_source

    _check_key(ws, footprint)
    return diff_footprint(footprint, work_tree_sources(ws.digest), git_old_source(ws.digest))


def diff_rev(ws: Workspace, footprint: Footprint, rev: str) -> FootprintDiff:
    """Compare a footprint with the engine at a git revision, from git objects."""
    from lawkit.footprint.history import git_old_source

    _check_key(ws, footprint)
    return diff_footprint(footprint, rev_sources(ws.digest, rev), git_old_source(ws.digest))


def _check_key(ws: Workspace, footprint: Footprint) -> None:
    if footprint.key != ws.digest.key:
        raise LawkitError(f"the footprint keys {footprint.key!r}, the workspace's digest keys "
                          f"{ws.digest.key!r}: compare it in its own workspace")
