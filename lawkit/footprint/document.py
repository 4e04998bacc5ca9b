"""The footprint file: reading, validating and writing it (docs/footprint-file.md).

JSON with sorted keys, gzip-compressed when the file name ends in ``.gz``. Its shape is
`filemodel.FootprintDoc` (pydantic validates it; ``lawkit schema footprint`` prints it); this
module turns a validated document into the frozen records the verdicts read, and back.

Every unit of every hashed file is listed, with the phases in which it ran (empty when it did
not run), the regions of the steps it ran in (``"*"``: in steps with no region open) and the
regions it ran in at start-up (``startup_regions``). The top-level ``regions`` are those seen
in steps. A unit that ran only after the steps ended has no phase and ``"shutdown": true``: it
counts as not run.

Older files: a unit without ``startup_regions`` had none open at start-up (``["*"]`` when it
ran then). A schema-1 file's unit digests are schema 1's (``units.units_of(..., schema=1)``).
A schema-2 file's distributions carry ``direct_url`` instead of ``install``, ``source`` and
``files``: they are judged by version and install kind alone, and reports say to record again.
A footprint without ``environment`` has ``Footprint.environment`` None; without
``configuration`` (before schema 3), ``Footprint.configuration`` None; without
``unregioned_threads``, ``Footprint.unregioned_threads`` None (verdicts name no thread).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import secrets
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from lawkit.footprint import ANY_REGION as ANY_REGION  # the home of the constant
from lawkit.footprint.environment import DistInfo, PythonBuild
from lawkit.footprint.errors import FootprintError
from lawkit.footprint.filemodel import (
    FOOTPRINT,
    ConfigurationDoc,
    DistDoc,
    EnvironmentDoc,
    FootprintDoc,
    RanDoc,
    UnitDoc,
    explain,
)
from lawkit.fsio import ReadRefused, read_regular_file

SCHEMA = "lawkit-footprint/3"
SCHEMAS = {"lawkit-footprint/1": 1, "lawkit-footprint/2": 2, "lawkit-footprint/3": 3}
"""The schemas read, by their number."""
PHASES = ("startup", "steps")
"""The phases a unit's runs count in, in the order a footprint lists them (a run in shutdown
counts in none: ``UnitRecord.shutdown``)."""
RECORD_AGAIN = ("recorded before lawkit-footprint/3: record it again to judge dependencies by "
                "content and compare the configuration")
"""The line a report gives for a schema-2 footprint's environment."""


@dataclass(frozen=True)
class UnitRecord:
    """One unit as recorded: its digest, the phases and the regions in which it ran."""

    digest: str
    phases: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    """The regions it ran in, in steps (``"*"``: no region open)."""
    startup_regions: tuple[str, ...] = ()
    """The regions it ran in at start-up (``"*"``: no region open)."""
    shutdown: bool = False
    """It ran in a shutdown, and in no phase that counts."""
    code: str | None = None
    """The sha256 of the unit's code in lawkit's normal form (``units.codes_of``); None when
    not recorded (an older footprint, a file that is not valid Python)."""
    normal: int | None = None
    """The version of that normal form (``units.NORMAL`` when lawkit wrote it)."""
    assumed: str = ""
    """Why its phases and regions were assumed, not seen: ``"compiled"`` (a function under a
    source-compiling decorator, a JIT, whose own code never ran as Python) or ``"unseen"`` (a
    hashed file that is not Python, never seen opened): it counts as run in steps with no region
    open, ``"*"``. Empty: seen."""


@dataclass(frozen=True)
class FileRecord:
    """One hashed file as recorded: its content's sha256 and its units by qualified name."""

    sha256: str
    units: Mapping[str, UnitRecord]


@dataclass(frozen=True)
class DistFile:
    """One file of a distribution that ran (schema 3): its sha256 when recorded, whether it is
    native (an extension module or shared object: no units), where it ran, and its units as a
    hashed engine file's."""

    sha256: str
    native: bool = False
    phases: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    startup_regions: tuple[str, ...] = ()
    units: Mapping[str, UnitRecord] = field(default_factory=dict)


