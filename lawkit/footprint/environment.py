"""What the environment is (docs/footprints.md): the Python build that runs and the installed
distributions, each with its version, the sha256 of its RECORD and how it was installed.

Read through ``importlib.metadata`` and the ``.dist-info`` folders of the search path (by
default ``sys.path``): the first distribution of a name on the path is the one imported, as
``importlib.metadata.version`` says. A target environment (`Target`) is what a recorded one is
compared with: the one lawkit runs in (`current_environment`) or a lock file
(``lockfiles.read_lock``).
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

STDLIB = "python"
"""What the standard library is called where a distribution's name goes."""
LEFT_OUT = frozenset({"lawkit"})
"""Distributions never listed: lawkit itself (the recorder runs in the measured process)."""


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
    """The build of the Python this code runs in."""
    v = sys.version_info
    version = f"{v.major}.{v.minor}.{v.micro}"
    if v.releaselevel != "final":
        version += {"alpha": "a", "beta": "b", "candidate": "rc"}[v.releaselevel] + str(v.serial)
    # a free-threaded build may still run with the GIL (PYTHON_GIL=1, or an extension that
    # needs it): what the steps pay for is whether it is on now; abiflags names the build
    is_gil_enabled = getattr(sys, "_is_gil_enabled", None)
    return PythonBuild(version, sys.implementation.name, getattr(sys, "abiflags", ""),
                       is_gil_enabled is not None and not is_gil_enabled())


@dataclass(frozen=True)
class DistInfo:
    """An installed distribution: its canonical name, version, the sha256 of its RECORD
    (empty without one) and its PEP 610 direct URL (None: installed from an index)."""

    name: str
    version: str
    record: str = ""
    url: str | None = None
    editable: bool = False

    def direct_url_json(self) -> dict[str, Any] | None:
        """The footprint's ``direct_url``: None, or ``{"url": ..., "editable": ...}``."""
        return None if self.url is None else {"url": self.url, "editable": self.editable}

    def installed_as(self) -> str:
        """``editable``, ``direct url`` (a local wheel, an archive, a VCS checkout) or
        ``index``."""
        if self.editable:
            return "editable"
        return "index" if self.url is None else "direct url"


