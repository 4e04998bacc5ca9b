"""Each distribution that ran, by content (footprint schema 3): for each of its files that ran,
the file's sha256 and, for a Python file, its units with their digests, normal-form code
digests, phases and regions, exactly as for a hashed engine file.

Built by ``record``'s own process once the measured processes have saved, never in them. What
they saved is by file and by code object: where each file's code ran (its contexts), and each of
its code objects that started, with the contexts it may have run in (``collect.code_contexts``:
the recorder turns a file's code off and on by file, so a code object's later runs are bounded
by its file's). A unit ran where one of its code objects did (``ran``'s attribution). A file
whose code ran before the recorder started (a module a ``.pth`` file imported, or one of the
site hook's), or that a recorder seeing no code outside the hashed files (3.11's coverage.py)
only saw loaded, has no code objects recorded: every unit of it counts in every context its
process was in. A native library (an extension module, a shared object the process mapped) is
one file, with no units.

A file's path in a distribution (`path_in`) is relative to the folder that holds its metadata
(the ``.dist-info`` or ``.egg-info``: site-packages, or a project folder on the path), as RECORD
lists it; an editable install's own files, in its project's folder, are relative to that
folder. `installed_path` finds such a path again in an installed distribution.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from lawkit.footprint.document import DistFile, DistRecord, UnitRecord, sort_phases
from lawkit.footprint.environment import DistInfo, local_path_of
from lawkit.footprint.measured.markers import Context
from lawkit.footprint.owners import Attribution
from lawkit.footprint.ran import regions_in, unit_of_code
from lawkit.footprint.units import NORMAL, codes_of, units_of


@dataclass
class FileRuns:
    """Where one file outside the hashed ones ran: the contexts of its code, its code objects
    that started (by ``(qualname, firstlineno)``) with the contexts each may have run in, and
    whether every unit of it counts in the file's contexts (`whole`: its code ran unseen, or
    it is a native library)."""

    contexts: set[Context] = field(default_factory=set)
    codes: dict[tuple[str, int], set[Context]] = field(default_factory=dict)
    whole: bool = False


def distribution_records(runs: Mapping[str, FileRuns],
                         attribution: Attribution) -> dict[str, DistRecord]:
    """Each distribution some file of which ran in a phase that counts, with those files;
    ``attribution`` names each path's owners (a file installed by several distributions
    belongs to each)."""
    files: dict[str, dict[str, DistFile]] = {}
    for path, ran in sorted(runs.items()):
        names = attribution.shared.get(path) or (attribution.owners.get(path, ""),)
        infos = [attribution.distributions[n] for n in names if n in attribution.distributions]
        if not infos or not sort_phases({p for p, _ in ran.contexts}):
            continue  # no distribution's, or it ran only in a shutdown: not run
        record = file_record(path, ran)
        if record is None:
            continue  # gone since it ran (a temporary module): nothing to hash
        for info in infos:
            files.setdefault(info.name, {})[path_in(info, path)] = record
    dists: dict[str, DistRecord] = {}
    for name, by_path in sorted(files.items()):
        info = attribution.distributions[name]
        where = list(by_path.values())
        dists[name] = DistRecord(
            info.version, info.record, None,
            sort_phases({p for f in where for p in f.phases}),
            tuple(sorted({r for f in where for r in f.regions})),
            tuple(sorted({r for f in where for r in f.startup_regions})),
            install=info.install, source=info.source, commit=info.commit,
            files=dict(sorted(by_path.items())))
    return dists


def file_record(path: str, ran: FileRuns) -> DistFile | None:
    """One file that ran: its sha256, and for Python source its units (None: unreadable)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    sha = hashlib.sha256(data).hexdigest()
    phases = sort_phases({p for p, _ in ran.contexts})
    regions, startup = regions_in(ran.contexts, "steps"), regions_in(ran.contexts, "startup")
    if not path.endswith(".py"):
        return DistFile(sha, True, phases, regions, startup)
    units = units_of(data, path=path)
    codes = codes_of(data) or {}
    where: dict[str, set[Context]] = {u.qualname: set(ran.contexts) if ran.whole else set()
                                      for u in units}
    for (qualname, first), contexts in ran.codes.items():
        where[unit_of_code(units, qualname, first)] |= contexts
    records: dict[str, UnitRecord] = {}
    for u in units:
        ran_in = where[u.qualname]
        records[u.qualname] = UnitRecord(
            u.digest, sort_phases({p for p, _ in ran_in}), regions_in(ran_in, "steps"),
            regions_in(ran_in, "startup"),
            shutdown=bool(ran_in) and all(p == "shutdown" for p, _ in ran_in),
            code=codes.get(u.qualname), normal=NORMAL if u.qualname in codes else None)
    return DistFile(sha, False, phases, regions, startup, records)


def path_in(info: DistInfo, real: str) -> str:
    """A file's path in a distribution, ``/``-separated: relative to the folder holding its
    metadata, or for an editable install's own file, to its project's folder."""
    base = os.path.dirname(info.meta)
    project = local_path_of(info.source or "") if info.install == "editable" else None
    if project and not real.startswith(os.path.join(base, "")):
        root = os.path.realpath(project)
        if real.startswith(os.path.join(root, "")):
            base = root
    return os.path.relpath(real, base).replace(os.sep, "/")


def installed_path(info: DistInfo, rel: str) -> str:
    """Where a file's path in a distribution (`path_in`) lies in the installed one: in its
    project's folder for an editable install's file found there, else beside its metadata."""
    parts = rel.split("/")
    project = local_path_of(info.source or "") if info.install == "editable" else None
    if project:
        candidate = os.path.join(os.path.realpath(project), *parts)
        if os.path.exists(candidate):
            return candidate
    return os.path.normpath(os.path.join(os.path.dirname(info.meta), *parts))
