"""What a measured process has loaded, read once as it saves: its Python build
(`python_build`), the files it mapped as code (`native_libraries`), the files of its modules
(`module_files`), and the code that runs but is not hashed (`loaded_modules`): the modules it
loaded from inside a hashed package's folder, and the engine's packages loaded from anywhere
else.

Each of the last is reported as ``{"name", "path", "kind"}`` with kind ``source`` (a ``.py``
read by the standard loader: `record` checks it is a hashed file), ``native`` (a
``.so``/``.pyd``: listed in the footprint's ``unhashed``), ``sourceless`` (a ``.pyc`` without
its source), ``unchecked-pyc`` (its source's ``.pyc`` is an unchecked-hash one built from
other source, so the hashed source is not what ran), ``stale-pyc`` (it ran from a timestamp
``.pyc`` of other source: one whose recorded size and time the edited source kept),
``other`` (another loader) or ``elsewhere`` (an engine package's module outside the digest
root: an installed copy).
"""

from __future__ import annotations

import _imp
import importlib.machinery
import importlib.util
import marshal
import os
import sys
from collections.abc import Iterable
from typing import Any


def python_build() -> dict[str, Any]:
    """The build of the Python this code runs in: the footprint's ``environment.python``
    object (its version, implementation, ABI flags and whether the GIL is off)."""
    v = sys.version_info
    version = f"{v.major}.{v.minor}.{v.micro}"
    if v.releaselevel != "final":
        version += {"alpha": "a", "beta": "b", "candidate": "rc"}[v.releaselevel] + str(v.serial)
    # a free-threaded build may still run with the GIL (PYTHON_GIL=1, or an extension that
    # needs it): what the steps pay for is whether it is on now; abiflags names the build
    is_gil_enabled = getattr(sys, "_is_gil_enabled", None)
    return {"version": version, "implementation": sys.implementation.name,
            "abiflags": getattr(sys, "abiflags", ""),
            "gil_disabled": is_gil_enabled is not None and not is_gil_enabled()}


def native_libraries(maps: str = "/proc/self/maps") -> list[str]:
    """The files this process has mapped as code (shared objects, extension modules, the
    interpreter), sorted; empty where there is no ``/proc`` (not Linux)."""
    try:
        with open(maps, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    found: set[str] = set()
    for line in lines:
        # address perms offset dev inode pathname; the pathname may hold spaces
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and "x" in fields[1] and fields[5].startswith("/"):
            path = fields[5].removesuffix(" (deleted)")  # replaced on disk since it was mapped
            found.add(path)
    return sorted(found)


def module_files() -> list[str]:
    """The files of the modules loaded (what a recorder that sees no code outside the hashed
    files counts as run)."""
    found: set[str] = set()
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if isinstance(filename, str):
            found.add(filename)
    return sorted(found)


def files_by_module(names: Iterable[str]) -> dict[str, str]:
    """The file of each module named that is still loaded and has one."""
    found: dict[str, str] = {}
    for name in names:
        filename = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(filename, str):
            found[name] = filename
    return found


def loaded_modules(roots: Iterable[str], names: Iterable[str]) -> list[dict[str, str]]:
    """The modules of this process that `record` must judge."""
    inside = tuple(os.path.join(r, "") for r in roots)
    packages = tuple(names)
    found: list[dict[str, str]] = []
    for name, module in list(sys.modules.items()):
        path = _path_of(module)
        if path is None:
            continue
        real = os.path.realpath(path)
        if real.startswith(inside):
            found.append({"name": name, "path": real, "kind": _kind(module, real)})
        elif name in packages or name.startswith(tuple(p + "." for p in packages)):
            found.append({"name": name, "path": real, "kind": "elsewhere"})
    return found


def _path_of(module: Any) -> str | None:
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None) if spec is not None else None
    path = origin if isinstance(origin, str) and getattr(spec, "has_location", False) else \
        getattr(module, "__file__", None)
    return path if isinstance(path, str) else None


def _kind(module: Any, path: str) -> str:
    loader = getattr(getattr(module, "__spec__", None), "loader", None)
    if isinstance(loader, importlib.machinery.ExtensionFileLoader) or \
            path.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        return "native"
    if isinstance(loader, importlib.machinery.SourcelessFileLoader):
        return "sourceless"
    if isinstance(loader, importlib.machinery.SourceFileLoader):
        if _stale_unchecked_pyc(path):
            return "unchecked-pyc"
        return "stale-pyc" if _stale_timestamp_pyc(module, path) else "source"
    return "other"


def _stale_unchecked_pyc(source: str) -> bool:
    """Whether the source's cached ``.pyc`` is an unchecked-hash one of other source."""
    if getattr(_imp, "check_hash_based_pycs", "default") == "always":
        return False
    try:
        with open(importlib.util.cache_from_source(source), "rb") as f:
            header = f.read(16)
        with open(source, "rb") as f:
            data = f.read()
    except (OSError, ValueError, NotImplementedError):
        return False
    flags = int.from_bytes(header[4:8], "little")
    unchecked = flags & 0b01 and not flags & 0b10
    return bool(unchecked) and header[8:16] != importlib.util.source_hash(data)


def _stale_timestamp_pyc(module: Any, source: str) -> bool:
    """Whether the module ran from a timestamp ``.pyc`` of other source: its header holds the
    source's size and modification time (so the loader used it), yet the source changed after
    the ``.pyc`` was written (a later ctime, which no tool can set back) and compiles to other
    code. Only then is the source compiled: a process that wrote its own ``.pyc``, or one whose
    ``.pyc`` is newer than every change of its source, compiles nothing."""
    cached = getattr(module, "__cached__", None)
    if not isinstance(cached, str):
        return False
    try:
        stat = os.stat(source)
        with open(cached, "rb") as f:
            header = f.read(16)
            if len(header) < 16 or int.from_bytes(header[4:8], "little") != 0:
                return False  # hash-based: checked by the loader, or `_stale_unchecked_pyc`'s
            if (int.from_bytes(header[8:12], "little") != int(stat.st_mtime) & 0xFFFFFFFF
                    or int.from_bytes(header[12:16], "little") != stat.st_size & 0xFFFFFFFF):
                return False  # not the one the loader used: it compiled the source
            if os.fstat(f.fileno()).st_mtime >= stat.st_ctime:
                return False  # written after the source's last change
            ran = marshal.loads(f.read())
        with open(source, "rb") as f:
            text = f.read()
    except (OSError, ValueError, EOFError, TypeError):
        return False
    level = 2 if ".opt-2." in cached else 1 if ".opt-1." in cached else 0
    try:
        return bool(ran != compile(text, source, "exec", dont_inherit=True, optimize=level))
    except (SyntaxError, ValueError):
        return True  # the source on disk does not even compile: what ran was other code
