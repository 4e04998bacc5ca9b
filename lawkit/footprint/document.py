"""The footprint file: reading, validating and writing it.

    {"schema": "lawkit-footprint/2", "key": "atom", "digest": "<engine digest>",
     "command": [...], "processes": N, "recorder": "sys.monitoring"|"coverage",
     "python": "3.12.1", "regions": ["*", "sample_s", ...], "unhashed": [relpath...],
     "files": {"<relpath>": {"sha256": "...",
                             "units": {"<qualname>": {"digest": "...", "phases": [...],
                                                      "regions": [...],
                                                      "startup_regions": [...],
                                                      "code": "...", "normal": 1}}}},
     "environment": {"python": {"version": "3.12.3", "implementation": "cpython",
                                "abiflags": "", "gil_disabled": false},
                     "distributions": {"<canonical name>": {"version": "...",
                                                            "record": "<sha256 of RECORD>",
                                                            "direct_url": null | {...},
                                                            "phases": [...], "regions": [...],
                                                            "startup_regions": [...]}},
                     "unpackaged": [path...], "everywhere": true (3.11 only)}}

JSON with sorted keys, gzip-compressed when the file name ends in ``.gz``. Every unit of every
hashed file is listed, with the phases in which it ran (empty when it did not run), the regions
of the steps it ran in (``"*"``: in steps with no region open) and the regions it ran in at
start-up (``startup_regions``: a warm-up through the step code; ``"*"`` with no region open).
The top-level ``regions`` are those seen in steps.

Shutdown: ``phases`` holds only the phases a run counts in, ``startup`` and ``steps``. A unit
that ran after the steps ended (``phase("shutdown")``, or the last capture closed) and nowhere
else has no phase, and ``"shutdown": true``: it counts as not run. A shutdown the process left
for ``steps`` again was recorded as steps with no region open (``"*"``), so it is not marked.
A reader that does not know ``shutdown`` reads such a unit as not run, which is what it is.

A footprint without ``startup_regions`` (written before they were recorded) is read as every
start-up run having had no region open: ``startup_regions`` is ``["*"]`` for a unit that ran at
start-up. A unit whose runs were assumed, not seen, says why in ``"assumed"``
(``"compiled"``, ``"unseen"``): it is listed as run in steps with no region open. A schema-1
file (no
``recorder``, ``python``, ``regions``, ``unhashed``; units without ``regions``) is still read:
its ``schema`` is 1, and its unit digests are schema 1's (``units.units_of(..., schema=1)``).
A footprint without ``environment`` (recorded before it was) has ``Footprint.environment`` None.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import secrets
import stat
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lawkit.footprint import ANY_REGION as ANY_REGION  # the home of the constant
from lawkit.footprint.environment import DistInfo, Environment, PythonBuild
from lawkit.footprint.errors import FootprintError

SCHEMA = "lawkit-footprint/2"
SCHEMAS = {"lawkit-footprint/1": 1, "lawkit-footprint/2": 2}
"""The schemas read, by their number."""
PHASES = ("startup", "steps")
"""The phases a unit's runs count in, in the order a footprint lists them (a run in shutdown
counts in none: ``UnitRecord.shutdown``)."""


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
class DistRecord:
    """One distribution as recorded in a footprint's ``environment``: what was installed
    (version, the sha256 of its RECORD, its PEP 610 direct URL) and where its code ran, as for
    a unit (``phases``, ``regions`` in steps, ``startup_regions``; ``"*"``: no region open)."""

    version: str
    record: str = ""
    direct_url: Mapping[str, Any] | None = None
    """None: installed from an index; else ``{"url": ..., "editable": ...}``."""
    phases: tuple[str, ...] = ()
    regions: tuple[str, ...] = ()
    startup_regions: tuple[str, ...] = ()

    def info(self, name: str) -> DistInfo:
        """The installed distribution this records, as ``environment`` describes one."""
        url = self.direct_url.get("url") if self.direct_url is not None else None
        editable = bool(self.direct_url.get("editable")) if self.direct_url is not None else False
        return DistInfo(name, self.version, self.record,
                        None if self.direct_url is None else str(url or ""), editable)

    def to_json(self) -> dict[str, Any]:
        """The footprint's ``environment.distributions.<name>`` object."""
        return {"version": self.version, "record": self.record,
                "direct_url": None if self.direct_url is None else dict(self.direct_url),
                "phases": list(self.phases), "regions": list(self.regions),
                "startup_regions": list(self.startup_regions)}


