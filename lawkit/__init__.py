"""lawkit: fit, key, check and review the host laws of an inference-engine simulator.

The public API is loaded lazily, so that `lawkit digest` and `lawkit check` start fast:
importing `lawkit` costs nothing until a name is used.

    law = lawkit.load("laws/a100.yaml").law("schedule_s[microsoft/phi-2,1]")
    law.predict({"batch_size": 48})                  # a float; LawDomainWarning outside
    report = lawkit.score("laws/a100.yaml", ["captures/new.csv"], max_mape=0.1)
    lawkit.check().ok, lawkit.digest().digest

`lawkit.digest`, `check`, `rekey`, `fit` and `score` are both the library modules of those
commands and callables running the command (lawkit.api): a package attribute named like a
submodule becomes that submodule as soon as it is imported, so the module itself is made
callable rather than shadowed.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any

__version__ = "0.1.0"

_API = {
    "LawkitError": "lawkit.errors",
    "LawFile": "lawkit.lawfile",
    "Law": "lawkit.lawfile",
    "load": "lawkit.lawfile",
    "LawDomainWarning": "lawkit.predict",
    "LawDomainError": "lawkit.predict",
}
_COMMANDS = ("digest", "check", "rekey", "fit", "score")

__all__ = ["__version__", *_API, *_COMMANDS]


class _CommandModule(types.ModuleType):
    """A command's library module that, called, runs the command (`lawkit.api.<name>`)."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from lawkit import api

        return getattr(api, self.__name__.rpartition(".")[2])(*args, **kwargs)


class _Package(types.ModuleType):
    """The `lawkit` package: makes each command module callable as the import system binds it."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _COMMANDS and type(value) is types.ModuleType:
            value.__class__ = _CommandModule
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    if name in _COMMANDS:
        return importlib.import_module(f"lawkit.{name}")
    module = _API.get(name)
    if module is None:
        raise AttributeError(f"module 'lawkit' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