@dataclass(frozen=True)
class DistRecord:
    """One distribution as recorded in a footprint's ``environment``: what was installed
    (version, the sha256 of its RECORD, how and where from) and where its code ran, as for a
    unit (``phases``, ``regions`` in steps, ``startup_regions``; ``"*"``: no region open), and,
    from schema 3, each of its files that ran (``files``, by path relative to its folder on
    sys.path)."""

    version: str
    record: str = ""
    direct_url: Mapping[str, Any] | None = None
    """Schema 2's PEP 610 URL (None: from an index); ``install`` and ``source`` say it from 3."""
    phases: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    startup_regions: tuple[str, ...] = ()
    install: str = ""
    """How it was installed (`environment.INSTALL_KINDS`); empty: read from ``direct_url``."""
    source: str | None = None
    commit: str | None = None
    files: Mapping[str, DistFile] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """How it was installed: ``install``, or what a schema-2 ``direct_url`` says (an
        editable install, or ``archive`` for any other direct URL)."""
        if self.install:
            return self.install
        if self.direct_url is None:
            return "index"
        return "editable" if self.direct_url.get("editable") else "archive"

    def info(self, name: str) -> DistInfo:
        """The installed distribution this records, as ``environment`` describes one."""
        source = self.source
        if source is None and self.direct_url is not None:
            source = str(self.direct_url.get("url") or "") or None
        return DistInfo(name, self.version, self.record, self.kind, source, self.commit)

    def to_json(self) -> dict[str, Any]:
        """The footprint's ``environment.distributions.<name>`` object (schema 3)."""
        return {"version": self.version, "install": self.kind, "source": self.info("").source,
                "commit": self.commit, "record": self.record or None,
                **_ran_json(self),
                "files": {path: _dist_file_json(f) for path, f in sorted(self.files.items())}}


@dataclass(frozen=True)
class EnvironmentRecord:
    """A footprint's ``environment``: the Python build, each distribution whose code ran or
    whose native library was loaded (by canonical name; neither ``python``, the standard
    library, nor lawkit), and the real paths of code that ran from no distribution, from no
    hashed file and from outside the workspace (``unpackaged``: the workspace's own code, such
    as a capture harness, is versioned by its repository). ``everywhere``: each distribution
    was counted as run in every phase and region in which the process ran, not seen per region
    (a 3.11 recording). ``before_recorder``: modules imported before the recorder started (a
    ``.pth`` file's, the site hook's), counted as run in every phase and region."""

    python: PythonBuild
    distributions: Mapping[str, DistRecord]
    unpackaged: tuple[str, ...] = ()
    everywhere: bool = False
    before_recorder: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The footprint's ``environment`` object."""
        doc: dict[str, Any] = {
            "python": self.python.to_json(),
            "distributions": {n: d.to_json() for n, d in sorted(self.distributions.items())},
            "unpackaged": list(self.unpackaged)}
        if self.everywhere:
            doc["everywhere"] = True
        if self.before_recorder:
            doc["before_recorder"] = list(self.before_recorder)
        return doc


@dataclass(frozen=True)
class EnvRead:
    """An environment variable Python code read: the sha256 of the value read, ``absent`` or
    ``hidden`` (a secret's name), and the phases and regions of its reads."""

    value: str
    phases: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    startup_regions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Configuration:
    """A footprint's ``configuration`` (schema 3): the environment variables read, by name,
    and the process settings at ``cap.steps()`` (``gc_threshold``, ``gc_enabled``,
    ``switch_interval``, ``flags``, ``hash_seed``, ``cpus``)."""

    environ: Mapping[str, EnvRead] = field(default_factory=dict)
    settings: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The footprint's ``configuration`` object."""
        return {"environ": {name: {"value": r.value, **_ran_json(r)}
                            for name, r in sorted(self.environ.items())},
                "settings": dict(self.settings)}


