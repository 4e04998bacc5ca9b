"""A verdict for each law, from the region of a step it prices: a footprint and its diff in,
the rules of `lawkit.footprint.lawverdict` applied.

A law's region is its ``target`` when the footprint saw a region of that name in steps
(``"*"``, steps with no region open, is no law's region); otherwise it has none and takes the
footprint's verdict. A law file's verdict is the worst of its laws' (``file_verdict``).
"""

from __future__ import annotations

from collections.abc import Iterable

from lawkit.footprint.document import ANY_REGION, Footprint
from lawkit.footprint.lawverdict import worst_verdict
from lawkit.footprint.verdict import FootprintDiff

__all__ = ["file_verdict", "law_verdict", "region_verdicts", "worst_verdict"]


def region_verdicts(footprint: Footprint, diff: FootprintDiff) -> dict[str, str]:
    """The verdict of each named region of the footprint (not ``"*"``), by name."""
    return {name: diff.law(name)[1] for name in footprint.regions if name != ANY_REGION}


def law_verdict(footprint: Footprint | None, diff: FootprintDiff | None,
                target: str) -> tuple[str | None, str]:
    """A law's region (None: it has none) and its verdict; ``unknown`` without a footprint."""
    if footprint is None or diff is None:
        return None, "unknown"
    return diff.law(target)


def file_verdict(footprint: Footprint | None, diff: FootprintDiff | None,
                 targets: Iterable[str]) -> str:
    """A law file's verdict: the worst of its laws' (the footprint's when it has no law)."""
    verdicts = [law_verdict(footprint, diff, t)[1] for t in targets]
    if not verdicts:
        return "unknown" if diff is None else diff.verdict
    return worst_verdict(verdicts)
