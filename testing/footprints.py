"""Footprints built from the document model, as a recorder would write them, without recording."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from lawkit.footprint.document import (
    EnvironmentRecord,
    FileRecord,
    Footprint,
    UnitRecord,
    encode_footprint,
)
from lawkit.footprint.trees import SourceTree
from lawkit.footprint.units import NORMAL, codes_of, units_of

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


RanIn = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
"""Where a unit ran: its phases, its regions in steps and its regions at start-up."""


def engine_footprint_bytes(files: Mapping[str, str | None], digest: str,
                           ran: Mapping[str, RanIn], *, regions: tuple[str, ...],
                           unregioned_threads: tuple[str, ...] | None = None) -> bytes:
    """The footprint file of the engine `files` (their atom/**/*.py) recorded on `digest`, each
    unit having run where `ran` says by qualified name (nowhere when it does not name it), with
    the codes a recorder keeps for layout-only changes."""
    records = {}
    for rel, text in files.items():
        if text is None or not (rel.startswith("atom/") and rel.endswith(".py")):
            continue
        data = text.encode()
        codes = codes_of(data) or {}
        records[rel] = FileRecord(hashlib.sha256(data).hexdigest(), {
            u.qualname: UnitRecord(u.digest, *ran.get(u.qualname, ((), (), ())),
                                   code=codes[u.qualname], normal=NORMAL)
            for u in units_of(data)})
    return encode_footprint(Footprint("atom", digest, ("python", "run.py"), 1, records,
                                      python="3.12.1", regions=regions,
                                      unregioned_threads=unregioned_threads))
