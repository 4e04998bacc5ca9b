"""The recorder of a measured process on Python 3.11: coverage.py's tracer, with its dynamic
context naming the phase and the regions (``startup``, ``steps``, ``steps|outer,sample_s``).

coverage.py's context is process-wide, while regions are per thread: the context names every
region open on any thread, and ``*`` too when a thread that was running before the recorder
started (the main one) has none open, so a unit run by any thread is credited to every region it
might have run in (a wrong region costs a refit, a missing one could hide one). A thread started
while recording (``threading`` or ``_thread.start_new_thread``, which coverage.py alone does not
trace) is traced, and a profile hook of its own names the hashed code objects it calls in its
own phase and regions, as the 3.12 recorder does: so a pool's handler threads, which have no
region open, do not put every unit the main thread runs in ``*``. Threads started from C are
not seen. The threads that put runs in steps in ``*`` are named (`unregioned_threads`): those
not profiled with no region open at a switch in steps, and the profiled ones with none open
when, since the last switch (or at a profiled thread's end), a profiled thread ran hashed code
in steps with no region open. A call to ``sys.settrace`` or ``threading.settrace`` from
outside coverage.py and the threading module turns the tracer off, and is noted: `record`
refuses the process.
"""

from __future__ import annotations

import secrets
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from lawkit.footprint.measured import patch
from lawkit.footprint.measured.ledger import identity
from lawkit.footprint.measured.markers import ANY_REGION, ENGINE_FREE, PHASES, Context
from lawkit.footprint.measured.recorder import ThreadEnds, hashed_files


def context_name(phase: str, regions: set[str] | frozenset[str]) -> str:
    """The coverage.py context of a phase and regions (the phase alone: no region open). A
    shutdown's phase is ``shutdown@ID``, unique in the recording, so that its runs can count as
    steps if the process enters ``steps`` again (`Recorder.steps_again`)."""
    if regions <= {ANY_REGION}:
        return phase
    return f"{phase}|{','.join(sorted(regions))}"


def parse_context(name: str, steps_again: set[str] | frozenset[str] = frozenset()) -> Context:
    """A phase and regions from a context name; an unknown context counts as ``steps``, and so
    does a shutdown in ``steps_again``, with no region open."""
    phase, _, listed = name.partition("|")
    if phase in steps_again:
        return "steps", ()
    phase = phase.partition("@")[0]
    if phase not in PHASES:
        return "steps", ()  # a wrong steps only costs a refit
    return phase, tuple(r for r in listed.split(",") if r)


