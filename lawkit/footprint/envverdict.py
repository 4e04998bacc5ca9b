"""A footprint's environment and configuration compared with the target a command names
(docs/footprints.md, "The environment"): ``--env current|FILE``, else the config's
``environment``; the config's ``python`` is the exact Python compared against. The differences
count through `lawverdict.law_verdict`, like changed units.

What each target shows decides how a distribution that ran is judged: ``current`` by unit (its
files hashed again, a differing one cut into units), a manifest by file, a lock file by
version and source (every unit of it changed, module bodies included, unless the lock pins
the recorded version from an index and it was recorded installed from one). A footprint
recorded before schema 3 has no files: it is judged by version, and says to record again.
Nothing a target cannot show is read as unchanged.

A law file's baseline is its footprint's environment with the ``env`` clauses of the ``rekey``
entries after its newest fit applied (``lawkit rekey --accept-env``), each name's ``[old,
new]``: ``new`` is what the accepted target showed, an identity (``{"version", "install",
"source", "commit", "files": {path: {"sha256", "units": {qualname: code}}}}``, a Python
build's fields, ``{"ambiguous": [versions]}``, a variable's or setting's value), a version
(a clause written before identities), or null: the distribution must stay absent. An accepted
difference never removes a distribution, nor a file of it that ran, from later comparisons: a
file the accepted target lacked must stay gone. Configuration differences are
named ``environ:NAME`` and ``setting:NAME``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lawkit.config import Workspace
from lawkit.errors import printable
from lawkit.footprint.distcontent import GONE, content_units, dist_extent, shown_files
from lawkit.footprint.document import (
    RECORD_AGAIN,
    Configuration,
    DistFile,
    DistRecord,
    EnvironmentRecord,
    EnvRead,
    UnitRecord,
)
from lawkit.footprint.envdiff import EnvChange, compare_dist, compare_python
from lawkit.footprint.environment import STDLIB, Pin, PythonBuild, Target
from lawkit.footprint.hashcache import FileHashes
from lawkit.footprint.lawverdict import EnvComparison, EnvUnit
from lawkit.footprint.units import NORMAL

EnvClause = Mapping[str, tuple[Any, Any]]
"""One accepted change of the environment: each name's (old, new) as the target showed it."""
ENVIRON, SETTING = "environ:", "setting:"
NOT_SHOWN = "not shown"
"""A setting's value where the target does not show it (accepted, it must stay unshown)."""
LOCK_SHOWS = ("{source} shows versions and sources only: the content of the distributions "
              "that ran, and the configuration (a lock file carries none), were not compared")
MANIFEST_SHOWS = ("{source} shows each file's sha256: a file that differs counts every unit "
                  "of it changed")


@dataclass(frozen=True)
class EnvSpec:
    """What a command compares environments with: a target (None: no distribution compared),
    an exact Python version (None: the target's, if any), and whether code from no
    distribution makes a verdict unknown (``--require untouched``)."""

    target: Target | None = None
    python: str | None = None
    strict: bool = False

    @property
    def source(self) -> str | None:
        """The target as reports name it; None when nothing is compared."""
        if self.target is not None:
            return self.target.source
        return None if self.python is None else f"python {self.python}"


def not_recorded_line(spec: EnvSpec, footprint: str) -> str | None:
    """The one line a report gives where a target is named but the footprint recorded no
    environment (recorded before footprints did); None when no target is named."""
    if spec.source is None:
        return None
    return printable(f"environment: not compared with {spec.source}: {footprint} was recorded "
                     "without its environment; record it again with lawkit footprint record")


def env_spec(ws: Workspace, option: str | None = None, *, strict: bool = False) -> EnvSpec:
    """The target of ``--env`` (``option``), else of the config's ``environment``, with the
    config's ``python``; a lock file is read relative to the workspace root. A malformed lock
    file is a `LockFileError` naming it."""
    from lawkit.footprint.lockfiles import read_target

    given = option or ws.environment
    return EnvSpec(read_target(given, ws.root, python=ws.python) if given else None, ws.python,
                   strict)


def env_clauses(host: Mapping[str, Any]) -> list[EnvClause]:
    """The ``env`` clauses of a law file's ``rekey`` entries after its newest fit, in order."""
    entries = host.get("provenance")
    out: list[EnvClause] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("fit"), dict):
            out = []
        rekey = entry.get("rekey")
        env = rekey.get("env") if isinstance(rekey, dict) else None
        if isinstance(env, dict):
            out.append({str(name): (pair[0], pair[1]) for name, pair in env.items()
                        if isinstance(pair, list) and len(pair) == 2})
    return out