@dataclass(frozen=True)
class EnvironmentRecord:
    """A footprint's ``environment``: the Python build, each distribution whose code ran or
    whose native library was loaded (by canonical name; neither ``python``, the standard
    library, nor lawkit), and the real paths of code that ran from no distribution, from no
    hashed file and from outside the workspace (``unpackaged``: the workspace's own code, such
    as a capture harness, is versioned by its repository). ``everywhere``: each distribution
    was counted as run in every phase and region in which the process ran, not seen per region
    (a 3.11 recording)."""

    python: PythonBuild
    distributions: Mapping[str, DistRecord]
    unpackaged: tuple[str, ...] = ()
    everywhere: bool = False

    def environment(self) -> Environment:
        """The recorded environment as ``envdiff.compare`` takes it."""
        return Environment(self.python, {n: d.info(n) for n, d in self.distributions.items()})

    def to_json(self) -> dict[str, Any]:
        """The footprint's ``environment`` object."""
        doc: dict[str, Any] = {
            "python": self.python.to_json(),
            "distributions": {n: d.to_json() for n, d in sorted(self.distributions.items())},
            "unpackaged": list(self.unpackaged)}
        if self.everywhere:
            doc["everywhere"] = True
        return doc

    @classmethod
    def from_json(cls, doc: Any, where: str) -> EnvironmentRecord:
        """The record from a footprint's ``environment`` object; ``FootprintError`` naming the
        key when it is malformed."""
        if not isinstance(doc, dict):
            raise FootprintError("environment: expected an object", path=where)
        try:
            python = PythonBuild.from_json(doc.get("python"))
        except ValueError as exc:
            raise FootprintError(f"environment.{exc}", path=where) from None
        dists = _typed(doc, "distributions", dict, where, "environment")
        parsed: dict[str, DistRecord] = {}
        for name, entry in dists.items():
            at = f"environment.distributions.{name}"
            if not isinstance(entry, dict):
                raise FootprintError(f"{at}: expected an object", path=where)
            url = entry.get("direct_url")
            if url is not None and not (isinstance(url, dict)
                                        and isinstance(url.get("url"), str)
                                        and isinstance(url.get("editable", False), bool)):
                raise FootprintError(f"{at}.direct_url: expected null or an object with a "
                                     f"string url, got {url!r}", path=where)
            phases = _strings(entry, "phases", where, at)
            if not all(p in PHASES for p in phases):
                raise FootprintError(f"{at}.phases: expected some of {list(PHASES)}, got "
                                     f"{phases!r}", path=where)
            parsed[name] = DistRecord(
                _typed(entry, "version", str, where, at), _typed(entry, "record", str, where, at),
                url, sort_phases(set(phases)),
                tuple(sorted(set(_strings(entry, "regions", where, at)))),
                tuple(sorted(set(_strings(entry, "startup_regions", where, at)))))
        everywhere = doc.get("everywhere", False)
        if not isinstance(everywhere, bool):
            raise FootprintError(f"environment.everywhere: expected true or false, got "
                                 f"{everywhere!r}", path=where)
        return cls(python, parsed,
                   tuple(sorted(set(_strings(doc, "unpackaged", where, "environment",
                                             optional=True)))), everywhere)


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
    schema: int = 2
    environment: EnvironmentRecord | None = None
    """The recorded environment; None in a footprint written before it was recorded."""

    def to_json(self) -> dict[str, Any]:
        """The footprint as the JSON document of the file (schema 2; a schema-1 footprint is
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
            "files": {
                path: {"sha256": f.sha256,
                       "units": {name: _unit_json(u) for name, u in f.units.items()}}
                for path, f in self.files.items()
            },
        }
        if self.environment is not None:
            doc["environment"] = self.environment.to_json()
        return doc

    def ran_units(self) -> int:
        """How many units ran in any phase."""
        return sum(1 for f in self.files.values() for u in f.units.values() if u.phases)


def _unit_json(u: UnitRecord) -> dict[str, Any]:
    doc: dict[str, Any] = {"digest": u.digest, "phases": list(u.phases),
                           "regions": list(u.regions),
                           "startup_regions": list(u.startup_regions)}
    if u.shutdown:
        doc["shutdown"] = True
    if u.code is not None and u.normal is not None:
        doc["code"], doc["normal"] = u.code, u.normal
    if u.assumed:
        doc["assumed"] = u.assumed
    return doc


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
    flags = os.O_RDONLY | getattr(os, "O_BINARY", 0)  # O_BINARY: Windows, which has no FIFOs
    for posix_only in ("O_NONBLOCK", "O_NOCTTY", "O_CLOEXEC"):
        flags |= getattr(os, posix_only, 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise FootprintError(f"cannot read the footprint: {exc.strerror}", path=shown) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise FootprintError(f"not a regular file ({_kind(mode)}): a footprint is a file "
                                 "written by `lawkit footprint record`", path=shown)
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, _CHUNK):
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                raise FootprintError(_too_big("on disk", MAX_FILE_BYTES), path=shown)
            chunks.append(chunk)
    except OSError as exc:
        raise FootprintError(f"cannot read the footprint: {exc.strerror}", path=shown) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def decode_footprint(raw: bytes, *, shown: str) -> Footprint:
    """A footprint from a file's bytes (gzip or plain JSON), refused beyond
    ``MAX_FILE_BYTES`` as stored or ``MAX_JSON_BYTES`` decompressed."""
    if len(raw) > MAX_FILE_BYTES:
        raise FootprintError(_too_big("on disk", MAX_FILE_BYTES), path=shown)
    try:
        if raw[:2] == b"\x1f\x8b":
            _check_decompressed_size(raw, shown)
            raw = gzip.decompress(raw)
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError, ValueError, RecursionError, zlib.error) as exc:
        raise FootprintError(f"not a footprint file (JSON, or gzip of JSON): {exc}",
                             path=shown) from None
    return _parse(doc, shown)


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


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a folder"),
             (stat.S_ISSOCK, "a socket"))
    return next((name for test, name in kinds if test(mode)), "another kind of file")


def inside(path: str, root: str) -> bool:
    """Whether an absolute, normalised path is ``root`` or lies under it."""
    return path == root or path.startswith(os.path.join(root, ""))


def _parse(doc: Any, where: str) -> Footprint:
    schema = SCHEMAS.get(str(doc.get("schema"))) if isinstance(doc, dict) else None
    if schema is None:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise FootprintError(f"schema: expected one of {sorted(SCHEMAS)}, got {got!r}: record "
                             "it again with `lawkit footprint record`", path=where)
    key = _typed(doc, "key", str, where)
    digest = _typed(doc, "digest", str, where)
    command = _typed(doc, "command", list, where)
    processes = _typed(doc, "processes", int, where)
    files = _typed(doc, "files", dict, where)
    if not all(isinstance(a, str) for a in command):
        raise FootprintError("command: expected a list of strings", path=where)
    parsed: dict[str, FileRecord] = {}
    for relpath, entry in files.items():
        at = f"files.{relpath}"
        if not isinstance(entry, dict):
            raise FootprintError(f"{at}: expected an object", path=where)
        sha = _typed(entry, "sha256", str, where, at)
        units = _typed(entry, "units", dict, where, at)
        records: dict[str, UnitRecord] = {}
        for name, unit in units.items():
            uat = f"{at}.units.{name}"
            if not isinstance(unit, dict):
                raise FootprintError(f"{uat}: expected an object", path=where)
            phases = _typed(unit, "phases", list, where, uat)
            if not all(p in PHASES for p in phases):
                raise FootprintError(f"{uat}.phases: expected some of {list(PHASES)}, got "
                                     f"{phases!r}", path=where)
            regions = _strings(unit, "regions", where, uat) if schema >= 2 else ()
            if "startup_regions" in unit:
                startup = _strings(unit, "startup_regions", where, uat)
            else:  # recorded before start-up runs had regions: each had none open
                startup = [ANY_REGION] if "startup" in phases else []
            shutdown = unit.get("shutdown", False)
            if not isinstance(shutdown, bool):
                raise FootprintError(f"{uat}.shutdown: expected true or false, got "
                                     f"{shutdown!r}", path=where)
            code, normal = unit.get("code"), unit.get("normal")
            if code is not None or normal is not None:  # a unit's code in a normal form
                code = _typed(unit, "code", str, where, uat)
                normal = _typed(unit, "normal", int, where, uat)
            records[name] = UnitRecord(_typed(unit, "digest", str, where, uat),
                                       sort_phases(set(phases)), tuple(sorted(set(regions))),
                                       tuple(sorted(set(startup))), shutdown, code, normal,
                                       assumed=_assumed(unit, where, uat))
        parsed[relpath] = FileRecord(sha, records)
    if schema == 1:
        return Footprint(key, digest, tuple(command), processes, parsed, recorder="coverage",
                         schema=1)
    return Footprint(key, digest, tuple(command), processes, parsed,
                     recorder=_typed(doc, "recorder", str, where),
                     python=_typed(doc, "python", str, where),
                     regions=tuple(sorted(set(_strings(doc, "regions", where, optional=True)))),
                     unhashed=tuple(sorted(set(_strings(doc, "unhashed", where,
                                                        optional=True)))),
                     schema=2,
                     environment=(EnvironmentRecord.from_json(doc["environment"], where)
                                  if "environment" in doc else None))


def _assumed(unit: dict[str, Any], where: str, at: str) -> str:
    """A unit's ``assumed`` (empty when absent: seen)."""
    return str(_typed(unit, "assumed", str, where, at)) if "assumed" in unit else ""


def _strings(doc: dict[str, Any], name: str, where: str, at: str = "", *,
             optional: bool = False) -> list[str]:
    """A list of strings; a missing optional one is empty (a schema-2 file without top-level
    ``regions`` has no regions)."""
    if optional and name not in doc:
        return []
    value: list[str] = _typed(doc, name, list, where, at)
    if not all(isinstance(v, str) for v in value):
        label = f"{at}.{name}" if at else name
        raise FootprintError(f"{label}: expected a list of strings, got {value!r}", path=where)
    return value


def _typed(doc: dict[str, Any], name: str, kind: type, where: str, at: str = "") -> Any:
    value = doc.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        label = f"{at}.{name}" if at else name
        raise FootprintError(f"{label}: expected {kind.__name__}, got {value!r}", path=where)
    return value
