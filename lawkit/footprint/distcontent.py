"""A distribution that ran, judged by content (docs/footprints.md, "What each target shows"):
each of its files that ran compared with the target's, unit by unit where the target is the
installed environment (``current``), file by file where it is a manifest; and what every unit
of it counts for where nothing finer can be said (a lock file, a file that differs in a
manifest, a file gone).

A unit that changed counts with its own phases and regions, exactly as a hashed engine file's:
a module body or class shell wherever it ran counts as ``"*"`` (it defines state every region
reads), a changed unit whose code is the recorded one is layout only and counts for nothing, a
unit the file gained counts as steps for every law where its holder ran. A file that cannot be
compared unit by unit (native, or shown only by its sha256) counts every unit it holds.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from lawkit.footprint import ANY_REGION
from lawkit.footprint.dependencies import installed_path
from lawkit.footprint.document import DistFile, DistRecord, UnitRecord, sort_phases
from lawkit.footprint.envdiff import EnvChange
from lawkit.footprint.environment import Pin
from lawkit.footprint.errors import FootprintError
from lawkit.footprint.hashcache import FileHashes
from lawkit.footprint.lawverdict import EnvUnit
from lawkit.footprint.units import MODULE, NORMAL, codes_of, units_of

GONE = "gone"
"""The sha256 of a file that ran, as a baseline keeps it where an accepted target lacked it: it
must stay gone (no sha256 is this)."""


@dataclass(frozen=True)
class Extent:
    """Where something that changed counts: its phases, its regions in steps and at start-up
    (``"*"``: every region)."""

    phases: tuple[str, ...]
    regions: tuple[str, ...]
    startup_regions: tuple[str, ...]

    def unit(self, change: EnvChange) -> EnvUnit | None:
        """The change counted here; None where it never ran."""
        if not self.phases:
            return None
        return EnvUnit(change, self.phases, self.regions, self.startup_regions)


def unit_extent(name: str, unit: UnitRecord, body: bool) -> Extent:
    """Where a changed unit counts: a body or shell, and a unit that ran only at start-up,
    wherever it ran (``"*"``); another, in its own regions."""
    steps = "steps" in unit.phases
    regions = (ANY_REGION,) if steps and (body or not unit.regions) else \
        (unit.regions if steps else ())
    narrow = steps and not body and unit.startup_regions
    startup = () if "startup" not in unit.phases else \
        (unit.startup_regions if narrow else (ANY_REGION,))
    return Extent(unit.phases, regions, startup)


def file_extent(f: DistFile) -> Extent:
    """Where a file counts when every unit of it counts as changed (a native file: where it
    was loaded)."""
    if not f.units:
        steps = "steps" in f.phases
        return Extent(f.phases, (f.regions or (ANY_REGION,)) if steps else (),
                      (ANY_REGION,) if "startup" in f.phases else ())
    bodies = _bodies(f.units)
    return _union(unit_extent(n, u, n in bodies) for n, u in f.units.items() if u.phases)


def dist_extent(dist: DistRecord) -> Extent:
    """Where a distribution counts when every unit of it counts as changed, its module bodies
    included: the union over its files; recorded without files (before schema 3), where the
    distribution itself ran."""
    if not dist.files:
        return Extent(dist.phases, dist.regions, dist.startup_regions)
    return _union(file_extent(f) for f in dist.files.values())


def _union(extents: Iterable[Extent]) -> Extent:
    phases: set[str] = set()
    regions: set[str] = set()
    startup: set[str] = set()
    for e in extents:
        phases.update(e.phases)
        regions.update(e.regions)
        startup.update(e.startup_regions)
    return Extent(sort_phases(phases), tuple(sorted(regions)), tuple(sorted(startup)))


def _bodies(units: Mapping[str, UnitRecord]) -> frozenset[str]:
    """The module body and the class shells among a file's units: a class shell holds members
    whose names start with its own, as a hashed file's."""
    return frozenset({MODULE, *(name.rsplit(".", 1)[0] for name in units if "." in name)})