@dataclass(frozen=True)
class Baseline:
    """What later targets are compared with: the footprint's environment and configuration
    with the accepted clauses applied. ``absent``: distributions accepted as absent (they must
    stay so); ``ambiguous``: accepted while the target allowed several versions (still
    counted)."""

    python: PythonBuild | str
    distributions: Mapping[str, DistRecord]
    absent: Mapping[str, DistRecord] = field(default_factory=dict)
    ambiguous: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    environ: Mapping[str, EnvRead] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)


def applied(record: EnvironmentRecord, clauses: Iterable[EnvClause],
            configuration: Configuration | None = None) -> Baseline:
    """The recorded environment and configuration with accepted changes applied."""
    python: PythonBuild | str = record.python
    dists = dict(record.distributions)
    absent: dict[str, DistRecord] = {}
    ambiguous: dict[str, tuple[str, ...]] = {}
    environ = dict(configuration.environ) if configuration is not None else {}
    settings = dict(configuration.settings) if configuration is not None else {}
    for clause in clauses:
        for name, (_old, new) in clause.items():
            if name.startswith(ENVIRON) and name[len(ENVIRON):] in environ:
                read = environ[name[len(ENVIRON):]]
                environ[name[len(ENVIRON):]] = dataclasses.replace(read, value=str(new))
            elif name.startswith(SETTING):
                settings[name[len(SETTING):]] = new
            elif name == STDLIB:
                python = _python_of(python, new)
            else:
                dist = dists.get(name) or absent.get(name)
                if dist is None:
                    continue
                dists.pop(name, None)
                absent.pop(name, None)
                ambiguous.pop(name, None)
                if new is None:
                    absent[name] = dist
                    continue
                if isinstance(new, dict) and isinstance(new.get("ambiguous"), list):
                    ambiguous[name] = tuple(str(v) for v in new["ambiguous"])
                dists[name] = _accepted(dist, new)
    return Baseline(python, dists, absent, ambiguous, environ, settings)


def _python_of(python: PythonBuild | str, new: Any) -> PythonBuild | str:
    """The Python accepted: a whole build (its fields), or a version (older clauses)."""
    if isinstance(new, dict):
        try:
            return PythonBuild.from_json(new)
        except ValueError:
            return python
    if isinstance(new, str):
        return dataclasses.replace(python, version=new) if isinstance(python, PythonBuild) \
            else new
    return python


def _accepted(dist: DistRecord, new: Any) -> DistRecord:
    """A distribution as accepted: an identity replaces its version, install, source and files
    (each file's sha256 and its units' code digests, where the target showed them; the
    recorded runs kept). A bare version (a lock file's acceptance, or an older clause) or an
    identity without files shows no content: each file that ran keeps its runs and loses its
    sha256 and codes, so a target that shows content counts what ran there changed until it
    is accepted against one. A file the accepted target lacked is kept as `GONE`: it must
    stay gone, and counts as changed where it is back."""
    if not isinstance(new, dict) or "ambiguous" in new:
        version = str(new) if not isinstance(new, dict) else dist.version
        return dataclasses.replace(dist, version=version, install="index", source=None,
                                   direct_url=None, files={rel: _unknown(f, "")
                                                           for rel, f in dist.files.items()})
    listed = new.get("files")
    shown: dict[str, Any] | None = listed if isinstance(listed, dict) else None
    files: dict[str, DistFile] = {}
    for rel, f in dist.files.items():
        got = shown.get(rel) if shown is not None else None
        if not isinstance(got, dict) or not isinstance(got.get("sha256"), str):
            files[rel] = _unknown(f, "" if shown is None else GONE)
            continue
        given = got.get("units")
        codes: dict[str, Any] = given if isinstance(given, dict) else {}
        units = {q: UnitRecord("", u.phases, u.regions, u.startup_regions, u.shutdown,
                               str(codes[q]) if q in codes else None,
                               NORMAL if q in codes else None, u.assumed)
                 for q, u in f.units.items()}
        units.update({q: UnitRecord("", code=str(c), normal=NORMAL)
                      for q, c in codes.items() if q not in units})
        files[rel] = dataclasses.replace(f, sha256=got["sha256"], units=units)
    return dataclasses.replace(
        dist, version=str(new.get("version", dist.version)),
        install=str(new.get("install") or "index"), source=new.get("source"),
        commit=new.get("commit"), direct_url=None, files=files)