class CoverageRecorder:
    """Switches coverage.py's dynamic context at every phase switch and region enter or exit."""

    name = "coverage"

    def __init__(self, cov: Any, phase: str, roots: tuple[str, ...]) -> None:
        self._cov = cov
        self._phase = phase
        self._hashed = hashed_files(roots)
        self._regions: dict[int, tuple[str, ...]] = {}
        self._profiled: set[int] = set()
        """The threads whose hashed calls their own profile hook names."""
        self._ends = ThreadEnds(self._thread_ended)
        """A thread that ends with regions open leaves none to the next one given its ident."""
        self._ran: dict[Context, dict[int, CodeType]] = {}
        self.regions: set[str] = set()
        self.turned_off: list[str] = []
        self.unseen: list[str] = []
        self.steps_again: list[str] = []
        self._shutdown = ""
        """The current shutdown's context phase (``shutdown@ID``)."""
        self.env_everywhere = True
        """coverage.py measures only the hashed files: every loaded distribution counts as run
        in every context the process was in."""
        self.entered: set[Context] = set()
        """Every context the process was in."""
        self._unregioned: dict[str, set[str]] = {}
        """By phase (steps, shutdown), the names of the threads whose runs counted in ``*``."""
        self._looked = 0
        """How many hashed code objects the profiled threads had run in steps with no region
        open at the last `_look`."""

    def start(self) -> None:
        """Set the first context, trace ``_thread`` threads, note any tracer turned off."""
        self._switch()
        patch.threads_traced(self._traced)
        patch.trace_guarded(self.turned_off.append,
                            lambda: threading.get_ident() in self._profiled)

    def switched_phase(self, name: str) -> None:
        """The process entered phase ``name``: back in ``steps`` after a shutdown, what ran in
        that shutdown ran in steps, no region open."""
        self._look()
        if name == "shutdown" and self._phase != "shutdown":
            self._shutdown = f"shutdown@{secrets.token_hex(6)}"
        elif name == "steps":
            if self._phase == "shutdown":
                self.steps_again.append(self._shutdown)
                steps = self._ran.setdefault(("steps", ()), {})
                for context in [c for c in self._ran if c[0] == "shutdown"]:
                    steps.update(self._ran.pop(context))
                self.entered = {c for c in self.entered if c[0] != "shutdown"}
                self.entered.add(("steps", ()))
                self._unregioned.setdefault("steps", set()).update(
                    self._unregioned.pop("shutdown", set()))
            self.regions.update(r for regions in self._regions.values() for r in regions)
        self._phase = name
        self._switch()

    def switched_regions(self, regions: tuple[str, ...]) -> None:
        """This thread's open regions are now ``regions``."""
        self._look()
        ident = threading.get_ident()
        if regions:
            if self._phase == "steps":
                self.regions.update(regions)
            self._regions[ident] = regions
            self._ends.watch()
        else:
            self._regions.pop(ident, None)
        self._switch()

    def _thread_ended(self, ident: int) -> None:
        """A thread ended with regions open: they are no longer open anywhere."""
        if self._regions.pop(ident, None) is not None:
            self._switch()

    def executing(self, code: object) -> None:
        """Nothing to arm: the tracer sees every hashed file."""

    def code_copied(self, filename: object) -> None:
        """Nothing to arm: the tracer sees every frame of a hashed file, copies too."""

    def thread_started(self, args: tuple[Any, ...]) -> None:
        """Nothing: `start` wrapped the thread starters, which switch the context."""

    def forked(self) -> None:
        """In a forked child (where coverage.py's fork patch started a measurement of its
        own): ``steps``, no region open."""
        self._cov = type(self._cov).current()
        self._phase = "steps"
        self._regions = {}
        self._profiled = set()  # the forking thread alone goes on, and was not profiled
        self._ran = {}
        self.regions = set()
        self.steps_again = []
        self.entered = set()
        self._unregioned = {}
        self._looked = 0
        self._switch()

    def save(self) -> None:
        """Stop the tracer and write coverage.py's data file."""
        self._look()
        self._cov.stop()
        self._cov.save()

    def resume(self) -> None:
        """Trace again (an exec failed after `save`)."""
        self._cov.start()

    def runs(self) -> list[list[Any]]:
        """``[filename, qualname, firstlineno, phase, regions]`` for each hashed code object the
        threads started while recording called, and the context it ran in (the arcs of every
        thread are in coverage.py's data file)."""
        return [[c.co_filename, c.co_qualname, c.co_firstlineno, phase, list(regions)]
                for (phase, regions), codes in self._ran.items() for c in codes.values()]

    def env_runs(self) -> list[list[Any]]:
        """Nothing: code outside the hashed files is not measured (`env_everywhere`)."""
        return []

    def event_counts(self) -> list[list[Any]]:
        """Nothing: coverage.py's tracer fires no callback of lawkit's to count."""
        return []

    def armed_threads(self) -> list[list[Any]]:
        """Nothing: the tracer traces every thread's every line, whatever the contexts."""
        return []

    def env_codes(self) -> dict[str, list[list[Any]]]:
        """Nothing: code outside the hashed files is not measured (`env_everywhere`)."""
        return {}

    def unregioned_threads(self) -> list[str]:
        """The names of the threads whose runs in steps counted in ``*``, sorted."""
        return sorted(self._unregioned.get("steps", ()))

    def _look(self) -> None:
        """Before a switch: if a profiled thread ran hashed code in steps with no region open
        since the last look, name the profiled threads with none open."""
        runs = len(self._ran.get(("steps", ()), ()))
        if runs == self._looked:
            return
        self._looked = runs
        self._unregioned.setdefault("steps", set()).update(
            t.name for t in threading.enumerate()
            if t.ident in self._profiled and t.ident not in self._regions)

    def _switch(self) -> None:
        names: set[str] = {r for regions in self._regions.values() for r in regions}
        bare = [t.name for t in threading.enumerate() if t.ident not in self._regions
                and t.ident not in self._profiled and not getattr(t, ENGINE_FREE, False)]
        if bare:
            names.add(ANY_REGION)
            if self._phase != "startup":
                self._unregioned.setdefault(self._phase, set()).update(bare)
        phase = self._shutdown if self._phase == "shutdown" else self._phase
        self.entered.update((self._phase, () if r == ANY_REGION else (r,)) for r in names)
        if not names:
            self.entered.add((self._phase, ()))
        self._cov.switch_context(context_name(phase, names))

    def _traced(self, function: Callable[..., Any], tracer: Any) -> Callable[..., Any]:
        """``function`` run on a new thread under ``tracer`` and this recorder's profile hook,
        which names the hashed code it calls in its own phase and regions."""

        def run(*a: Any, **k: Any) -> Any:
            if tracer is not None:
                patch.real_settrace(tracer)
            ident = threading.get_ident()
            self._profiled.add(ident)
            patch.real_setprofile(self._profile)
            try:
                return function(*a, **k)
            finally:
                self._look()  # before this thread's name is gone
                hook = sys.getprofile()
                if hook != self._profile:  # a profiler took this thread's hook: unseen runs
                    self.turned_off.append(f"a profile hook ({_named(hook)}) replaced lawkit's "
                                           "on a thread: sys.setprofile, threading.setprofile, "
                                           "or cProfile")
                patch.real_setprofile(None)
                self._profiled.discard(ident)

        return run

    def _profile(self, frame: FrameType, event: str, arg: Any) -> None:
        """A profiled thread called (or resumed) ``frame``'s code: note it if it is hashed."""
        if event != "call":
            return
        code = frame.f_code
        if self._hashed(code.co_filename):
            context = (self._phase, self._regions.get(threading.get_ident(), ()))
            self._ran.setdefault(context, {})[identity(code)] = code


def _named(hook: object) -> str:
    """A profile hook as a message names it."""
    return getattr(hook, "__qualname__", None) or type(hook).__name__
