"""The environments that show content (docs/footprints.md, "The target"): the one lawkit runs
in (`current_environment`), and an environment manifest, what `lawkit env export` writes in a
deployment's image or machine and `--env FILE.json` reads back (`read_manifest`).

    {"schema": "lawkit-environment/1",
     "python": {"version", "implementation", "abiflags", "gil_disabled"},
     "distributions": {"<PEP 503 name>": {"version", "install", "source", "commit", "record",
                                          "files": {"<path>": "<sha256>"}}},
     "configuration": {"environ": {"NAME": "<sha256 of the value>" | "hidden"},
                       "settings": {"gc_threshold", "gc_enabled", "switch_interval", "flags",
                                    "hash_seed", "cpus"}}}

A distribution's files are named as a footprint names them: relative to the folder holding its
metadata (RECORD's paths; scripts outside that folder left out), or, for an editable install,
its project folder's Python files and shared objects relative to that folder. Each file's
sha256 is of its bytes now, not RECORD's word for them. Every environment variable is kept as
the sha256 of its value (a footprint keeps a value read the same way), a secret's name
(``*TOKEN*``, ``*SECRET*``, ``*PASSWORD*``, ``*CREDENTIAL*``) as ``hidden`` unless
``[footprint] environ`` lists it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lawkit.footprint.configured import HIDDEN, is_secret, value_digest
from lawkit.footprint.environment import (
    DistInfo,
    Pin,
    PythonBuild,
    Target,
    installed_distributions,
    local_path_of,
    python_build,
)
from lawkit.footprint.errors import FootprintError
from lawkit.footprint.filemodel import PythonDoc, explain
from lawkit.footprint.measured.configuration import process_settings
from lawkit.fsio import ReadRefused, read_regular_file, replace_files

SCHEMA = "lawkit-environment/1"
MAX_MANIFEST_BYTES = 256 * 2**20
"""The largest manifest read (one of a CUDA image with torch is a few MiB)."""
_CODE_SUFFIXES = (".py", ".so", ".pyd", ".dylib")
_SKIPPED_FOLDERS = frozenset({"__pycache__", "build", "node_modules"})


def this_configuration(shown: Iterable[str] = ()) -> tuple[dict[str, str], dict[str, Any]]:
    """This process's environment variables, as a footprint keeps a value read (``shown``:
    secrets' names whose value is kept), and its process settings."""
    kept = frozenset(shown)
    environ = {os.fsdecode(name): (HIDDEN if is_secret(os.fsdecode(name))
                                   and os.fsdecode(name) not in kept else value_digest(value))
               for name, value in sorted(os.environb.items())}
    seed = os.environ.get("PYTHONHASHSEED")
    hash_seed = "0" if not sys.flags.hash_randomization else (seed or "random")
    return environ, process_settings(hash_seed)


def current_environment(search_path: Sequence[str] | None = None) -> Target:
    """The environment lawkit runs in: its Python, every distribution on the search path
    (``sys.path`` by default) and its configuration; it shows content by unit."""
    pins = {d.name: Pin((d.version,), installed=d, source=d.install)
            for d in installed_distributions(search_path).values()}
    environ, settings = this_configuration()
    return Target("current", python_build(), pins, "units", environ, settings)


def export_manifest(search_path: Sequence[str] | None = None,
                    shown: Iterable[str] = ()) -> dict[str, Any]:
    """The manifest of the environment lawkit runs in: its Python build, every distribution
    with each of its files' sha256, and its configuration."""
    environ, settings = this_configuration(shown)
    dists = {}
    for name, info in sorted(installed_distributions(search_path).items()):
        dists[name] = {"version": info.version, "install": info.install,
                       "source": info.source, "commit": info.commit,
                       "record": info.record or None,
                       "files": dict(sorted(_hashed(info)))}
    return {"schema": SCHEMA, "python": python_build().to_json(), "distributions": dists,
            "configuration": {"environ": environ, "settings": settings}}


def _hashed(info: DistInfo) -> Iterator[tuple[str, str]]:
    """Each file of a distribution, by its path as a footprint names it, and its sha256."""
    base = os.path.dirname(info.meta)
    for rel in _files_of(info):
        try:
            with open(os.path.join(base, *rel.split("/")), "rb") as f:
                yield rel, hashlib.file_digest(f, "sha256").hexdigest()
        except OSError:
            continue  # listed but gone (removed by hand): not installed
    project = local_path_of(info.source or "") if info.install == "editable" else None
    if project and os.path.isdir(project):
        for path in _code_files(project):
            with open(path, "rb") as f:
                rel = os.path.relpath(path, project).replace(os.sep, "/")
                yield rel, hashlib.file_digest(f, "sha256").hexdigest()