def _unknown(f: DistFile, sha256: str) -> DistFile:
    """A file whose content is not known (``sha256`` empty) or that is gone (`GONE`): its runs
    kept, its units' digests and codes left out, so a target that shows it counts every unit
    that ran there changed."""
    return dataclasses.replace(f, sha256=sha256, units={
        q: dataclasses.replace(u, digest="", code=None, normal=None) for q, u in f.units.items()})


def compare_env(record: EnvironmentRecord | None, spec: EnvSpec | None,
                clauses: Iterable[EnvClause] = (), *,
                configuration: Configuration | None = None,
                file_schema: int = 3) -> EnvComparison | None:
    """A footprint's environment and configuration (after ``clauses``) compared with ``spec``:
    None when the footprint has no environment; not compared (``source`` None) when ``spec``
    names nothing. A distribution that did not run is ignored."""
    if record is None:
        return None
    if spec is None or spec.source is None:
        return EnvComparison(None, unpackaged=record.unpackaged)
    base = applied(record, clauses, configuration)
    units: list[EnvUnit] = []
    target = spec.target
    python_change = _python_change(base.python, spec, target)
    if python_change is not None:
        units.append(EnvUnit(python_change))
    notes: list[str] = []
    if file_schema < 3:
        notes.append(f"environment: {RECORD_AGAIN}")
    if target is not None:
        hashes = FileHashes() if target.shows == "units" else None
        for name, dist in sorted(base.distributions.items()):
            if dist.phases and name != STDLIB:
                units += _dist_units(name, dist, target.distributions.get(name), target,
                                     base.ambiguous.get(name), hashes)
        if hashes is not None:
            hashes.save()
        for name, dist in sorted(base.absent.items()):
            pin = target.distributions.get(name)
            if pin is not None and dist.phases:
                shown = pin.only() or " or ".join(pin.versions) or "listed"
                change = EnvChange(name, "stays absent", dist.version, shown,
                                   accepted=_identity(pin, dist, target))
                counted = dist_extent(dist).unit(change)
                units += [counted] if counted is not None else []
        if target.shows == "versions":
            if spec.python is None and target.python is None:
                notes.append(printable(f"environment: {target.source} names no Python: it was "
                                       "not compared (set python = \"X.Y.Z\" in the config)"))
            notes.append(printable("environment: " + LOCK_SHOWS.format(source=target.source)))
        else:
            if target.shows == "files":
                notes.append(printable("environment: " +
                                       MANIFEST_SHOWS.format(source=target.source)))
            units += _configuration_units(base, target)
            hidden = sorted(n for n, r in base.environ.items() if r.value == "hidden")
            if hidden:
                notes.append(printable(f"environment: {', '.join(hidden)} kept no value (a "
                                       "secret's name): not compared; list it under "
                                       "[footprint] environ to compare it"))
    return EnvComparison(spec.source, tuple(units), record.unpackaged, spec.strict,
                         tuple(notes))


def _python_change(python: PythonBuild | str, spec: EnvSpec,
                   target: Target | None) -> EnvChange | None:
    """The Python's difference, with what accepting it records (the whole build, or the
    exact version given)."""
    given = spec.python if spec.python is not None else \
        (target.python if target is not None else None)
    if not isinstance(python, PythonBuild):  # accepted as a version only: compare that
        python = PythonBuild(python, "")
        given = given.version if isinstance(given, PythonBuild) else given
    change = compare_python(python, given)
    if change is None:
        return None
    accepted = given.to_json() if isinstance(given, PythonBuild) else given
    return dataclasses.replace(change, accepted=accepted)


def _dist_units(name: str, dist: DistRecord, pin: Pin | None, target: Target,
                ambiguous: tuple[str, ...] | None, hashes: FileHashes | None) -> list[EnvUnit]:
    """What counts of one distribution that ran: by version and source where the target
    shows no content or the footprint kept none, else by content."""
    if ambiguous is not None:  # accepted while ambiguous: every later target is asked again,
        # and accepting one records what it shows (a lock that pins a version ends it)
        change = EnvChange(name, "ambiguous", dist.version, None, ambiguous,
                           accepted=_identity(pin, dist, target))
        counted = dist_extent(dist).unit(change)
        return [counted] if counted is not None else []
    if pin is None or target.shows == "versions" or not dist.files:
        differs = compare_dist(dist.info(name), pin)
        if differs is None:
            return []
        change = dataclasses.replace(differs, accepted=_identity(pin, dist, target))
        counted = dist_extent(dist).unit(change)
        return [counted] if counted is not None else []
    found = content_units(name, dist, pin, hashes)
    if not found:
        return []
    accepted = _identity(pin, dist, target)
    return [dataclasses.replace(u, change=dataclasses.replace(u.change, accepted=accepted))
            for u in found]


