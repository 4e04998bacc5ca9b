"""What the environment is (docs/footprints.md): the Python build that runs and the installed
distributions, each with its version, how it was installed, where from, and the sha256 of its
RECORD.

Read from the ``.dist-info`` and ``.egg-info`` folders of the search path (by default
``sys.path``): the first distribution of a name on the path is the one imported, as
``importlib.metadata.version`` says. Names are PEP 503's and versions PEP 440's, as
``packaging`` reads them. A target environment (`Target`) is what a recorded one is compared
with: the one lawkit runs in (``manifest.current_environment``), an environment manifest
(``manifest.read_manifest``) or a lock file (``lockfiles.read_lock``).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from lawkit.footprint.measured import loaded

STDLIB = "python"
"""What the standard library is called where a distribution's name goes."""
LEFT_OUT = frozenset({"lawkit"})
"""Distributions never listed: lawkit itself (the recorder runs in the measured process)."""
INSTALL_KINDS = ("index", "archive", "vcs", "directory", "editable", "egg-info", "legacy")
"""How a distribution was installed (docs/footprint-file.md): from an index (no PEP 610
``direct_url.json``), a direct URL to a file (a local wheel included), a VCS checkout, a local
folder, editable, an ``.egg-info`` folder, or other metadata."""


@dataclass(frozen=True)
class PythonBuild:
    """The Python that runs: its version, implementation, ABI flags and whether the GIL is
    off (a free-threaded build running without it)."""

    version: str
    implementation: str
    abiflags: str = ""
    gil_disabled: bool = False

    def to_json(self) -> dict[str, Any]:
        """The footprint's ``environment.python`` object."""
        return {"version": self.version, "implementation": self.implementation,
                "abiflags": self.abiflags, "gil_disabled": self.gil_disabled}

    @classmethod
    def from_json(cls, doc: Any) -> PythonBuild:
        """The build from a footprint's ``environment.python`` object; ``ValueError`` naming
        the key when it is malformed."""
        if not isinstance(doc, dict):
            raise ValueError("python: expected an object")
        for key, kind in (("version", str), ("implementation", str), ("abiflags", str),
                          ("gil_disabled", bool)):
            if not isinstance(doc.get(key), kind):
                raise ValueError(f"python.{key}: expected a {kind.__name__}")
        return cls(doc["version"], doc["implementation"], doc["abiflags"], doc["gil_disabled"])

    def describe(self) -> str:
        """As a person says it: ``cpython 3.12.3``, ``cpython 3.13.1t (GIL disabled)``."""
        gil = " (GIL disabled)" if self.gil_disabled else ""
        return f"{self.implementation} {self.version}{self.abiflags}{gil}"


def python_build() -> PythonBuild:
    """The build of the Python this code runs in (as a measured process records it)."""
    return PythonBuild.from_json(loaded.python_build())


@dataclass(frozen=True)
class DistInfo:
    """An installed distribution: its canonical name, version, the sha256 of its RECORD (empty
    without one), how it was installed (`INSTALL_KINDS`), where from (a URL or folder; None from
    an index), the VCS commit (None when not a VCS install) and its metadata folder."""

    name: str
    version: str
    record: str = ""
    install: str = "index"
    source: str | None = None
    commit: str | None = None
    meta: str = ""

    @property
    def editable(self) -> bool:
        """Whether it was installed editable (its code is its project's folder)."""
        return self.install == "editable"


def canonical_name(name: str) -> str:
    """A distribution's name normalised as PEP 503 says (``Foo_Bar.baz`` -> ``foo-bar-baz``):
    ``packaging.utils.canonicalize_name``'s rule, without importing it (it imports
    ``packaging.tags``, about 15 ms on every command that reads a footprint)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_version(text: str) -> Version | None:
    """A version as PEP 440 reads it, or None when it cannot."""
    try:
        return Version(text)
    except InvalidVersion:
        return None


def same_version(a: str, b: str) -> bool:
    """Whether two versions are one as PEP 440 compares them (``2.1`` and ``v2.1.0`` are;
    ``2.1+cu121`` and ``2.1`` are not); a version PEP 440 cannot parse compares as its
    lower-cased text."""
    va, vb = parse_version(a), parse_version(b)
    if va is None or vb is None:
        return a.strip().lower() == b.strip().lower()
    return va == vb


@dataclass(frozen=True)
class Environment:
    """A recorded environment as the comparison needs it: the Python build and the
    distributions that ran, by canonical name."""

    python: PythonBuild
    distributions: Mapping[str, DistInfo]


@dataclass(frozen=True)
class Pin:
    """What a target environment allows of one distribution: the exact versions it lists
    (``exact`` False when an entry pins none, or admits more than it names: ``==1.0`` admits
    ``1.0+local``), where the target takes it from (``source``: ``index``, or a lock's other
    source kind: ``vcs``, ``directory``, ``archive``, ``git``, ``path``...), and, for an
    environment that shows content (``current``, a manifest), the installed distribution."""

    versions: tuple[str, ...]
    exact: bool = True
    installed: DistInfo | None = None
    source: str = "index"
    files: Mapping[str, str] | None = None
    """A manifest's files of it: each path (as a footprint names it) and its sha256."""

    def only(self) -> str | None:
        """The one version allowed, or None when the target is ambiguous about it."""
        return self.versions[0] if self.exact and len(self.versions) == 1 else None


