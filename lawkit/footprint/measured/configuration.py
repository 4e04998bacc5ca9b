"""The configuration a measured process reads: the environment variables its Python code reads,
by name and context, and the process settings that move every step, taken as it enters steps.

A read is any way Python code learns a variable's value or presence: ``os.environ[name]``,
``.get``, ``in``, iteration, ``.copy()`` (iteration and a copy read every variable they yield),
``os.getenv`` and ``os.environb`` (both go through the same mapping class). ``os.environ`` and
``os.environb`` keep their identity (modules that did ``from os import environ`` before the hook
see the same object): only their class is swapped for a subclass whose reads note ``(name,
context)`` and the raw value first read there, in a dict; the sha256 is taken when the process
saves (`ConfigurationReads.to_json`), so a read costs a dict lookup and a tuple, not a hash.
What native code reads with ``getenv`` is not seen.

Which of these reads is configuration from outside the recorded command (the value the process
inherited, not one the program or `record` itself set) is decided by ``record`` afterwards.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

from lawkit.footprint.measured.markers import MARKERS, Context, Markers


class ConfigurationReads:
    """The environment variables read in one process, by name and context, and the settings
    taken as it entered steps."""

    def __init__(self, markers: Markers = MARKERS) -> None:
        self._markers = markers
        self._reads: dict[Context, dict[Any, bytes | str | None]] = {}
        """For each context, the raw value (as ``os.environ`` stores it) first read there of
        each encoded name; None: read as absent."""
        self._classes: list[tuple[Any, type]] = []
        self.settings: dict[str, Any] | None = None
        """The process settings as it first entered steps that its own code had not changed
        since it started (None: it never entered steps)."""
        self._hash_seed = "random"
        self._started: dict[str, Any] = {}

    def install(self) -> None:
        """Note every read of ``os.environ`` and ``os.environb`` from now on."""
        seed = os.environ.get("PYTHONHASHSEED", "random")  # fixed when the interpreter started
        self._hash_seed = "0" if not sys.flags.hash_randomization else seed or "random"
        self._started = process_settings(self._hash_seed)
        for mapping in (os.environ, getattr(os, "environb", None)):
            if mapping is not None and not isinstance(mapping, _Noting):
                base = type(mapping)
                mapping.__class__ = _noting_class(base, self._note, self._note_all)
                self._classes.append((mapping, base))

    def uninstall(self) -> None:
        """Give ``os.environ`` and ``os.environb`` their own class back."""
        for mapping, base in self._classes:
            mapping.__class__ = base
        self._classes = []

    def _note(self, key: Any, value: bytes | str | None) -> None:
        try:
            markers = self._markers
            context = (markers.phase, getattr(markers.local, "regions", ()))
            seen = self._reads.get(context)
            if seen is None:
                seen = self._reads.setdefault(context, {})
            if key not in seen:
                seen[key] = value
        except Exception:  # never raise into the engine's read
            return

    def _note_all(self, data: dict[Any, Any]) -> None:
        """Every variable read at once (an iteration, a copy): only those not yet read in
        this context are looked at one by one."""
        try:
            markers = self._markers
            context: Context = (markers.phase, getattr(markers.local, "regions", ()))
            seen = self._reads.get(context)
            if seen is None:
                seen = self._reads.setdefault(context, {})
            for key in data.keys() - seen.keys():
                value = data.get(key)
                if value is not None:
                    seen.setdefault(key, value)
        except Exception:  # never raise into the engine's read
            return

    def switched_phase(self, name: str) -> None:
        """The process entered phase ``name``: at its first ``steps``, take the settings. One
        the process's own code set before (``gc.set_threshold`` from a variable it read, a CPU
        pinning) follows from that code and those reads, which the footprint keeps, and is
        left out: what is kept is what the process was given."""
        if name == "steps" and self.settings is None:
            now = process_settings(self._hash_seed)
            self.settings = {k: v for k, v in now.items() if self._started.get(k) == v}

    def forked(self) -> None:
        """In a forked child: its reads are its own; it starts in ``steps``."""
        self._reads = {}
        self.settings = None
        self._started = process_settings(self._hash_seed)
        self.switched_phase("steps")

    def to_json(self) -> dict[str, Any]:
        """``{"environ": [[name, phase, regions, sha256 | None], ...], "settings": ...}``
        (read from a copy: other threads may still read)."""
        digests: dict[bytes | str, str] = {}
        environ = []
        for (phase, regions), seen in list(self._reads.items()):
            for key, value in list(seen.items()):
                environ.append([_name(key), phase, list(regions), self._digest(value, digests)])
        return {"environ": environ, "settings": self.settings}

    @staticmethod
    def _digest(value: bytes | str | None, digests: dict[bytes | str, str]) -> str | None:
        if value is None:
            return None
        digest = digests.get(value)
        if digest is None:
            raw = value if isinstance(value, bytes) else value.encode("utf-8", "surrogatepass")
            digest = digests[value] = hashlib.sha256(raw).hexdigest()
        return digest


def _name(key: Any) -> str:
    """A variable's name as ``os.environ`` spells it, from its encoded key."""
    return os.fsdecode(key) if isinstance(key, bytes) else str(key)


class _Noting:
    """The mark of a mapping whose reads are noted (installed once per process)."""

    __slots__ = ()


def _noting_class(base: type, note: Callable[[Any, bytes | str | None], None],
                  note_all: Callable[[dict[Any, Any]], None]) -> type:
    """A subclass of ``os._Environ`` whose item reads tell ``note`` the encoded name and the
    raw value (None: absent), and whose iteration and copy tell ``note_all`` (every variable);
    ``get``, ``in``, ``items``, ``setdefault`` and ``os.getenv`` read through these."""

    class NotingEnviron(base, _Noting):  # type: ignore[misc]
        __slots__ = ()

        def __getitem__(self, key: Any) -> Any:
            encoded = self.encodekey(key)
            value = self._data.get(encoded)
            note(encoded, value)
            if value is None:
                raise KeyError(key) from None
            return self.decodevalue(value)

        def __iter__(self) -> Iterator[Any]:
            note_all(self._data)
            return map(self.decodekey, list(self._data))

        def copy(self) -> dict[Any, Any]:
            data = dict(self._data)
            note_all(data)
            decodekey, decodevalue = self.decodekey, self.decodevalue
            return {decodekey(k): decodevalue(v) for k, v in data.items()}

    NotingEnviron.__name__ = NotingEnviron.__qualname__ = base.__name__
    NotingEnviron.__module__ = base.__module__
    return NotingEnviron


def process_settings(hash_seed: str) -> dict[str, Any]:
    """The settings that move every step of this process: its collector's thresholds and
    whether it runs, the switch interval, ``sys.flags``, the hash seed, the CPUs it may run
    on (None where the platform cannot say)."""
    flags = sys.flags
    names = getattr(type(flags), "__match_args__", ())
    affinity = getattr(os, "sched_getaffinity", None)
    try:
        cpus = sorted(affinity(0)) if affinity is not None else None
    except OSError:
        cpus = None
    return {"gc_threshold": list(gc.get_threshold()), "gc_enabled": gc.isenabled(),
            "switch_interval": sys.getswitchinterval(),
            "flags": {n: getattr(flags, n) for n in names}, "hash_seed": hash_seed,
            "cpus": cpus}
