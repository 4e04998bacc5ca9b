"""Which distribution a file belongs to (docs/footprints.md): each file whose code ran in a
recording, or each shared object the process mapped, to an installed distribution, to the
standard library (``python``), or to nothing (``unpackaged``).

Built at the end of a recording, never per step, and only as far as the paths asked need: a
folder of the search path is read only when it holds one of the paths, each RECORD in it is
read once, and only its lines for the paths' top-level names are parsed.

A file is a distribution's when its RECORD lists it, when an ``.egg-info``'s
``installed-files.txt`` lists it or, without one (distro packages), when it lies under a name of
its ``top_level.txt``, or when it lies in an editable install's folder. A file several
distributions list (two that install one module) is each one's (`Attribution.shared`).

Pass only the paths outside the hashed files: an engine installed editable is hashed, not a
distribution. lawkit's own packages are left out, wherever they are installed.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import sys
import sysconfig
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from lawkit.footprint.environment import (
    LEFT_OUT,
    STDLIB,
    DistInfo,
    local_path_of,
    metadata_folders,
    path_folders,
    read_dist_info,
)


@dataclass(frozen=True)
class Attribution:
    """What some paths belong to: each path as given to its distribution's canonical name or
    ``python`` (a path of lawkit, a generated code object's ``<string>`` or a path in
    ``unpackaged`` has none), those distributions, and the real paths of no distribution."""

    owners: Mapping[str, str]
    distributions: Mapping[str, DistInfo]
    unpackaged: tuple[str, ...]
    shared: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Each path several distributions list, with all of them (`owners` names the first)."""


def distributions_of(paths: Iterable[str],
                     search_path: Sequence[str] | None = None) -> Attribution:
    """What the files at ``paths`` belong to, from the distributions on the search path
    (``sys.path`` by default)."""
    return Owners(search_path).attribute(paths)


class Owners:
    """The distributions of a search path, indexed lazily by the files they installed."""

    def __init__(self, search_path: Sequence[str] | None = None) -> None:
        self._folders = path_folders(search_path)
        self._metas: dict[str, list[str]] = {}
        self._infos: dict[str, DistInfo | None] = {}
        self._real_dirs: dict[str, str] = {}
        self._editable: list[tuple[str, str]] | None = None
        paths = sysconfig.get_paths()
        self._site = tuple(_as_dir(os.path.realpath(paths[k])) for k in ("purelib", "platlib"))
        self._site += tuple(_as_dir(f) for f in self._folders if self._metas_of(f))
        # a venv's sysconfig puts platstdlib under the venv: the base Python's is the one
        base = sysconfig.get_paths(vars={"base": sys.base_prefix,
                                         "platbase": sys.base_exec_prefix})
        self._stdlib = tuple(_as_dir(os.path.realpath(base[k]))
                             for k in ("stdlib", "platstdlib"))
        self._own = _lawkit_folders()

    @property
    def site(self) -> tuple[str, ...]:
        """The folders distributions are installed in (each ending in a separator)."""
        return self._site

    def attribute(self, paths: Iterable[str]) -> Attribution:
        """What each path belongs to (see `Attribution`)."""
        owners: dict[str, str] = {}
        reals: dict[str, list[str]] = {}
        for path in paths:
            if path.startswith("<"):  # a code object's pseudo file name
                if path.startswith("<frozen "):  # importlib, os, ... frozen into the binary
                    owners[path] = STDLIB
                continue  # generated code: its maker's file is attributed on its own
            real = self._real(path)
            if not real.startswith(self._own):
                reals.setdefault(real, []).append(path)
        recorded = self._recorded(reals)
        dists: dict[str, DistInfo] = {}
        unpackaged: set[str] = set()
        shared: dict[str, tuple[str, ...]] = {}
        for real, given in reals.items():
            metas = recorded.get(real, [])
            owner = self._owner(real, metas[0] if metas else None)
            if isinstance(owner, DistInfo):
                if owner.name in LEFT_OUT:
                    continue
                dists.setdefault(owner.name, owner)
                name = owner.name
                infos = [i for i in map(self._info, metas) if i is not None]
                if len({i.name for i in infos}) > 1:
                    for info in infos:
                        dists.setdefault(info.name, info)
                    shared.update((path, tuple(dict.fromkeys(i.name for i in infos)))
                                  for path in given)
            elif owner == STDLIB:
                name = STDLIB
            else:
                unpackaged.add(real)
                continue
            for path in given:
                owners[path] = name
        return Attribution(owners, dict(sorted(dists.items())), tuple(sorted(unpackaged)),
                           shared)

    def _owner(self, real: str, meta: str | None) -> DistInfo | str | None:
        if meta is not None:
            info = self._info(meta)
            if info is not None:
                return info
        if real.startswith(self._site):
            return None  # in site-packages but in no RECORD: written there by hand or at run time
        if real.startswith(self._stdlib):
            return STDLIB
        for root, editable_meta in self._editable_roots():
            if real.startswith(root):
                return self._info(editable_meta)
        return None

    def _recorded(self, reals: Iterable[str]) -> dict[str, list[str]]:
        """The metadata folders that list each real path, for those listed, in path order."""
        wanted: dict[str, dict[str, str]] = {}  # folder -> {RECORD path: real path}
        folders = [(f, _as_dir(f)) for f in self._folders if self._metas_of(f)]
        for real in reals:
            for folder, inside in folders:
                if real.startswith(inside):
                    rel = real[len(inside):]
                else:  # a script: RECORD reaches ../../../bin, never further up
                    rel = os.path.relpath(real, folder)
                    if rel.count(os.pardir + os.sep) > 3:
                        continue
                wanted.setdefault(folder, {})[rel.replace(os.sep, "/")] = real
        found: dict[str, list[str]] = {}
        for folder, rels in wanted.items():
            prefixes = tuple({_prefix(rel).encode("utf-8", "surrogateescape") for rel in rels})
            for meta in self._metas_of(folder):
                paths = (_egg_paths(meta, rels) if meta.endswith(".egg-info")
                         else _record_paths(meta, (*prefixes, b'"')))
                for rel in paths:
                    listed = rels.get(os.path.normpath(rel).replace(os.sep, "/"))
                    if listed is not None and meta not in found.get(listed, ()):
                        found.setdefault(listed, []).append(meta)
        return found

    def _metas_of(self, folder: str) -> list[str]:
        metas = self._metas.get(folder)
        if metas is None:
            metas = self._metas[folder] = list(metadata_folders(folder))
        return metas

    def _info(self, meta: str) -> DistInfo | None:
        if meta not in self._infos:
            self._infos[meta] = read_dist_info(meta)
        return self._infos[meta]

    def _editable_roots(self) -> list[tuple[str, str]]:
        """The folders editable installs point at, longest first (the innermost wins); not
        lawkit's, so that a file beside lawkit's packages is unpackaged, not left out."""
        if self._editable is None:
            roots: list[tuple[str, str]] = []
            for folder in self._folders:
                for meta in self._metas_of(folder):
                    if _may_be_editable(meta):
                        info = self._info(meta)
                        root = local_path_of(info.source or "") if info and info.editable else None
                        if info is not None and root and info.name not in LEFT_OUT:
                            roots.append((_as_dir(os.path.realpath(root)), meta))
            self._editable = sorted(roots, key=lambda r: -len(r[0]))
        return self._editable

    def _real(self, path: str) -> str:
        """The real path, resolving only the folder (a file is rarely a symlink; a folder on
        the path often is: a venv's lib64)."""
        folder, name = os.path.split(os.path.abspath(path))
        real = self._real_dirs.get(folder)
        if real is None:
            real = self._real_dirs[folder] = os.path.realpath(folder)
        return os.path.join(real, name)


