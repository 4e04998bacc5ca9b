"""What a change touches: a footprint's units compared with a target tree, and the verdict.

Each unit of the footprint is unchanged, ``changed`` (its digest differs) or ``absent`` (its
file or its qualified name is gone); each unit of the target the footprint lacks is ``new``. A
changed or absent unit counts as the phases it ran in (``steps`` before ``startup``, else
``not run``); a new unit counts as ``steps`` when a class shell or module body holding it ran,
and every unit of a new hashed file counts as ``steps``. The verdict is ``steps`` if any unit
counts as steps, else ``startup`` if any counts as startup, else ``untouched``; ``unknown``
when there is no footprint to compare with.

Units are cut by the footprint's own schema (``units.units_of(..., schema=)``): a schema-1
footprint is compared with schema-1 digests, which cannot see a statement moved across a
``def`` or a changed decorator or default of a function that never ran; its diff says so.
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
    regions: tuple[str, ...] = ()
    """The regions the unit ran in (schema 2; ``"*"``: in steps with no region open)."""

    def to_json(self) -> dict[str, Any]:
        """The unit as in `footprint diff --json`."""
        return {"path": self.path, "unit": self.unit, "change": self.change,
                "phases": list(self.phases), "regions": list(self.regions),
                "counts_as": self.counts_as, "layout_only": self.layout_only}

    def ran(self) -> str:
        """How the unit ran, as a person says it: ``ran in steps``, ``never ran``, ``new``."""
        if self.change == "new":
            return "new"
        if not self.phases:
            return "never ran"
        return "ran " + " and ".join("at start-up" if p == "startup" else "in steps"
                                     for p in self.phases)

    def line(self) -> str:
        """One line of `footprint diff`'s text output."""
        extra = "  (layout, comments or docstrings only)" if self.layout_only else ""
        return printable(f"{self.change:<8} {self.path}  {self.unit}  {self.ran()}: counts as "
                         f"{self.counts_as}{extra}")


@dataclass(frozen=True)
class FootprintDiff:
    """The units a change touches, compared with a footprint, and the verdict they make."""

    verdict: str
    footprint_digest: str
    target_digest: str
    key: str
    units: tuple[UnitChange, ...]
    schema: int = 2
    """The footprint's schema, whose digests the units were compared with."""

    def summary(self) -> str:
        """The units behind the verdict, as a person says it: ``no unit changed``, ``1 unit
        changed: Scheduler.debug_dump (never ran)``, ``2 units changed, 1 new``."""
        if not self.units:
            return "no unit changed"
        counts = {kind: sum(1 for u in self.units if u.change == kind)
                  for kind in ("changed", "absent", "new")}
        parts = [(n, _CHANGE_WORDS[kind]) for kind, n in counts.items() if n]
        n, word = parts[0]
        plural = "" if n == 1 else "s"
        head = f"{n} new unit{plural}" if word == "new" else f"{n} unit{plural} {word}"
        text = ", ".join([head, *(f"{n} {word}" for n, word in parts[1:])])
        if len(self.units) <= _NAMED:
            return printable(text + ": " + ", ".join(
                f"{u.unit} ({'gone, ' if u.change == 'absent' else ''}{u.ran()})"
                for u in self.units))
        counted = [(n, what) for what in ("steps", "startup", "not run")
                   if (n := sum(1 for u in self.units if u.counts_as == what))]
        (n, what), *rest = counted
        return f"{text}; {n} count as {what}" + "".join(f", {n} as {w}" for n, w in rest)

    def note(self) -> str | None:
        """What the comparison could not see, or None (a schema-1 footprint's blind spots)."""
        if self.schema >= 2:
            return None
        return ("this footprint is schema 1 (lawkit-footprint/1): it cannot see a statement "
                "moved across a def, nor a changed decorator or default of a function that "
                "never ran; record it again with `lawkit footprint record`")

    def lines(self) -> list[str]:
        """The verdict line, then one line per changed, absent or new unit."""
        head = (f"{self.verdict}: {self.key}={self.footprint_digest} (footprint) -> "
                f"{self.key}={self.target_digest}, {self.summary()}")
        return [head, *(u.line() for u in self.units)]

    def to_json(self) -> dict[str, Any]:
        """The document `footprint diff --json` prints."""
        return {"verdict": self.verdict, "schema": self.schema, "note": self.note(),
                "digest": {"footprint": self.footprint_digest, "target": self.target_digest},
                "units": [u.to_json() for u in self.units]}


_NAMED = 3
"""Up to this many changed units, a summary names each of them."""
_CHANGE_WORDS = {"changed": "changed", "absent": "gone", "new": "new"}


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


def diff_footprint(footprint: Footprint, target: SourceTree,
                   old_source: OldSource | None = None) -> FootprintDiff:
    """Compare a footprint with a target tree, unit by unit."""
    schema = footprint.schema
    changes: list[UnitChange] = []
    for path in sorted(set(footprint.files) | set(target.files)):
        record = footprint.files.get(path)
        if record is None:
            changes += [UnitChange(path, u.qualname, "new", (), "steps")
                        for u in units_of(target.files[path], schema)]
        elif path not in target.files:
            changes += [_gone(path, name, u) for name, u in record.units.items()]
        elif target.sha256(path) != record.sha256:
            old = old_source(path, record.sha256) if old_source is not None else None
            changes += _file_changes(path, record.units, units_of(target.files[path], schema),
                                     old, schema)
    return FootprintDiff(verdict_of(changes), footprint.digest, target.digest, footprint.key,
                         tuple(changes), schema)


def _gone(path: str, name: str, rec: UnitRecord) -> UnitChange:
    return UnitChange(path, name, "absent", rec.phases, counts_as(rec.phases),
                      regions=rec.regions)


def _file_changes(path: str, recorded: Mapping[str, UnitRecord], now: list[Unit],
                  old: bytes | None, schema: int) -> list[UnitChange]:
    """The changes within one file that both sides hold."""
    by_name = {u.qualname: u for u in now}
    old_units = {u.qualname: u for u in units_of(old, schema)} if old is not None else {}
    changes: list[UnitChange] = []
    for name, rec in recorded.items():
        unit = by_name.get(name)
        if unit is None:
            changes.append(_gone(path, name, rec))
        elif unit.digest != rec.digest:
            before = old_units.get(name)
            layout = before is not None and before.digest == rec.digest and \
                layout_only(before.data, unit.data, schema)
            changes.append(UnitChange(path, name, "changed", rec.phases, counts_as(rec.phases),
                                      layout, rec.regions))
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
