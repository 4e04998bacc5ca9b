"""What a change touches: a footprint's units compared with a target tree.

Each unit of the footprint is unchanged, ``changed`` (its digest differs, or its bytes are the
same and its code in the normal form is not: a changed coding declaration) or ``absent`` (its
file or its qualified name is gone); each unit of the target the footprint lacks is ``new``;
what each counts as, and the verdicts, are `lawkit.footprint.lawverdict`'s rules. A changed
unit is layout only when its code in the normal form (``units.codes_of``) is the one the
footprint recorded; a footprint without it (or of another ``normal``) is answered from the
recorded file's bytes (``old_source``, git history), and without those the change is code.

Units are cut by the footprint's own schema (``units.units_of(..., schema=)``): a schema-1
footprint is compared with schema-1 digests, which cannot see a statement moved across a
``def`` or a changed decorator or default of a function that never ran; its diff says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from lawkit.config import Workspace
from lawkit.errors import LawkitError, printable
from lawkit.footprint.document import Footprint, UnitRecord, normal_forms
from lawkit.footprint.lawverdict import (
    LAYOUT_ONLY,
    VERDICTS,
    EnvComparison,
    UnitChange,
    counts_as,
    law_verdict,
    verdict_of,
)
from lawkit.footprint.trees import SourceTree, rev_sources, work_tree_sources
from lawkit.footprint.units import MODULE, NORMAL, Unit, codes_of, layout_only, units_of

__all__ = ["VERDICTS", "FootprintDiff", "OldSource", "UnitChange", "diff_footprint",
           "diff_rev", "diff_work_tree"]

OldSource = Callable[[str, str], bytes | None]
"""Finds a file's bytes as the footprint saw them, from (relpath, sha256); None if unknown."""


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
    regions: tuple[str, ...] = ()
    """The regions the footprint saw in steps (``"*"`` included when it occurred)."""
    env: EnvComparison | None = None
    """The footprint's environment compared with the target's (None: it has none)."""
    normal: int | None = None
    """An older normal form the footprint's units were recorded under (None: lawkit's)."""

    def law(self, target: str) -> tuple[str | None, str]:
        """A law's region (None: it has none) and its verdict (``lawverdict.law_verdict``)."""
        return law_verdict(self.regions, self.units, target, self.env)

    def with_env(self, env: EnvComparison | None) -> FootprintDiff:
        """The diff with the environment's differences counted (``env`` None: as it is)."""
        if env is None:
            return self
        return dataclasses.replace(self, env=env, verdict=law_verdict((), self.units, "*", env)[1])

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
                f"{u.unit} ({'gone, ' if u.change == 'absent' else ''}{u.ran()}"
                f"{', layout only' if u.counts_as == LAYOUT_ONLY else ''}"
                f"{f', {why}' if (why := u.reason()) else ''})"
                for u in self.units))
        counted = [(n, what) for what in ("steps", "startup", "not run", LAYOUT_ONLY)
                   if (n := sum(1 for u in self.units if u.counts_as == what))]
        (n, what), *rest = counted
        return f"{text}; {n} count as {what}" + "".join(f", {n} as {w}" for n, w in rest)

    def note(self) -> str | None:
        """What the comparison could not see, or None (a schema-1 footprint's blind spots)."""
        if self.schema >= 2 and self.normal is not None:
            return (f"this footprint's units were recorded under normal form {self.normal} "
                    f"(lawkit's is {NORMAL}): a unit whose bytes changed counts as code unless "
                    "git history shows only layout moved, and one whose bytes are equal as "
                    "unchanged (a changed coding declaration is not seen there); record it again "
                    "with `lawkit footprint record`")
        if self.schema >= 2:
            return None
        return ("this footprint is schema 1 (lawkit-footprint/1): it cannot see a statement "
                "moved across a def, nor a changed decorator or default of a function that "
                "never ran; record it again with `lawkit footprint record`")

    def lines(self) -> list[str]:
        """The verdict line, then one line per changed, absent or new unit."""
        head = (f"{self.verdict}: {self.key}={self.footprint_digest} (footprint) -> "
                f"{self.key}={self.target_digest}, {self.summary()}")
        return [head, *(u.line() for u in self.units),
                *(self.env.lines() if self.env is not None else ())]

    def to_json(self) -> dict[str, Any]:
        """The document `footprint diff --json` prints."""
        return {"verdict": self.verdict, "schema": self.schema, "note": self.note(),
                "digest": {"footprint": self.footprint_digest, "target": self.target_digest},
                "units": [u.to_json() for u in self.units],
                **({"environment": self.env.to_json()} if self.env is not None else {})}


