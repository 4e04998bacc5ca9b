"""A verdict for each law, from the region of a step it prices: a footprint and its diff in,
the rules of `lawkit.footprint.lawverdict` applied.

A law's region is its ``target`` when the footprint saw a region of that name in steps
(``"*"``, steps with no region open, is no law's region); otherwise it has none and takes the
footprint's verdict. A law file's verdict is the worst of its laws'.
"""

from __future__ import annotations

from lawkit.footprint.document import ANY_REGION, Footprint
from lawkit.footprint.lawverdict import worst_verdict
from lawkit.footprint.verdict import FootprintDiff

__all__ = ["region_verdicts", "worst_verdict"]


def region_verdicts(footprint: Footprint, diff: FootprintDiff) -> dict[str, str]:
    """The verdict of each named region of the footprint (not ``"*"``), by name."""
    return {name: diff.law(name)[1] for name in footprint.regions if name != ANY_REGION}
