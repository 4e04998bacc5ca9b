"""What a recorder is told and keeps (`Recorder`), and the two helpers both recorders use: which
files are hashed (`hashed_files`) and when a thread ends (`ThreadEnds`)."""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from lawkit.footprint.measured.markers import Context


class Recorder(Protocol):
    """Everything a recorder running in a measured process is told, and what it keeps.

    ``sys.monitoring`` (`sysmon`) on 3.12+, coverage.py (`cover`) on 3.11; the measured
    process (`process`), its audit hook (`audit`) and the markers (`markers`) talk to it
    through this protocol only.
    """

    name: str
    """``"sys.monitoring"`` or ``"coverage"``, as the footprint's ``recorder`` says."""
    regions: set[str]
    """The regions open in ``steps`` while recording."""
    turned_off: list[str]
    """Calls that turned the measurement off, as messages name them (`record` refuses)."""
    unseen: list[str]
    """Python code that ran where the recorder cannot see it, as messages name it (`record`
    refuses)."""
    steps_again: list[str]
    """coverage.py contexts whose runs count as steps with no region open: the shutdowns the
    process left for ``steps`` again (a recorder that keeps its own runs moves them itself)."""
    env_everywhere: bool
    """Code outside the hashed files is not seen run (3.11's coverage.py, or tool id taken):
    every distribution the process loaded counts wherever the process ran."""
    entered: set[Context]
    """Every context the process was in (a native library counts in each)."""

    def start(self) -> None:
        """Start measuring, counting what already runs in the current context."""

    def switched_phase(self, name: str) -> None:
        """The process entered phase ``name``."""

    def switched_regions(self, regions: tuple[str, ...]) -> None:
        """This thread's open regions are now ``regions``."""

    def executing(self, code: object) -> None:
        """Code is about to be executed (the ``exec`` audit event and its kin)."""

    def code_copied(self, filename: object) -> None:
        """A code object of file ``filename`` is being built (``types.CodeType``,
        ``code.replace``: the ``code.__new__`` audit event): a copy of engine code, such as the
        one a frame evaluator (TorchDynamo) runs, whose runs must count for its unit."""

    def thread_started(self, args: tuple[Any, ...]) -> None:
        """A thread is being started from Python (its audit event's arguments)."""

    def forked(self) -> None:
        """In a forked child: start over in ``steps``, no region open."""

    def save(self) -> None:
        """The process is ending or being replaced: stop and keep what was measured."""

    def resume(self) -> None:
        """An exec failed after `save`: this image goes on, measured."""

    def runs(self) -> list[list[Any]]:
        """``[filename, qualname, firstlineno, phase, regions]`` for each code object and
        context it ran in."""

    def env_runs(self) -> list[list[Any]]:
        """``[filename, phase, regions]`` for each file outside the hashed ones whose code
        started, and each context it started in."""

    def event_counts(self) -> list[list[Any]]:
        """``[phase, regions, {event kind: callbacks fired}]`` for each context: what the
        recorder's own callbacks cost there (empty where it has none: coverage.py)."""

    def armed_threads(self) -> list[list[Any]]:
        """``[phase, regions, thread names]``: the threads live in other contexts beside each
        context, which kept code armed there until it had run in theirs."""

    def env_codes(self) -> dict[str, list[list[Any]]]:
        """Where each code object outside the hashed files may have run (`record` reads it
        with its file's contexts, `env_runs`)."""

    def unregioned_threads(self) -> list[str]:
        """The names of the threads that ran hashed code in steps with no region open (or were
        live there while some thread did), sorted: the footprint's ``unregioned_threads``."""


def hashed_files(roots: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a code object's file lies under one of the hashed packages' folders ``roots``
    (real paths), remembered by file name."""
    inside = tuple(os.path.join(r, "") for r in roots)
    known: dict[str, bool] = {}

    def hashed(filename: str) -> bool:
        keep = known.get(filename)
        if keep is None:
            keep = known[filename] = (os.path.realpath(filename).startswith(inside)
                                      if filename else False)
        return keep

    return hashed


class _End:
    """Held by one thread's thread-local data, which is freed when that thread ends."""

    __slots__ = ("__weakref__",)


class ThreadEnds:
    """Calls ``ended(ident)`` when a thread that called `watch` ends, before another thread
    can be given its ident: a recorder that keeps a context by ident forgets it then, so that
    a thread that ended inside a region (a suspended generator holding ``with region(...)``)
    leaves that region open for no other thread."""

    def __init__(self, ended: Callable[[int], object]) -> None:
        self._local = threading.local()
        self._refs: dict[int, weakref.ref[_End]] = {}
        self._ended = ended

    def watch(self) -> None:
        """Watch for the end of the calling thread (once per thread)."""
        if getattr(self._local, "end", None) is not None:
            return
        ident = threading.get_ident()
        end = self._local.end = _End()
        self._refs[ident] = weakref.ref(end, lambda ref: self._gone(ident, ref))

    def _gone(self, ident: int, ref: weakref.ref[_End]) -> None:
        if self._refs.get(ident) is ref:
            del self._refs[ident]
            self._ended(ident)
