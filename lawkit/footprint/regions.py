"""A verdict for each law, from the region of a step it prices.

A law's region is its ``target`` when the footprint has a region of that name (``"*"``, steps
with no region open, is no law's region); otherwise it has none and takes the footprint's
verdict. For a region:

- ``steps`` if a changed or absent unit ran in that region or in ``"*"`` (a unit that ran in
  steps with no region open counts for every law), or if a new unit counts as ``steps`` by
  the footprint's rules (it could run anywhere: it counts for every region);
- else ``startup`` if a changed or absent unit ran at start-up;
- else ``untouched``.

A unit that ran in two regions counts for both. A footprint without regions (schema 1, or a
schema-2 file without top-level ``"regions"``) gives every law the footprint's verdict. A law
file's verdict is the worst of its laws' (``file_verdict``).
"""

from __future__ import annotations

from collections.abc import Iterable

from lawkit.footprint.document import ANY_REGION, Footprint
from lawkit.footprint.verdict import VERDICTS, FootprintDiff, UnitChange


def region_verdicts(footprint: Footprint, diff: FootprintDiff) -> dict[str, str]:
    """The verdict of each named region of the footprint (not ``"*"``), by name."""
    return {name: _region_verdict(name, diff.units)
            for name in footprint.regions if name != ANY_REGION}


def law_verdict(footprint: Footprint | None, diff: FootprintDiff | None,
                target: str) -> tuple[str | None, str]:
    """A law's region (None: it has none) and its verdict; ``unknown`` without a footprint."""
    if footprint is None or diff is None:
        return None, "unknown"
    if target == ANY_REGION or target not in footprint.regions:
        return None, diff.verdict
    return target, _region_verdict(target, diff.units)


def file_verdict(footprint: Footprint | None, diff: FootprintDiff | None,
                 targets: Iterable[str]) -> str:
    """A law file's verdict: the worst of its laws' (the footprint's when it has no law)."""
    verdicts = [law_verdict(footprint, diff, t)[1] for t in targets]
    if not verdicts:
        return "unknown" if diff is None else diff.verdict
    return worst_verdict(verdicts)


def worst_verdict(verdicts: Iterable[str]) -> str:
    """The worst of some verdicts (``untouched`` < ``startup`` < ``steps`` < ``unknown``)."""
    return max(verdicts, key=VERDICTS.index)


def _region_verdict(region: str, units: Iterable[UnitChange]) -> str:
    startup = False
    for u in units:
        if u.change == "new":
            if u.counts_as == "steps":
                return "steps"
            continue
        if region in _regions_of(u) or ANY_REGION in _regions_of(u):
            return "steps"
        startup |= "startup" in u.phases
    return "startup" if startup else "untouched"


def _regions_of(u: UnitChange) -> tuple[str, ...]:
    """The regions a changed or absent unit ran in; one that ran in steps without a region
    recorded (a footprint that lists regions but not this unit's) counts as ``"*"``."""
    if not u.regions and "steps" in u.phases:
        return (ANY_REGION,)
    return u.regions