@dataclass(frozen=True)
class Footprint:
    """Which units of which engine files ran while a command ran, and in which phases."""

    key: str
    digest: str
    command: tuple[str, ...]
    processes: int
    files: Mapping[str, FileRecord]
    recorder: str = "sys.monitoring"
    python: str = ""
    regions: tuple[str, ...] = ()
    """The regions seen in the recording, sorted (``"*"`` included when it occurred)."""
    unhashed: tuple[str, ...] = ()
    """Native extension modules loaded from inside a hashed package's folder, by relpath."""
    unregioned_threads: tuple[str, ...] | None = None
    """The names of the threads that ran hashed code in steps with no region open (or were
    live there while one did), sorted, over every process; None in a footprint written before
    they were recorded. The footprint's, not each unit's."""
    schema: int = 2
    """The schema its unit digests were cut by (``units.units_of(..., schema=)``): 1 or 2."""
    environment: EnvironmentRecord | None = None
    """The recorded environment; None in a footprint written before it was recorded."""
    configuration: Configuration | None = None
    """The configuration read; None in a footprint written before schema 3."""
    file_schema: int = 3
    """The file's own schema (``lawkit-footprint/N``): a schema-2 file's distributions are
    judged by version and install kind alone."""

    def to_json(self) -> dict[str, Any]:
        """The footprint as the JSON document of the file (schema 3; an older footprint is
        only read, never written)."""
        doc = {
            "schema": SCHEMA,
            "key": self.key,
            "digest": self.digest,
            "command": list(self.command),
            "processes": self.processes,
            "recorder": self.recorder,
            "python": self.python,
            "regions": list(self.regions),
            "unhashed": list(self.unhashed),
            **({"unregioned_threads": list(self.unregioned_threads)}
               if self.unregioned_threads is not None else {}),
            "files": {
                path: {"sha256": f.sha256,
                       "units": {name: _unit_json(u) for name, u in f.units.items()}}
                for path, f in self.files.items()
            },
        }
        if self.environment is not None:
            doc["environment"] = self.environment.to_json()
        if self.configuration is not None:
            doc["configuration"] = self.configuration.to_json()
        return doc

    def ran_units(self) -> int:
        """How many units ran in any phase."""
        return sum(1 for f in self.files.values() for u in f.units.values() if u.phases)


def _dist_file_json(f: DistFile) -> dict[str, Any]:
    return {"sha256": f.sha256, "native": f.native, **_ran_json(f),
            "units": {name: _unit_json(u) for name, u in f.units.items()}}


def _unit_json(u: UnitRecord) -> dict[str, Any]:
    doc: dict[str, Any] = {"digest": u.digest, **_ran_json(u)}
    if u.shutdown:
        doc["shutdown"] = True
    if u.code is not None and u.normal is not None:
        doc["code"], doc["normal"] = u.code, u.normal
    if u.assumed:
        doc["assumed"] = u.assumed
    return doc


def _ran_json(ran: UnitRecord | DistFile | DistRecord | EnvRead) -> dict[str, list[str]]:
    """Where a record ran, as its object in the file says it."""
    return {"phases": list(ran.phases), "regions": list(ran.regions),
            "startup_regions": list(ran.startup_regions)}


def sort_phases(phases: set[str] | frozenset[str]) -> tuple[str, ...]:
    """Phases in the footprint's order."""
    return tuple(p for p in PHASES if p in phases)