def canonical_name(name: str) -> str:
    """A distribution's name normalised as PEP 503 says (``Foo_Bar.baz`` -> ``foo-bar-baz``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


_PEP440 = re.compile(
    r"""v?(?:(?P<epoch>[0-9]+)!)?(?P<release>[0-9]+(?:\.[0-9]+)*)
    (?:[-_.]?(?P<pre_l>alpha|a|beta|b|preview|pre|c|rc)[-_.]?(?P<pre_n>[0-9]+)?)?
    (?:-(?P<post_n1>[0-9]+)|[-_.]?(?P<post_l>post|rev|r)[-_.]?(?P<post_n2>[0-9]+)?)?
    (?:[-_.]?(?P<dev_l>dev)[-_.]?(?P<dev_n>[0-9]+)?)?
    (?:\+(?P<local>[a-z0-9]+(?:[-_.][a-z0-9]+)*))?""",
    re.VERBOSE | re.IGNORECASE)
_PRE = {"alpha": "a", "a": "a", "beta": "b", "b": "b", "preview": "rc", "pre": "rc", "c": "rc",
        "rc": "rc"}


def version_key(version: str) -> str:
    """A version as PEP 440 compares it (``2.1`` and ``v2.1.0`` are one; ``2.1+cu121`` is
    another); a version PEP 440 cannot parse is compared as its lower-cased text."""
    text = version.strip()
    m = _PEP440.fullmatch(text)
    if m is None:
        return text.lower()
    release = [int(part) for part in m["release"].split(".")]
    while len(release) > 1 and release[-1] == 0:  # 2.1 == 2.1.0 (PEP 440 pads with zeros)
        release.pop()
    key = f"{int(m['epoch'] or 0)}!" + ".".join(map(str, release))
    if m["pre_l"]:
        key += _PRE[m["pre_l"].lower()] + str(int(m["pre_n"] or 0))
    if m["post_n1"] or m["post_l"]:
        key += ".post" + str(int(m["post_n1"] or m["post_n2"] or 0))
    if m["dev_l"]:
        key += ".dev" + str(int(m["dev_n"] or 0))
    if m["local"]:
        key += "+" + ".".join(str(int(p)) if p.isdigit() else p.lower()
                              for p in re.split(r"[-_.]", m["local"]))
    return key


@dataclass(frozen=True)
class Environment:
    """A recorded environment as the comparison needs it: the Python build and the
    distributions that ran, by canonical name."""

    python: PythonBuild
    distributions: Mapping[str, DistInfo]


@dataclass(frozen=True)
class Pin:
    """What a target environment allows of one distribution: the exact versions it lists
    (``exact`` is False when an entry pins none), and, for the current environment, the
    installed distribution."""

    versions: tuple[str, ...]
    exact: bool = True
    installed: DistInfo | None = None

    def only(self) -> str | None:
        """The one version allowed, or None when the target is ambiguous about it."""
        return self.versions[0] if self.exact and len(self.versions) == 1 else None


@dataclass(frozen=True)
class Target:
    """The environment a recorded one is compared with: ``current`` or a lock file, its
    Python (None: a lock file names no exact Python) and its distributions by canonical name."""

    source: str
    python: PythonBuild | None
    distributions: Mapping[str, Pin]


def current_environment(search_path: Sequence[str] | None = None) -> Target:
    """The environment lawkit runs in: its Python and every distribution on the search path
    (``sys.path`` by default)."""
    pins = {d.name: Pin((d.version,), installed=d)
            for d in installed_distributions(search_path).values()}
    return Target("current", python_build(), pins)


def installed_distributions(search_path: Sequence[str] | None = None) -> dict[str, DistInfo]:
    """Every distribution on the search path by canonical name, the first of a name winning."""
    found: dict[str, DistInfo] = {}
    for folder in path_folders(search_path):
        for meta in metadata_folders(folder):
            info = read_dist_info(meta)
            if info is not None and info.name not in found:
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
    """The ``.dist-info`` folders directly inside a folder, sorted."""
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".dist-info"))
    except OSError:
        return
    for name in names:
        yield os.path.join(folder, name)


def read_dist_info(meta: str) -> DistInfo | None:
    """The distribution a ``.dist-info`` folder describes; None when it has no name or
    version (a half-removed install)."""
    name, version = _name_and_version(meta)
    if not name or not version:
        return None
    try:
        with open(os.path.join(meta, "RECORD"), "rb") as f:
            record = hashlib.sha256(f.read()).hexdigest()
    except OSError:
        record = ""
    # imported here, not at the top: every measured process imports this module (its build)
    from importlib.metadata import Distribution

    url, editable = _direct_url(Distribution.at(meta).read_text("direct_url.json"))
    return DistInfo(canonical_name(name), version, record, url, editable)


def _name_and_version(meta: str) -> tuple[str | None, str | None]:
    """The ``Name`` and ``Version`` of a METADATA file, read from its headers only (the
    description after them can be long)."""
    found: dict[str, str] = {}
    try:
        with open(os.path.join(meta, "METADATA"), encoding="utf-8", errors="replace") as f:
            for line in f:
                if not line.strip():
                    break  # the headers end at the first blank line
                key, sep, value = line.partition(":")
                if sep and key.lower() in ("name", "version"):
                    found.setdefault(key.lower(), value.strip())
    except OSError:
        pass
    return found.get("name"), found.get("version")


def _direct_url(text: str | None) -> tuple[str | None, bool]:
    """PEP 610's url and whether the install is editable; a malformed file counts as a direct
    URL install of unknown origin (its code may differ at one version)."""
    if text is None:
        return None, False
    try:
        doc = json.loads(text)
    except ValueError:
        return "", False
    if not isinstance(doc, dict):
        return "", False
    url = doc.get("url")
    dir_info = doc.get("dir_info")
    editable = isinstance(dir_info, dict) and dir_info.get("editable") is True
    return (url if isinstance(url, str) else ""), editable


def local_path_of(url: str) -> str | None:
    """The local folder a ``file://`` URL names, or None."""
    from urllib.request import url2pathname  # not at the top: measured processes import this

    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "file":
        return None
    return url2pathname(parts.path)