_NAMED = 3
"""Up to this many changed units, a summary names each of them."""
_CHANGE_WORDS = {"changed": "changed", "absent": "gone", "new": "new"}


def diff_footprint(footprint: Footprint, target: SourceTree,
                   old_source: OldSource | None = None) -> FootprintDiff:
    """Compare a footprint with a target tree, unit by unit."""
    schema = footprint.schema
    changes: list[UnitChange] = []
    for path in sorted(set(footprint.files) | set(target.files)):
        record = footprint.files.get(path)
        if record is None:
            changes += [UnitChange(path, u.qualname, "new", (), "steps")
                        for u in units_of(target.files[path], schema, path=path)]
        elif path not in target.files:
            changes += [_gone(path, name, u, record.units) for name, u in record.units.items()]
        elif target.sha256(path) != record.sha256:
            old = _Lazy(old_source, path, record.sha256)
            changes += _file_changes(path, record.units, target.files[path], old, schema)
    if footprint.unregioned_threads:  # named where a unit counts for running with none open
        threads = footprint.unregioned_threads
        changes = [dataclasses.replace(c, threads=threads) for c in changes]
    older = {n for f in footprint.files.values() for n in normal_forms(f.units) if n != NORMAL}
    return FootprintDiff(verdict_of(changes), footprint.digest, target.digest, footprint.key,
                         tuple(changes), schema, footprint.regions,
                         normal=min(older) if older else None)


class _Lazy:
    """The recorded bytes of one file, looked up (in git history) only when asked."""

    def __init__(self, old_source: OldSource | None, path: str, sha256: str) -> None:
        self._args = (old_source, path, sha256)
        self._units: dict[str, Unit] | None = None

    def units(self, schema: int) -> dict[str, Unit]:
        if self._units is None:
            find, path, sha256 = self._args
            data = find(path, sha256) if find is not None else None
            self._units = {u.qualname: u for u in units_of(data, schema, path=path)} \
                if data is not None else {}
        return self._units


def _gone(path: str, name: str, rec: UnitRecord, recorded: Mapping[str, UnitRecord],
          ) -> UnitChange:
    # A class shell holds members whose names start with its own; one without members is
    # taken for a function, which loses nothing: its holder, a body, changed or went with it
    # and ran wherever it ran.
    body = name == MODULE or any(other.startswith(name + ".") for other in recorded)
    return UnitChange(path, name, "absent", rec.phases, counts_as(rec.phases),
                      regions=rec.regions, startup_regions=rec.startup_regions, body=body)


def _file_changes(path: str, recorded: Mapping[str, UnitRecord], source: bytes, old: _Lazy,
                  schema: int) -> list[UnitChange]:
    """The changes within one file that both sides hold."""
    now = units_of(source, schema, path=path)
    by_name = {u.qualname: u for u in now}
    changes: list[UnitChange] = []
    for name, rec in recorded.items():
        unit = by_name.get(name)
        if unit is None:
            changes.append(_gone(path, name, rec, recorded))
        elif unit.digest != rec.digest or _recoded(rec, unit, source, schema):
            layout = _layout_only(rec, unit, source, old, schema)
            changes.append(UnitChange(path, name, "changed", rec.phases,
                                      counts_as(rec.phases, layout), layout, rec.regions,
                                      rec.startup_regions, unit.kind in ("module", "class")))
    for unit in now:
        if unit.qualname not in recorded:
            ran = next((h for h in _holders(unit, by_name)
                        if h in recorded and recorded[h].phases), None)
            changes.append(UnitChange(path, unit.qualname, "new", (),
                                      "steps" if ran is not None else "not run",
                                      body=unit.kind != "function", beside=ran))
    return changes


def _layout_only(rec: UnitRecord, unit: Unit, source: bytes, old: _Lazy, schema: int) -> bool:
    """Whether a changed unit's code is the recorded one: by the normal form the footprint
    keeps, else by the recorded bytes found in history, else not (a change of code)."""
    if rec.code is not None and rec.normal == NORMAL and schema == 2:
        codes = codes_of(source)
        return codes is not None and codes.get(unit.qualname) == rec.code
    before = old.units(schema).get(unit.qualname)
    return before is not None and before.digest == rec.digest and \
        layout_only(before.data, unit.data, schema)


def _recoded(rec: UnitRecord, unit: Unit, source: bytes, schema: int) -> bool:
    """Whether a unit whose bytes are the recorded ones holds other code: the file's coding
    declaration changed what its literals decode to (told by the normal form alone)."""
    if rec.code is None or rec.normal != NORMAL or schema != 2:
        return False
    codes = codes_of(source)
    return codes is not None and codes.get(unit.qualname) != rec.code


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
