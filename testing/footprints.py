"""Footprints built from the document model, as a recorder would write them, without recording."""

from __future__ import annotations

from collections.abc import Mapping

from lawkit.footprint.document import EnvironmentRecord, FileRecord, Footprint, UnitRecord
from lawkit.footprint.trees import SourceTree
from lawkit.footprint.units import units_of

Ran = tuple[tuple[str, ...], tuple[str, ...]]
"""Where a unit ran: its phases and its regions, in the footprint's order."""


def model_footprint(tree: SourceTree, ran: Mapping[tuple[str, str], Ran] | None = None, *,
                    default: Ran = ((), ()), regions: tuple[str, ...] = (),
                    schema: int = 2, environment: EnvironmentRecord | None = None,
                    ) -> Footprint:
    """The footprint of one `python run.py` process over `tree` (key atom, Python 3.12.1): each
    unit ran where `ran` says by (path, qualname), a unit it does not name as `default` says;
    ``environment``: the recorded one (none by default)."""
    files = {}
    for rel, data in tree.files.items():
        units = {u.qualname: UnitRecord(u.digest, *(ran or {}).get((rel, u.qualname), default))
                 for u in units_of(data, schema)}
        files[rel] = FileRecord(tree.sha256(rel), units)
    return Footprint("atom", tree.digest, ("python", "run.py"), 1, files, python="3.12.1",
                     regions=regions, schema=schema, environment=environment)
