"""Code that runs but is not hashed: the modules a measured process loaded
from inside a hashed package's folder, and the engine's packages loaded from anywhere else.

Each is reported as ``{"name", "path", "kind"}`` with kind ``source`` (a ``.py`` read by the
standard loader: `record` checks it is a hashed file), ``native`` (a ``.so``/``.pyd``: listed
in the footprint's ``unhashed``), ``sourceless`` (a ``.pyc`` without its source),
``unchecked-pyc`` (its source's ``.pyc`` is an unchecked-hash one built from other source, so
the hashed source is not what ran), ``other`` (another loader) or ``elsewhere`` (an engine
package's module outside the digest root: an installed copy).
"""

from __future__ import annotations

import _imp
import importlib.machinery
import importlib.util
import os
import sys
from collections.abc import Iterable
from typing import Any


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
        return "unchecked-pyc" if _stale_unchecked_pyc(path) else "source"
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