def content_units(name: str, dist: DistRecord, pin: Pin,
                  hashes: FileHashes | None) -> list[EnvUnit]:
    """What differs in a distribution's files that ran, against the target's installed copy
    (``hashes``: each file's sha256, from the cache where sound; a file that differs is read
    and cut into units) or, without, a manifest's sha256 of each file."""
    out: list[EnvUnit] = []
    for rel, f in sorted(dist.files.items()):
        if not f.phases:
            continue
        if hashes is not None:
            path = _installed(pin, rel)
            sha = None if path is None else hashes.sha256(path)
        else:
            sha = (pin.files or {}).get(rel)
        if (GONE if sha is None else sha) == f.sha256:
            continue
        what = "gone" if sha is None else "differs"
        data = _installed_bytes(pin, rel) if hashes is not None and sha is not None else None
        if data is None or f.native or not f.units:
            unit = file_extent(f).unit(_change(name, dist, rel, what))
            out += [unit] if unit is not None else []
        else:
            out += _unit_changes(name, dist, rel, f, data)
    return out


def _change(name: str, dist: DistRecord, where: str, what: str) -> EnvChange:
    return EnvChange(name, "content", dist.version, what, url=where, how=dist.kind)


def _installed(pin: Pin, rel: str) -> str | None:
    """Where a file of a distribution lies in the installed one; None: not installed here."""
    if pin.installed is None or not pin.installed.meta:
        return None
    return installed_path(pin.installed, rel)


def _installed_bytes(pin: Pin, rel: str) -> bytes | None:
    path = _installed(pin, rel)
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def _unit_changes(name: str, dist: DistRecord, rel: str, f: DistFile,
                  data: bytes) -> list[EnvUnit]:
    """The units of one file that differ from the recorded ones, each where it ran."""
    try:
        now = {u.qualname: u for u in units_of(data, 2, path=rel)}
    except FootprintError:  # too deep to parse: every unit counts as changed
        whole = file_extent(f).unit(_change(name, dist, rel, "differs"))
        return [whole] if whole is not None else []
    codes = codes_of(data) or {}
    out: list[EnvUnit] = []
    bodies = _bodies(f.units)
    for qualname, rec in f.units.items():
        found = now.get(qualname)
        if found is not None and found.digest == rec.digest:
            continue
        if found is not None and rec.code is not None and rec.normal == NORMAL and \
                codes.get(qualname) == rec.code:
            continue  # layout only: comments, blank lines, docstrings
        what = "gone" if found is None else "changed"
        counted = unit_extent(qualname, rec, qualname in bodies).unit(
            _change(name, dist, f"{rel} {qualname}", what))
        if counted is not None:
            out.append(counted)
    for qualname, new in now.items():
        holder = new.holder
        if qualname in f.units or holder is None or not f.units.get(holder, _NOT_RUN).phases:
            continue
        out.append(EnvUnit(_change(name, dist, f"{rel} {qualname}", "new"), ("steps",),
                           (ANY_REGION,)))
    return out


_NOT_RUN = UnitRecord("")


def shown_files(dist: DistRecord, pin: Pin, by_unit: bool) -> dict[str, dict[str, object]]:
    """What a target shows of a distribution's files that ran, as ``rekey --accept-env``
    records it: each file's sha256 and, installed (``by_unit``), its units' code digests; a
    file the target lacks is left out."""
    out: dict[str, dict[str, object]] = {}
    for rel, f in sorted(dist.files.items()):
        if by_unit:
            data = _installed_bytes(pin, rel)
            if data is None:
                continue
            shown: dict[str, object] = {"sha256": hashlib.sha256(data).hexdigest()}
            codes = None if f.native or not f.units else codes_of(data)
            if codes is not None:
                shown["units"] = dict(sorted(codes.items()))
            out[rel] = shown
        elif (sha := (pin.files or {}).get(rel)) is not None:
            out[rel] = {"sha256": sha}
    return out
