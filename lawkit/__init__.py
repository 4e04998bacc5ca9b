"""lawkit: fit, key, check and review the host laws of an inference-engine simulator.

The public API is loaded lazily, so that `lawkit digest` and `lawkit check` start fast:
importing `lawkit` costs nothing until a name is used.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_API = {
    "LawkitError": "lawkit.errors",
    "LawFile": "lawkit.lawfile",
    "Law": "lawkit.lawfile",
    "load": "lawkit.lawfile",
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'lawkit' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