def _prefix(rel: str) -> str:
    """The start of the RECORD lines that may list ``rel``: its top-level folder, or the line
    of the file itself when it is at the top or outside the folder."""
    top, sep, _ = rel.partition("/")
    return top + "/" if sep and top != os.pardir else rel + ","


def _record_paths(meta: str, prefixes: tuple[bytes, ...]) -> Iterable[str]:
    """The paths of a RECORD's lines that start with one of ``prefixes``."""
    try:
        with open(os.path.join(meta, "RECORD"), "rb") as f:
            data = f.read()
    except OSError:
        return
    for line in data.split(b"\n"):
        if line.startswith(prefixes):
            text = line.decode("utf-8", "surrogateescape").rstrip("\r")
            # a path holding a comma or a quote is quoted, as csv writes it
            row = next(csv.reader([text])) if text.startswith('"') else text.split(",", 1)
            if row:
                yield row[0]


def _egg_paths(meta: str, rels: Mapping[str, str]) -> Iterable[str]:
    """The paths an ``.egg-info`` folder lists, relative to the folder holding it: its
    ``installed-files.txt`` (relative to itself), else each of ``rels`` under a name of its
    ``top_level.txt`` (a package folder, a module, an extension module)."""
    listed = _lines(os.path.join(meta, "installed-files.txt"))
    if listed:
        yield from (os.path.join(os.path.basename(meta), line) for line in listed)
        return
    tops = tuple(_lines(os.path.join(meta, "top_level.txt")))
    for rel in rels:
        if rel.startswith(tuple(f"{t}/" for t in tops)) or rel.split(".")[0] in tops:
            yield rel


def _lines(path: str) -> list[str]:
    """The non-empty lines of a text file (none when it cannot be read)."""
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            return [line.strip() for line in f if line.strip()]
    except OSError:
        return []


def _may_be_editable(meta: str) -> bool:
    return os.path.exists(os.path.join(meta, "direct_url.json"))


def _as_dir(path: str) -> str:
    return os.path.join(path, "")


def _lawkit_folders() -> tuple[str, ...]:
    """The folders of lawkit's own packages (``lawkit``, ``src_digest``)."""
    lawkit = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    folders = [lawkit]
    spec = importlib.util.find_spec("src_digest")
    if spec is not None and spec.submodule_search_locations:
        folders += [os.path.realpath(p) for p in spec.submodule_search_locations]
    return tuple(_as_dir(f) for f in folders)
