"""Which contexts are live in a measured process on 3.12+ (`Threads`): the phase and regions of
each thread, and those in which some thread may run engine code before the next switch.

A thread's context is its phase and open regions (the process's phase, no region open, until
it enters one). The live contexts are those of the threads with a Python frame, but lawkit's own
and those blocked in one of threading's waits; with one engine thread, only its own. A thread
started from ``_thread.start_new_thread`` is not listed by ``threading``, nor one created from C
(seen once it runs Python code the recorder sees: `unknown`): once one is, the process's phase
with no region open stays live. Each set of live contexts with several in it is
kept with the names of the threads in each (`armed_threads`): a code object runs in each of
them before it is turned off, so those threads keep the others' code armed.

Before the live contexts change (`look`), if hashed code was noted in steps with no region
open since the last look, the names of the threads live there are kept (`unregioned`): which
thread ran it is not kept per callback, so every thread live there in that span is named.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Iterable
from types import CodeType, FrameType
from typing import Any

from lawkit.footprint.measured.ledger import CALL, RETURN
from lawkit.footprint.measured.markers import ENGINE_FREE, OWN_THREAD, Context
from lawkit.footprint.measured.recorder import ThreadEnds

RAW_THREAD = "a thread from _thread.start_new_thread"
FROM_C = "a thread started from C"
"""How `armed_threads` names the threads ``threading`` does not list."""


class Threads:
    """Each thread's context, and the contexts live now."""

    def __init__(self, phase: str, fired: Callable[[Context], list[int]],
                 relive: Callable[[bool], None], from_c: Callable[[], None],
                 unregioned_runs: Callable[[], int]) -> None:
        self._fired = fired
        """The counts of the callbacks fired in a context."""
        self._unregioned_runs = unregioned_runs
        """How many hashed code objects have run in steps with no region open."""
        self._looked = 0
        """`_unregioned_runs` at the last `look`."""
        self.unregioned: set[str] = set()
        """The names of the threads live in steps with no region open while hashed code ran
        there (`look`)."""
        self.from_c = False
        """A thread created from C was seen running Python code."""
        self._relive = relive
        """Find the live contexts again, and re-arm with them if told to."""
        self._from_c = from_c
        """Told once a thread created from C is seen running Python code."""
        self.known: dict[int, Any] = getattr(threading, "_active")  # noqa: B009 (private)
        """The threads ``threading`` lists, by ident (its own table, read in place)."""
        self.started: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
        """The threads started from Python: one that ``threading`` no longer lists but that is
        still alive is ending (its thread-local data being freed), not one created from C."""
        self.by_thread: dict[int, Context] = {}
        """The context of each thread with a region open."""
        self.default: Context = (phase, ())
        """The context of a thread with no region open."""
        self.ident = threading.get_ident
        self.threaded = False
        """An engine thread besides the first has been seen: switches look at every thread."""
        self.raw = False
        """A thread ``threading`` does not list has started (``_thread.start_new_thread``) or
        was seen running Python code (one created from C): the process's phase with no region
        open stays live."""
        self.waiting: set[int] = set()
        """Threads blocked in one of threading's waits: no Python code runs on them until the
        wait returns or a signal handler or a collection runs on them."""
        self.ends = ThreadEnds(lambda ident: self.by_thread.pop(ident, None))
        """A thread that ends with regions open leaves none to the next one given its ident."""
        self.epoch = 0
        """How many times the live contexts were found (`noted_live`)."""
        self.last_live: dict[Context, int] = {}
        """The last epoch each context was live in."""
        self._several: dict[frozenset[tuple[Context, str]], None] = {}
        """Each set of live contexts seen with several in it, as (context, thread name)."""

    def here(self) -> Context:
        """The calling thread's context."""
        return self.by_thread.get(self.ident(), self.default)

    def switched_phase(self, name: str) -> None:
        """The process entered phase ``name``: every thread keeps its regions in it."""
        self.default = (name, ())
        self.by_thread = {t: (name, c[1]) for t, c in list(self.by_thread.items())}

    def switched_regions(self, phase: str, regions: tuple[str, ...]) -> None:
        """The calling thread's open regions are now ``regions``."""
        ident = self.ident()
        if regions:
            self.by_thread[ident] = (phase, regions)
            self.ends.watch()
        else:
            self.by_thread.pop(ident, None)

    def forked(self) -> None:
        """In a forked child: the forking thread alone goes on, in steps, no region open."""
        self.unregioned = set()  # the parent's threads are the parent's
        self._looked = 0
        self.default = ("steps", ())
        self.by_thread = {}
        self.waiting = set()
        self.threaded = False
        self.last_live = {}

    def live(self, frames: dict[int, FrameType] | None = None) -> set[Context]:
        """The contexts in which a thread may run engine code before the next switch: those of
        the threads with a Python frame (``frames``: every thread's, at start-up and at a phase
        switch), but lawkit's own."""
        if not self.threaded:
            return {self.here()}
        waiting = self.waiting
        threads = threading.enumerate()
        if frames is not None:
            lawkits = {t.ident for t in threads if own(t)}
            idents = [i for i in frames if i not in lawkits and i not in waiting]
            if not self.raw and any(i not in self.known for i in idents):
                self.unknown()  # a thread from C with a Python frame
        else:
            # At a region switch, the threads threading knows: sys._current_frames() there made
            # CPython 3.12.1 crash (SIGSEGV, "deallocated BytesIO object has exported buffers")
            # in about every other run of the tutorial's harness (its worker process and
            # multiprocessing's threads running while its regions switch).
            idents = [t.ident for t in threads if t.ident and t.ident not in waiting
                      and not own(t)]
        by_thread, default = self.by_thread, self.default
        contexts = {by_thread.get(i, default) for i in idents}
        if self.raw:  # a thread from _thread.start_new_thread: threading lists none
            contexts.add(default)
        ident = self.ident()
        if ident not in waiting:
            contexts.add(by_thread.get(ident, default))
            idents.append(ident)
        if len(contexts) > 1:  # each kept armed by the threads in the others: noted, by name
            names = {t.ident: t.name for t in threads}
            named = {(by_thread.get(i, default), names.get(i, FROM_C)) for i in idents}
            if self.raw:
                named.add((default, RAW_THREAD))
            self._several[frozenset(named)] = None
        return contexts

    def starting(self, owner: object) -> None:
        """A thread is starting from Python: ``owner`` is its ``threading.Thread``, or
        anything else for one from ``_thread.start_new_thread``, which threading will not
        list."""
        self.threaded = True
        if isinstance(owner, threading.Thread):
            self.started.add(owner)
        else:
            self.raw = True

    def check(self) -> None:
        """Note the calling thread if ``threading`` does not list it (`unknown`)."""
        if not self.raw and self.ident() not in self.known:
            self.unknown()

    def unknown(self) -> None:
        """A thread ``threading`` does not list runs Python code: one created from C (a
        ``_thread`` one was announced at its start)."""
        ident = self.ident()
        if any(t.ident == ident and t.is_alive() for t in list(self.started)):
            return  # a thread of threading's, past its run, freeing its thread-local data
        self.raw = self.threaded = self.from_c = True
        self._from_c()

    def noted_live(self, contexts: Iterable[Context]) -> None:
        """A new epoch, in which ``contexts`` are live."""
        epoch = self.epoch = self.epoch + 1
        for context in contexts:
            self.last_live[context] = epoch

    def live_epochs(self) -> list[list[Any]]:
        """``[phase, regions, epoch]``: the last epoch each context was live in."""
        return [[phase, list(regions), epoch]
                for (phase, regions), epoch in list(self.last_live.items())]

    def on_wait_call(self, code: CodeType, offset: int, callable_: object,
                     arg0: object) -> None:
        """A call in one of threading's waits (`WAITS`): a call after the blocking one means
        this thread is back from it; the blocking one takes this thread's context out of the
        live ones until then."""
        ident = self.ident()
        self._fired(self.here())[CALL] += 1
        if ident in self.waiting:
            self._woken(ident)
            return
        if not self.threaded or getattr(callable_, "__name__", None) not in WAITS:
            return
        locked = getattr(getattr(callable_, "__self__", None), "locked", None)
        if locked is not None and not locked():  # a lock free now: no wait (or a short one)
            return
        self.look()
        self.waiting.add(ident)
        self._relive(False)

    def on_wait_return(self, code: CodeType, offset: int, retval: object) -> None:
        """One of threading's waits returned: this thread is back from it."""
        self._fired(self.here())[RETURN] += 1
        self.woke()

    def collecting(self, phase: str, info: dict[str, int]) -> None:
        """A collection starts or stops on this thread (``gc.callbacks``)."""
        if phase == "start":
            self.woke()

    def woke(self) -> None:
        """Python code is about to run on this thread outside the code of its wait (a signal
        handler, a collection's finalizers): if it was waiting, it is live again first."""
        ident = self.ident()
        if ident in self.waiting:
            self._woken(ident)

    def _woken(self, ident: int) -> None:
        """A thread back from its wait may run any code object in its context: re-arm with
        it live."""
        self.look()
        self.waiting.discard(ident)
        self._relive(True)

    def look(self, *, any_region: bool = False) -> None:
        """Before the live contexts change: if hashed code was noted in steps with no region
        open since the last look, keep the names of the threads live with no region open (with
        ``any_region``, of every live thread: a shutdown's runs moved to steps)."""
        runs = self._unregioned_runs()
        if runs == self._looked:
            return
        self._looked = runs
        by_thread, waiting = self.by_thread, self.waiting  # lawkit's own may look: at a save
        self.unregioned.update(
            t.name for t in threading.enumerate()
            if t.ident not in waiting and not own(t) and (any_region or t.ident not in by_thread))
        if self.raw:
            self.unregioned.add(FROM_C if self.from_c else RAW_THREAD)

    def noted_unregioned(self, name: str, runs: int) -> None:
        """``runs`` code objects were noted in steps with no region open for thread ``name``
        outside a callback (on its stack at a switch, or widened from its regions): keep its
        name, and count them as looked at."""
        self.unregioned.add(name)
        self._looked += runs

    def armed_threads(self) -> list[list[Any]]:
        """``[phase, regions, thread names]`` for each context some other thread was live
        beside: the names of the threads in the other contexts (each kept that context's code
        armed until it had run in theirs)."""
        armed: dict[Context, set[str]] = {}
        for named in list(self._several):
            for context, _ in named:
                armed.setdefault(context, set()).update(n for c, n in named if c != context)
        return [[phase, list(regions), sorted(names)]
                for (phase, regions), names in sorted(armed.items())]


WAITS = frozenset({"acquire", "join"})
"""The blocking calls in threading's waits: a lock's ``acquire`` (``Condition.wait``, so
``Event.wait``, ``Queue.get`` and ``Future.result`` too; ``Thread.join`` on 3.12) and a thread
handle's ``join`` (``Thread.join`` on 3.13)."""


def wait_code() -> list[CodeType]:
    """The code objects of threading's waits, whose calls of `WAITS` block."""
    names = ("Condition.wait", "Thread._wait_for_tstate_lock", "Thread.join")
    found = []
    for name in names:
        owner, _, method = name.partition(".")
        function = getattr(getattr(threading, owner), method, None)
        code = getattr(function, "__code__", None)
        if isinstance(code, CodeType):
            found.append(code)
    return found


def own(thread: threading.Thread) -> bool:
    """A thread of lawkit's own, which runs no engine code."""
    return thread.name.startswith(OWN_THREAD) or bool(getattr(thread, ENGINE_FREE, False))