def encode_footprint(footprint: Footprint, *, compress: bool = False) -> bytes:
    """The bytes of a footprint file (gzip with a zero mtime when asked, so runs compare)."""
    text = json.dumps(footprint.to_json(), sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    data = text.encode("utf-8")
    return gzip.compress(data, mtime=0) if compress else data


def write_footprint(footprint: Footprint, path: Path) -> str:
    """Write a footprint file atomically (gzip if its name ends in .gz); its sha256 in hex."""
    data = encode_footprint(footprint, compress=path.name.endswith(".gz"))
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise FootprintError(f"cannot write the footprint: {exc.strerror}",
                             path=str(path)) from None
    return hashlib.sha256(data).hexdigest()


MAX_FILE_BYTES = 64 * 2**20
"""The largest footprint file read (a recorded footprint of a large engine is a few MiB)."""
MAX_JSON_BYTES = 512 * 2**20
"""The largest decompressed footprint read."""
_CHUNK = 2**20


def read_footprint(path: Path, *, shown: str | None = None,
                   root: Path | None = None) -> Footprint:
    """Read and validate a footprint file (gzip or plain JSON), bounded as
    ``read_footprint_bytes`` says."""
    where = shown or str(path)
    return decode_footprint(read_footprint_bytes(path, shown=where, root=root), shown=where)


def read_footprint_bytes(path: Path, *, shown: str, root: Path | None = None) -> bytes:
    """A footprint file's bytes, refused (``FootprintError``) unless it is a regular file of
    at most ``MAX_FILE_BYTES``.

    Opened without blocking, so a FIFO is refused rather than waited on; a device
    (``/dev/zero``) is refused before a byte is read. With ``root`` (the workspace), a path
    inside it that a symlink leads outside it is refused.
    """
    if root is not None and inside(os.path.abspath(path), os.path.abspath(root)):
        real = os.path.realpath(path)
        if not inside(real, os.path.realpath(root)):
            raise FootprintError(f"a symlink to {real}, outside the workspace: pass the "
                                 "footprint file itself", path=shown)
    try:
        return read_regular_file(path, MAX_FILE_BYTES)
    except ReadRefused as exc:
        if exc.problem == "size":
            raise FootprintError(_too_big("on disk", MAX_FILE_BYTES), path=shown) from None
        raise FootprintError(exc.reason("the footprint", "a footprint is a file written by "
                                        "`lawkit footprint record`", ""), path=shown) from None


def decode_footprint(raw: bytes, *, shown: str) -> Footprint:
    """A footprint from a file's bytes (gzip or plain JSON), refused beyond
    ``MAX_FILE_BYTES`` as stored or ``MAX_JSON_BYTES`` decompressed."""
    if len(raw) > MAX_FILE_BYTES:
        raise FootprintError(_too_big("on disk", MAX_FILE_BYTES), path=shown)
    try:
        if raw[:2] == b"\x1f\x8b":
            _check_decompressed_size(raw, shown)
            raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as exc:
        raise FootprintError(f"not a footprint file (JSON, or gzip of JSON): {exc}",
                             path=shown) from None
    try:  # pydantic parses the JSON itself: one pass, no Python objects in between
        doc = FOOTPRINT.validate_json(raw)
    except ValidationError as exc:
        raise _explained(raw, exc, shown) from None
    return _footprint(doc, shown)


def _explained(raw: bytes, exc: ValidationError, shown: str) -> FootprintError:
    """Why a file is not a footprint: not JSON, another schema, or its first bad key."""
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError) as err:
        return FootprintError(f"not a footprint file (JSON, or gzip of JSON): {err}",
                              path=shown)
    if not isinstance(doc, dict) or str(doc.get("schema")) not in SCHEMAS:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        return FootprintError(f"schema: expected one of {sorted(SCHEMAS)}, got {got!r}: "
                              "record it again with `lawkit footprint record`", path=shown)
    return FootprintError(explain(exc), path=shown)


def _check_decompressed_size(raw: bytes, shown: str) -> None:
    """Refuse a gzip whose content exceeds ``MAX_JSON_BYTES``, counted one bounded chunk at a
    time and dropped, so a gzip bomb costs one chunk of memory, not its content."""
    size = 0
    with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
        while chunk := stream.read(_CHUNK):
            size += len(chunk)
            if size > MAX_JSON_BYTES:
                raise FootprintError(_too_big("decompressed", MAX_JSON_BYTES), path=shown)


def _too_big(how: str, limit: int) -> str:
    return (f"more than {limit // 2**20} MiB {how}: not a footprint `lawkit footprint record` "
            "wrote; record it again")


def inside(path: str, root: str) -> bool:
    """Whether an absolute, normalised path is ``root`` or lies under it."""
    return path == root or path.startswith(os.path.join(root, ""))


def _footprint(doc: FootprintDoc, where: str) -> Footprint:
    schema = SCHEMAS[doc["schema"]]
    for key in ("recorder", "python") if schema >= 2 else ():
        if key not in doc:
            raise FootprintError(f"{key}: missing: record the footprint again with lawkit "
                                 "footprint record", path=where)
    files = {path: FileRecord(f["sha256"], LazyUnits(f["units"], schema))
             for path, f in doc["files"].items()}
    head = (doc["key"], doc["digest"], tuple(doc["command"]), doc["processes"], files)
    if schema == 1:
        return Footprint(*head, recorder="coverage", schema=1, file_schema=1)
    environment, configuration = doc.get("environment"), doc.get("configuration")
    return Footprint(*head, recorder=doc.get("recorder", ""), python=doc.get("python", ""),
                     regions=_sorted(doc.get("regions", ())),
                     unhashed=_sorted(doc.get("unhashed", ())), schema=2, file_schema=schema,
                     unregioned_threads=(None if "unregioned_threads" not in doc
                                         else _sorted(doc["unregioned_threads"])),
                     environment=None if environment is None else _environment(environment),
                     configuration=(None if configuration is None or schema < 3
                                    else _configuration(configuration)))


