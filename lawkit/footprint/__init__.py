"""Footprints: which engine code ran while captures were taken, and what a change to the engine
touches.

This wing is light. May import: only the standard library, coverage.py (only to record),
``src_digest``, ``lawkit.errors`` and ``lawkit.config``; never numpy, pandas or scipy, and never
another wing. ``keying`` (review, rekey) and ``fitting`` (``fit --footprint``) use it through:

    units.units_of(source: bytes) -> list[Unit]           a file's units and their digests
    units.layout_only(old: bytes, new: bytes) -> bool     only comments, blank lines, docstrings
    record.record_footprint(ws, command, out, *, cwd=None) -> RecordReport
    document.read_footprint(path) / decode_footprint(raw, shown=) -> Footprint
    trees.work_tree_sources(config) / trees.rev_sources(config, rev) -> SourceTree
    verdict.diff_footprint(footprint, target, old_source=None) -> FootprintDiff
    verdict.diff_work_tree(ws, footprint) / verdict.diff_rev(ws, footprint, rev)
    history.git_old_source(config) -> old_source     the recorded bytes, found in git history
    binding.bind_footprint(ws, path, captures_digest) -> (Footprint, Binding)   for fit
    binding.law_file_verdict(ws, binding, target, read=None, old_source=None)
        -> (verdict, FootprintDiff | None)           for rekey and review; "unknown" unbound

An engine or harness marks where its steps begin with ``lawkit.footprint.phase("steps")``,
where they end with ``phase("shutdown")``, and the timed regions of a step with ``with
lawkit.footprint.region("sample_s"):`` (``lawkit.capture`` calls the same markers). Phases are
process-wide, regions per thread. A region may be entered in any phase: in start-up (a warm-up
through the step code) the recorder attributes what runs to its regions as in steps; in
shutdown a region is kept on the thread (so that one closed after ``phase("shutdown")`` exits
cleanly) but what runs there counts as shutdown whatever the regions. When no footprint is
being recorded a marker only keeps that state (no event, no I/O; `recording` says which); a
recorder that runs in the process is told of every switch.
"""

from __future__ import annotations

import os
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

PHASES = ("startup", "steps", "shutdown")
"""The phases of a recording: the main process starts in the first. What runs only in
``shutdown`` counts as not run, unless the process enters ``steps`` again."""


class RegionError(ValueError):
    """A region marker used out of place: exited without being entered, or not innermost."""


ANY_REGION = "*"
"""The region of a run in a phase with no region open on its thread."""
Context = tuple[str, tuple[str, ...]]
"""Where a run happened: a phase and the regions open on its thread, outermost first."""
OWN_THREAD = "lawkit-"
"""The name prefix of lawkit's own threads (the SIGTERM watch, a capture's flusher)."""
ENGINE_FREE = "lawkit_runs_no_engine_code"
"""A thread with this attribute true runs only lawkit's own code, never a hashed file: its
context does not count."""


class Recorder(Protocol):
    """Everything a recorder running in a measured process is told, and what it keeps.

    ``sys.monitoring`` (`lawkit.footprint.sysmon`) on 3.12+, coverage.py
    (`lawkit.footprint.cover`) on 3.11; the start-up hook (`lawkit.footprint.sitehook`) and
    the markers of this module talk to it through this protocol only.
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


_recorder: Recorder | None = None
"""Set by the start-up hook of `lawkit footprint record` when it measures this process."""
_phase = "startup"
_local = threading.local()


def recording() -> bool:
    """Whether this process is being recorded by `lawkit footprint record`."""
    return _recorder is not None


def phase(name: str) -> None:
    """Enter a phase (``"startup"``, ``"steps"`` or ``"shutdown"``) of the process; costs
    nothing when not recording."""
    global _phase
    if name not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {name!r}")
    _phase = name
    if _recorder is not None:
        _recorder.switched_phase(name)


def current_phase() -> str:
    """The process's phase: ``"startup"`` until ``phase("steps")`` (a measured child process
    starts in ``steps``)."""
    return _phase


def open_regions() -> tuple[str, ...]:
    """The regions open on this thread, outermost first."""
    regions: tuple[str, ...] = getattr(_local, "regions", ())
    return regions


def enter_region(name: str) -> None:
    """Open a region on this thread (in any phase)."""
    regions = (*getattr(_local, "regions", ()), name)
    _local.regions = regions
    if _recorder is not None:
        _recorder.switched_regions(regions)


def exit_region(name: str) -> None:
    """Close the innermost region of this thread, which must be ``name``."""
    regions: tuple[str, ...] = getattr(_local, "regions", ())
    if not regions or regions[-1] != name:
        open_ = regions[-1] if regions else "none"
        raise RegionError(f"region {name!r} exited, but the innermost open region is {open_}")
    regions = regions[:-1]
    _local.regions = regions
    if _recorder is not None:
        _recorder.switched_regions(regions)


@contextmanager
def region(name: str) -> Iterator[None]:
    """Mark a region of a step on this thread, in steps or in a warm-up at start-up (no timing:
    ``lawkit.capture`` times them)."""
    enter_region(name)
    try:
        yield
    finally:
        exit_region(name)