@dataclass(frozen=True)
class Target:
    """The environment a recorded one is compared with: ``current``, a manifest or a lock
    file, its Python (None: a lock file names no exact Python) and its distributions by
    canonical name. ``shows`` says what it can show of a distribution: ``units`` (it is the
    installed environment: files are hashed again and their units compared), ``files`` (a
    manifest: each file's sha256) or ``versions`` (a lock file: versions and sources)."""

    source: str
    python: PythonBuild | None
    distributions: Mapping[str, Pin]
    shows: str = "versions"
    environ: Mapping[str, str] | None = None
    """Its environment variables, each as a footprint keeps a value read (the sha256 of the
    value, or ``hidden``); None: it carries no configuration (a lock file)."""
    settings: Mapping[str, Any] | None = None
    """Its process settings (``gc_threshold``, ``flags``, ``cpus``...); None: none known."""


def installed_distributions(search_path: Sequence[str] | None = None) -> dict[str, DistInfo]:
    """Every distribution on the search path by canonical name, the first of a name winning
    (lawkit left out)."""
    found: dict[str, DistInfo] = {}
    for folder in path_folders(search_path):
        for meta in metadata_folders(folder):
            info = read_dist_info(meta)
            if info is not None and info.name not in found and info.name not in LEFT_OUT:
                found[info.name] = info
    return found


def path_folders(search_path: Sequence[str] | None) -> list[str]:
    """The existing folders of a search path, as real paths, once each and in order."""
    seen: dict[str, None] = {}
    for entry in sys.path if search_path is None else search_path:
        real = os.path.realpath(entry or os.curdir)
        if os.path.isdir(real):
            seen.setdefault(real)
    return list(seen)


def metadata_folders(folder: str) -> Iterator[str]:
    """The ``.dist-info`` and ``.egg-info`` folders directly inside a folder, sorted."""
    try:
        names = sorted(e.name for e in os.scandir(folder)
                       if e.name.endswith((".dist-info", ".egg-info")) and e.is_dir())
    except OSError:
        return
    for name in names:
        yield os.path.join(folder, name)


def read_dist_info(meta: str) -> DistInfo | None:
    """The distribution a ``.dist-info`` or ``.egg-info`` folder describes; None when it has
    no name or version (a half-removed install)."""
    egg = meta.endswith(".egg-info")
    name, version = _name_and_version(os.path.join(meta, "PKG-INFO" if egg else "METADATA"))
    if not name or not version:
        return None
    try:
        with open(os.path.join(meta, "RECORD"), "rb") as f:
            record = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        record = ""
    if egg:
        return DistInfo(canonical_name(name), version, record, "egg-info",
                        os.path.dirname(meta), meta=meta)
    try:
        with open(os.path.join(meta, "direct_url.json"), encoding="utf-8") as f:
            direct = f.read()
    except FileNotFoundError:
        return DistInfo(canonical_name(name), version, record, meta=meta)
    except OSError:
        direct = ""
    install, source, commit = _direct_url(direct)
    return DistInfo(canonical_name(name), version, record, install, source, commit, meta)


def _name_and_version(path: str) -> tuple[str | None, str | None]:
    """The ``Name`` and ``Version`` of a METADATA or PKG-INFO file, read from its headers only
    (the description after them can be long)."""
    found: dict[str, str] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # the headers end at the first blank line
                key, sep, value = line.partition(":")
                if sep and key.lower() in ("name", "version"):
                    found.setdefault(key.lower(), value.strip())
    except OSError:
        pass
    return found.get("name"), found.get("version")


def _direct_url(text: str) -> tuple[str, str | None, str | None]:
    """How PEP 610's ``direct_url.json`` says a distribution was installed: its install kind,
    source URL and VCS commit. A malformed file counts as ``legacy`` of unknown origin (its
    code may differ at one version)."""
    try:
        doc = json.loads(text)
    except ValueError:
        return "legacy", None, None
    if not isinstance(doc, dict) or not isinstance(doc.get("url"), str):
        return "legacy", None, None
    url: str = doc["url"]
    vcs, dir_info = doc.get("vcs_info"), doc.get("dir_info")
    if isinstance(vcs, dict):
        commit = vcs.get("commit_id")
        return "vcs", url, commit if isinstance(commit, str) else None
    if isinstance(dir_info, dict):
        return ("editable" if dir_info.get("editable") is True else "directory"), url, None
    return "archive", url, None


def local_path_of(url: str) -> str | None:
    """The local folder a ``file://`` URL names, or None."""
    from urllib.request import url2pathname  # not at the top: measured processes import this

    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "file":
        return None
    return url2pathname(parts.path)
