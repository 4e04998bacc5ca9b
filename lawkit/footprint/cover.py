"""The recorder of a measured process on Python 3.11: coverage.py's tracer, with its dynamic
context naming the phase and the regions (``startup``, ``steps``, ``steps|outer,sample_s``).

coverage.py's context is process-wide, while regions are per thread: the context of ``steps``
names every region open on any thread, and ``*`` too when a thread that was running before the
recorder started (the main one) has none open, so a unit run by any thread is credited to every
region it might have run in (a wrong region costs a refit, a missing one could hide one). A
thread started while recording (``threading`` or ``_thread.start_new_thread``, which coverage.py
alone does not trace) is traced, and a profile hook of its own names the hashed code objects it
calls in its own phase and regions, as the 3.12 recorder does: so a pool's handler threads, which
have no region open, do not put every unit the main thread runs in ``*``. Threads started from C
are not seen. A call
to ``sys.settrace`` or ``threading.settrace`` from outside coverage.py and the threading module
turns the tracer off, and is noted: `record` refuses the process.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from lawkit.footprint import PHASES

ANY_REGION = "*"
ENGINE_FREE = "lawkit_runs_no_engine_code"
"""The attribute, true on a thread that runs only lawkit's own code (never a hashed file)."""


def context_name(phase: str, regions: set[str] | frozenset[str]) -> str:
    """The coverage.py context of a phase and regions (``steps`` alone: no region open)."""
    if phase != "steps" or regions <= {ANY_REGION}:
        return phase
    return f"{phase}|{','.join(sorted(regions))}"


def parse_context(name: str) -> tuple[str, tuple[str, ...]]:
    """A phase and regions from a context name; an unknown context counts as ``steps``."""
    phase, _, listed = name.partition("|")
    if phase not in PHASES:
        return "steps", ()  # a wrong steps only costs a refit
    return phase, tuple(r for r in listed.split(",") if r)


class CoverageRecorder:
    """Switches coverage.py's dynamic context at every phase switch and region enter or exit."""

    name = "coverage"

    def __init__(self, cov: Any, phase: str, roots: tuple[str, ...]) -> None:
        self._cov = cov
        self._phase = phase
        self._roots = tuple(os.path.join(r, "") for r in roots)
        self._files: dict[str, bool] = {}
        self._regions: dict[int, tuple[str, ...]] = {}
        self._profiled: set[int] = set()
        """The threads whose hashed calls their own profile hook names."""
        self._ran: dict[tuple[str, tuple[str, ...]], dict[int, CodeType]] = {}
        self.regions: set[str] = set()
        self.turned_off: list[str] = []

    def start(self) -> None:
        """Set the first context, trace ``_thread`` threads, note any tracer turned off."""
        self._switch()
        self._trace_raw_threads()
        self._guard()

    def switched_phase(self, name: str) -> None:
        """The process entered phase ``name``."""
        self._phase = name
        self._switch()

    def switched_regions(self, regions: tuple[str, ...]) -> None:
        """This thread's open regions are now ``regions``."""
        ident = threading.get_ident()
        if regions:
            self.regions.update(regions)
            self._regions[ident] = regions
        else:
            self._regions.pop(ident, None)
        self._switch()

    def forked(self) -> None:
        """In a forked child (where coverage.py's fork patch started a measurement of its
        own): ``steps``, no region open."""
        import coverage

        self._cov = coverage.Coverage.current()
        self._phase = "steps"
        self._regions = {}
        self._profiled = set()  # the forking thread alone goes on, and was not profiled
        self._ran = {}
        self.regions = set()
        self._switch()

    def runs(self) -> list[list[Any]]:
        """``[filename, qualname, firstlineno, phase, regions]`` for each hashed code object the
        threads started while recording called, and the context it ran in (the arcs of every
        thread are in coverage.py's data file)."""
        return [[c.co_filename, c.co_qualname, c.co_firstlineno, phase, list(regions)]
                for (phase, regions), codes in self._ran.items() for c in codes.values()]

    def _switch(self) -> None:
        names: set[str] = {r for regions in self._regions.values() for r in regions}
        if any(t.ident not in self._regions for t in threading.enumerate()
               if t.ident not in self._profiled and not getattr(t, ENGINE_FREE, False)):
            names.add(ANY_REGION)
        self._cov.switch_context(context_name(self._phase, names))

    def _trace_raw_threads(self) -> None:
        """Trace threads started with ``_thread.start_new_thread``, and switch the context as
        any thread starts (it has no region open: the context gains ``*``)."""
        import _thread

        _thread.start_new_thread = self._starting(_thread.start_new_thread, trace=True)
        start = getattr(threading, "_start_new_thread", None)
        if start is not None:  # what threading.Thread calls (its bootstrap sets the tracer)
            # not in typeshed: an attribute of threading's internals
            setattr(threading, "_start_new_thread",  # noqa: B010
                    self._starting(start, trace=False))

    def _starting(self, real: Callable[..., int], *, trace: bool) -> Callable[..., int]:
        def start_new_thread(function: Callable[..., Any], args: tuple[Any, ...],
                             kwargs: dict[str, Any] | None = None) -> int:
            hook = threading.gettrace() if trace else None

            def run(*a: Any, **k: Any) -> Any:
                if hook is not None:
                    _real_settrace(hook)
                ident = threading.get_ident()
                self._profiled.add(ident)
                _real_setprofile(self._profile)
                try:
                    return function(*a, **k)
                finally:
                    _real_setprofile(None)
                    self._profiled.discard(ident)

            return real(run, args, kwargs or {})

        return start_new_thread

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        """A profiled thread called (or resumed) ``frame``'s code: note it if it is hashed."""
        if event != "call":
            return
        code = frame.f_code
        keep = self._files.get(code.co_filename)
        if keep is None:
            name = code.co_filename
            keep = os.path.realpath(name).startswith(self._roots) if name else False
            self._files[code.co_filename] = keep
        if keep:
            context = (self._phase, self._regions.get(threading.get_ident(), ()))
            self._ran.setdefault(context, {})[id(code)] = code

    def _guard(self) -> None:
        def settrace(fn: Any) -> None:
            self._check("sys.settrace", fn)
            _real_settrace(fn)

        def setprofile(fn: Any) -> None:
            if threading.get_ident() in self._profiled:
                self._check("sys.setprofile", fn)
            _real_setprofile(fn)

        def thread_settrace(fn: Any) -> None:  # typeshed: a TraceFunction or None
            self._check("threading.settrace", fn)
            _real_thread_settrace(fn)

        sys.settrace = settrace
        sys.setprofile = setprofile
        threading.settrace = thread_settrace  # type: ignore[assignment]

    def _check(self, name: str, fn: Any) -> None:
        caller = sys._getframe(2).f_globals.get("__name__", "")
        if not (caller == "threading" or caller.startswith("coverage")):
            self.turned_off.append(f"{name}({getattr(fn, '__name__', fn)!r})")


_real_settrace = sys.settrace
_real_setprofile = sys.setprofile
_real_thread_settrace = threading.settrace
