"""The configuration a recording read (footprint schema 3), as the footprint keeps it: each
environment variable whose value came from outside the recorded command, by name, with the
sha256 of that value (or ``absent``, or ``hidden`` for a secret's name), and the phases and
regions it was read in; and the process settings as the steps began.

Built by ``record``'s own process from what each measured process saved
(``measured.configuration``). A read counts only where the value read is the one `record`
itself was started with: a value the program set (``os.environ["X"] = ...`` before reading it,
in this process or in a parent that started it), or that `record` set for the recording
(``PYTHONPATH``, lawkit's own variables), follows from code and other reads, not from outside.
"""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Iterable, Mapping
from typing import Any

from lawkit.footprint.document import Configuration, EnvRead, sort_phases
from lawkit.footprint.measured.markers import Context
from lawkit.footprint.ran import regions_in

SECRETS = ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*CREDENTIAL*")
"""Names whose value a footprint never keeps (case-insensitive), unless ``[footprint] environ``
lists them."""
ABSENT, HIDDEN = "absent", "hidden"


def is_secret(name: str) -> bool:
    """Whether a variable's name is a secret's (`SECRETS`)."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in SECRETS)


def value_digest(value: bytes | None) -> str:
    """What a footprint keeps of a value: its sha256, or ``absent``."""
    return ABSENT if value is None else hashlib.sha256(value).hexdigest()


def configuration_of(saved: Iterable[Mapping[str, Any]], outside: Mapping[bytes, bytes], *,
                     shown: Iterable[str] = ()) -> Configuration:
    """The configuration of a recording from each process's saved reads and settings (the
    main process's first), judged against the environment `record` was started with
    (``outside``, as ``os.environb``); ``shown``: secrets' names whose value is kept."""
    kept = frozenset(shown)
    contexts: dict[str, set[Context]] = {}
    settings: Mapping[str, Any] | None = None
    for doc in saved:
        for name, phase, regions, digest in doc.get("environ", []):
            if digest == _digest(outside.get(os.fsencode(name))):
                contexts.setdefault(name, set()).add((phase, tuple(regions)))
        if settings is None and isinstance(doc.get("settings"), dict):
            settings = doc["settings"]
    environ: dict[str, EnvRead] = {}
    for name, where in sorted(contexts.items()):
        phases = sort_phases({p for p, _ in where})
        if not phases:  # read only in a shutdown: not read
            continue
        value = (HIDDEN if is_secret(name) and name not in kept
                 else value_digest(outside.get(os.fsencode(name))))
        environ[name] = EnvRead(value, phases, regions_in(where, "steps"),
                                regions_in(where, "startup"))
    return Configuration(environ, dict(settings or {}))


def _digest(value: bytes | None) -> str | None:
    """A value as a measured process saves it: its sha256, None when absent."""
    return None if value is None else hashlib.sha256(value).hexdigest()