class LazyUnits(Mapping[str, UnitRecord]):
    """A recorded file's units by qualified name, validated with the file and turned into
    records on first use. A footprint of a large engine lists about a hundred thousand units,
    most of them in files whose bytes did not change, which no verdict reads: building their
    records was most of the time ``footprint diff`` took (bench/footprint_env_diff.py)."""

    __slots__ = ("_docs", "_records", "_schema")

    def __init__(self, docs: Mapping[str, UnitDoc], schema: int) -> None:
        self._docs = docs
        self._schema = schema
        self._records: dict[str, UnitRecord] | None = None

    def _built(self) -> dict[str, UnitRecord]:
        if self._records is None:
            self._records = _units(self._docs, self._schema)
        return self._records

    def __getitem__(self, name: str) -> UnitRecord:
        return self._built()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._docs)

    def __len__(self) -> int:
        return len(self._docs)

    def __contains__(self, name: object) -> bool:
        return name in self._docs

    def __repr__(self) -> str:
        return f"LazyUnits({self._built()!r})"

    def normal_forms(self) -> set[int]:
        """The normal-form versions its code digests were cut by, read without building a
        record."""
        return {n for u in self._docs.values()
                if (n := u.get("normal")) is not None and u.get("code") is not None}


def normal_forms(units: Mapping[str, UnitRecord]) -> set[int]:
    """The normal-form versions a file's unit code digests were cut by."""
    if isinstance(units, LazyUnits):
        return units.normal_forms()
    return {u.normal for u in units.values() if u.normal is not None}


_Runs = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
"""A unit's phases, regions in steps and regions at start-up."""


def _units(units: Mapping[str, UnitDoc], schema: int) -> dict[str, UnitRecord]:
    out: dict[str, UnitRecord] = {}
    runs: dict[tuple[Any, ...], _Runs] = {}  # most units share one of a few
    for name, u in units.items():
        startup_regions = u.get("startup_regions")
        key = (tuple(u["phases"]), tuple(u.get("regions", ())) if schema >= 2 else (),
               None if startup_regions is None else tuple(startup_regions))
        if (ran := runs.get(key)) is None:
            phases = sort_phases(set(key[0]))
            if key[2] is not None:
                startup = _sorted(key[2])
            else:  # recorded before start-up runs had regions: each had none open
                startup = (ANY_REGION,) if "startup" in phases else ()
            ran = runs[key] = (phases, _sorted(key[1]), startup)
        code, normal = u.get("code"), u.get("normal")
        if code is None or normal is None:
            code, normal = None, None
        out[name] = UnitRecord(u["digest"], ran[0], ran[1], ran[2], u.get("shutdown", False),
                               code, normal, assumed=u.get("assumed", ""))
    return out


def _environment(env: EnvironmentDoc) -> EnvironmentRecord:
    py = env["python"]
    python = PythonBuild(py["version"], py["implementation"], py["abiflags"],
                         py["gil_disabled"])
    return EnvironmentRecord(python, {name: _distribution(d)
                                      for name, d in env["distributions"].items()},
                             _sorted(env.get("unpackaged", ())), env.get("everywhere", False),
                             tuple(env.get("before_recorder", ())))


def _distribution(d: DistDoc) -> DistRecord:
    url = d.get("direct_url")
    direct = None if url is None else {"url": url["url"], "editable": url.get("editable", False)}
    files = {path: DistFile(f["sha256"], f.get("native", False), *_ran(f),
                            LazyUnits(f.get("units", {}), 3))
             for path, f in d.get("files", {}).items()}
    return DistRecord(d["version"], d.get("record") or "", direct, *_ran(d),
                      d.get("install") or "", d.get("source"), d.get("commit"), files)


def _configuration(config: ConfigurationDoc) -> Configuration:
    environ = {name: EnvRead(r["value"], *_ran(r))
               for name, r in config.get("environ", {}).items()}
    settings = {k: v for k, v in config.get("settings", {}).items() if v is not None}
    return Configuration(environ, settings)


def _ran(doc: RanDoc) -> _Runs:
    """Where a distribution, one of its files or an environment variable's reads ran (each
    key may be absent)."""
    return (sort_phases(set(doc.get("phases", ()))), _sorted(doc.get("regions", ())),
            _sorted(doc.get("startup_regions") or ()))


def _sorted(values: Any) -> tuple[str, ...]:
    return tuple(sorted(set(values)))
