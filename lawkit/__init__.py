"""lawkit: fit, key, check and review the host laws of an inference-engine simulator.

The public API, loaded lazily so that `lawkit digest` and `lawkit check` start fast: importing
`lawkit` costs nothing until a name is used.

    law = lawkit.load("laws/a100.yaml").law("schedule_s[microsoft/phi-2,1]")
    law.predict({"batch_size": 48})                  # a float; LawDomainWarning outside
    report = lawkit.score("laws/a100.yaml", ["captures/new.csv"], max_mape=0.1)
    lawkit.check().ok, lawkit.digest().digest

Every name below is a function or a class; the code lives in the wings (`lawkit.lawfiles`,
`lawkit.keying`, `lawkit.fitting`, `lawkit.footprint`), whose modules are never attributes of
this package under an API name.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from lawkit._version import __version__

if TYPE_CHECKING:
    from lawkit.api import check, digest, fit, rekey, review, score
    from lawkit.errors import LawkitError
    from lawkit.lawfiles.lawfile import Law, LawFile, load
    from lawkit.lawfiles.predict import LawDomainError, LawDomainWarning

_EXPORTS = {
    "digest": "lawkit.api",
    "check": "lawkit.api",
    "rekey": "lawkit.api",
    "review": "lawkit.api",
    "fit": "lawkit.api",
    "score": "lawkit.api",
    "load": "lawkit.lawfiles.lawfile",
    "LawFile": "lawkit.lawfiles.lawfile",
    "Law": "lawkit.lawfiles.lawfile",
    "LawkitError": "lawkit.errors",
    "LawDomainWarning": "lawkit.lawfiles.predict",
    "LawDomainError": "lawkit.lawfiles.predict",
}

__all__ = [
    "Law",
    "LawDomainError",
    "LawDomainWarning",
    "LawFile",
    "LawkitError",
    "__version__",
    "check",
    "digest",
    "fit",
    "load",
    "rekey",
    "review",
    "score",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lawkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