def _identity(pin: Pin | None, dist: DistRecord, target: Target) -> Any:
    """What accepting a distribution records of the target: None (absent), its ambiguity, or
    its version, install, source and, where the target shows content, its files."""
    if pin is None:
        return None
    if pin.only() is None:
        return {"ambiguous": list(pin.versions)}
    installed = pin.installed
    if target.shows == "versions" and pin.source == "index":
        return pin.only()  # a version from an index: the version says it all
    identity: dict[str, Any] = {
        "version": pin.only(), "install": installed.install if installed else pin.source,
        "source": installed.source if installed else None,
        "commit": installed.commit if installed else None}
    if target.shows != "versions":
        identity["files"] = shown_files(dist, pin, by_unit=target.shows == "units")
    return identity


def _configuration_units(base: Baseline, target: Target) -> list[EnvUnit]:
    """The variables read whose value differs in the target (where they were read) and the
    settings that differ or that the target does not show (`NOT_SHOWN`: a manifest written
    before lawkit recorded that setting), steps for every law; a hidden value is not
    compared."""
    out: list[EnvUnit] = []
    environ = target.environ or {}
    for name, read in sorted(base.environ.items()):
        if read.value == "hidden" or not read.phases:
            continue
        now = environ.get(name, "absent")
        if now == read.value:
            continue
        said = ("is now set" if read.value == "absent" else
                "is now unset" if now == "absent" else "has another value")
        change = EnvChange(name, "environ", read.value, said, accepted=now)
        out.append(EnvUnit(change, read.phases, read.regions or (("*",) if "steps" in
                                                                  read.phases else ()),
                           read.startup_regions))
    settings = target.settings or {}
    for name, value in sorted(base.settings.items()):
        now = settings.get(name, NOT_SHOWN)
        if now != value:
            out.append(EnvUnit(EnvChange(name, "setting", _shown(value), _shown(now),
                                         accepted=now)))
    return out


def _shown(value: Any) -> str:
    return str(value) if not isinstance(value, dict) else \
        ", ".join(f"{k}={v}" for k, v in sorted(value.items()))


def clause_of(comparison: EnvComparison) -> dict[str, list[Any]]:
    """The ``env`` clause that accepts a comparison's differences as the new baseline: for
    each, what the target showed (`EnvChange.accepted`)."""
    out: dict[str, list[Any]] = {}
    for unit in comparison.changes:
        change = unit.change
        if change.kind == "environ":
            out.setdefault(f"{ENVIRON}{change.name}", [change.old, change.accepted])
        elif change.kind == "setting":
            out.setdefault(f"{SETTING}{change.name}", [change.old, change.accepted])
        elif change.kind == "python":
            out.setdefault(STDLIB, [_version(change.old), change.accepted])
        else:
            out.setdefault(change.name, [change.old, change.accepted])
    return out


def accepted_label(new: Any) -> str:
    """What a clause accepted, as a report line says it: ``2.12.0``, ``absent``, ``0.1
    (editable, 2 files)``, ``ambiguous (24.2.0 or 24.3.0)``."""
    if new is None:
        return "absent"
    if not isinstance(new, dict):
        return str(new)
    if "ambiguous" in new:
        return f"ambiguous ({' or '.join(map(str, new['ambiguous'])) or 'no exact version'})"
    if "implementation" in new:
        return f"{new.get('implementation')} {new.get('version')}{new.get('abiflags', '')}"
    files = new.get("files")
    counted = f", {len(files)} file{'' if len(files) == 1 else 's'}" \
        if isinstance(files, dict) else ""
    return f"{new.get('version')} ({new.get('install')}{counted})"


def _version(described: str) -> str:
    """The version in ``3.12.3`` or ``cpython 3.12.3`` (a build, described)."""
    words = described.split()
    return words[1] if len(words) > 1 else described