def _files_of(info: DistInfo) -> list[str]:
    """The paths a distribution's metadata lists, relative to the folder holding it, that lie
    inside that folder (RECORD's, or an egg-info's ``installed-files.txt``)."""
    if info.meta.endswith(".egg-info"):
        listed = _lines(os.path.join(info.meta, "installed-files.txt"))
        folder = os.path.basename(info.meta)
        paths = [os.path.normpath(os.path.join(folder, p)).replace(os.sep, "/") for p in listed]
        if not listed:  # distro packages: the top-level names, as the recorder reads them
            paths = list(_top_level_files(info.meta))
    else:
        import csv

        paths = [row[0] for row in csv.reader(_lines(os.path.join(info.meta, "RECORD"))) if row]
    return sorted({p for p in paths if not p.startswith("../") and not os.path.isabs(p)})


def _top_level_files(meta: str) -> Iterator[str]:
    """The code files of the packages and modules an egg-info's ``top_level.txt`` names."""
    base = os.path.dirname(meta)
    for name in filter(None, (n.strip() for n in _lines(os.path.join(meta, "top_level.txt")))):
        if os.path.isdir(os.path.join(base, name)):
            for path in _code_files(os.path.join(base, name)):
                yield os.path.relpath(path, base).replace(os.sep, "/")
        for suffix in _CODE_SUFFIXES:
            if os.path.isfile(os.path.join(base, name + suffix)):
                yield name + suffix


def _lines(path: str) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return f.read().splitlines()
    except OSError:
        return []


def _code_files(project: str) -> Iterator[str]:
    """The Python files and shared objects under an editable project's folder."""
    for folder, subfolders, names in os.walk(project):
        subfolders[:] = sorted(d for d in subfolders
                               if d not in _SKIPPED_FOLDERS and not d.startswith(".")
                               and not d.endswith((".egg-info", ".dist-info")))
        for name in sorted(names):
            if name.endswith(_CODE_SUFFIXES):
                yield os.path.join(folder, name)


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class _DistModel(_Model):
    version: str
    install: Literal["index", "archive", "vcs", "directory", "editable", "egg-info", "legacy"]
    source: str | None = None
    commit: str | None = None
    record: str | None = None
    files: dict[str, str] = Field(default_factory=dict)


class _ConfigurationModel(_Model):
    environ: dict[str, str] = Field(default_factory=dict)
    settings: dict[str, Any] = Field(default_factory=dict)


class ManifestModel(_Model):
    """An environment manifest (`lawkit env export`)."""

    schema_: Literal["lawkit-environment/1"] = Field(alias="schema")
    python: PythonDoc
    distributions: dict[str, _DistModel]
    configuration: _ConfigurationModel = Field(default_factory=_ConfigurationModel)


def read_manifest(path: Path, *, shown: str | None = None) -> Target:
    """The environment a manifest describes; `FootprintError` naming the file and key when it
    is unreadable or malformed."""
    where = shown or str(path)
    try:
        raw = read_regular_file(path, MAX_MANIFEST_BYTES)
    except ReadRefused as exc:
        raise FootprintError(exc.reason("the manifest", "pass a manifest lawkit env export "
                                        "wrote", "not a manifest"), path=where) from None
    try:
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        doc = json.loads(raw.decode("utf-8"))
    except (OSError, EOFError, ValueError, RecursionError) as exc:
        raise FootprintError(f"not an environment manifest (JSON): {exc}: write one with "
                             "lawkit env export", path=where) from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA:
        got = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise FootprintError(f"schema: expected {SCHEMA!r}, got {got!r}: write the manifest "
                             "with lawkit env export", path=where)
    try:
        model = ManifestModel.model_validate(doc)
    except ValidationError as exc:
        raise FootprintError(explain(exc, "write it again with lawkit env export"),
                             path=where) from None
    if not {"environ", "settings"} <= doc.get("configuration", {}).keys():
        # without them, a variable recorded unset or a setting would read as unchanged
        raise FootprintError("configuration: expected its environ and settings: write the "
                             "manifest again with lawkit env export", path=where)
    py = model.python
    pins = {name: Pin((d.version,), installed=DistInfo(name, d.version, d.record or "",
                                                       d.install, d.source, d.commit),
                      source=d.install, files=d.files)
            for name, d in model.distributions.items()}
    return Target(where, PythonBuild(py["version"], py["implementation"], py["abiflags"],
                                     py["gil_disabled"]), pins, "files",
                  model.configuration.environ, model.configuration.settings)


def write_manifest(manifest: Mapping[str, Any], out: Path | None) -> None:
    """Write a manifest to ``out`` atomically (gzip when it ends in ``.gz``), or to stdout."""
    text = json.dumps(manifest, indent=1, sort_keys=True) + "\n"
    if out is None:
        sys.stdout.write(text)
        return
    data = text.encode()
    replace_files([(out, gzip.compress(data, mtime=0) if out.name.endswith(".gz") else data)],
                  shown={out: str(out)})
