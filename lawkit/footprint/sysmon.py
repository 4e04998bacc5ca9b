"""The recorder of a measured process on Python 3.12+: ``sys.monitoring`` (PEP 669).

One ``PY_START`` or ``PY_RESUME`` event per code object (a generator resumed counts), each
answered with ``DISABLE``, so a code object costs one event until the next switch. ``DISABLE``
turns a code object's event off for every thread: it is answered only when no thread could run
that code object in a context it has not been recorded in before the next re-arm. That is every
time while one context is live (no thread but lawkit's own has a Python frame, or every such
thread is in the same phase and regions); while several are (threads in different regions, or a
thread with none beside one in a region), only once the code object has run in each of them.
The live contexts are found at every switch, and a thread started from Python
(``_thread.start_new_thread``, an audit event) re-arms and adds its context, ``steps`` or
``startup`` with no region open. A generator resumed by ``throw`` or ``close`` fires
``PY_THROW``, which cannot be set on a code object nor disabled: it is set for the process and
attributed like ``PY_RESUME``, filtered to hashed code. The events
are set on the hashed code objects only (``set_local_events``, as each hashed module's code is
executed: ``executing``, from the ``exec`` audit event, with every code object nested in
it), so the rest of the
process (the standard library, dependencies) never fires one, even after a re-arm. At every
phase switch and region enter or exit the events are re-armed (``restart_events``), and every
code object on a stack the switch concerns counts as running in what was entered (all threads'
stacks for a phase, the switching thread's for a region): a frame already running at a switch,
like a loop that calls ``phase("steps")``, runs on in the new context. Events cover every
thread, including threads started from C (but such a thread, not started from Python and with
no Python frame at a switch, is not known to be live: a code object it runs may have been
disabled by another thread's run in another context). Phases are process-wide, regions per thread;
a region opened at start-up (a warm-up) attributes runs as one opened in steps does. Back in
``steps`` after a shutdown, the runs of that shutdown move to ``steps`` with no region open.

A code object that has run in ``steps`` with no region open counts for every law from then on:
at the next switch its events are turned off for good (``set_local_events`` to none), so that
``restart_events`` no longer re-arms it and the regions it runs in later cost nothing. The
runs before that switch are recorded as before (in each live context); a forked child arms
them all again.

Only code objects whose file is under a hashed package's folder are kept; attribution to units
happens in `record` (``ran.unit_of_code``), not here. A call that would turn this tool's events
off (``set_events``, ``set_local_events``, ``free_tool_id``, ``register_callback`` on its id)
is let through and noted: `record` refuses the process.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from lawkit.footprint import ENGINE_FREE, OWN_THREAD, Context, ThreadEnds, hashed_files, patch

ANY_STEPS: Context = ("steps", ())
"""Steps with no region open: a run there counts for every law."""
TOOL_ID = 4
"""The sys.monitoring tool id lawkit takes (0-2 and 5 are the debugger's, coverage's,
profiler's and optimizer's)."""

_identity: Callable[[object], int] = object.__hash__
"""An object's identity as an int, unique among live objects, without ``id()``'s audit event."""

class SysMonRecorder:
    """Which hashed code objects started or resumed in each context of this process."""

    name = "sys.monitoring"

    def __init__(self, roots: tuple[str, ...], phase: str) -> None:
        self._hashed = hashed_files(roots)
        self._phase = phase
        self._contexts: dict[int, Context] = {}
        self._default: Context = (phase, ())
        self._ran: dict[Context, dict[int, CodeType]] = {}
        """The code objects run in each context, by identity (``object.__hash__``, unique among
        live objects: ``id()`` raises an audit event, a call of every audit hook in the process;
        a code object's own hash reads its bytecode, constants and names every time)."""
        self.regions: set[str] = set()
        self.turned_off: list[str] = []
        self.steps_again: list[str] = []  # the runs of a shutdown left are moved in `_ran`
        mon: Any = getattr(sys, "monitoring")  # noqa: B009 (not in 3.11's typeshed)
        self._mon = mon
        self._restart: Callable[[], None] = mon.restart_events
        self._set_local_events: Callable[..., None] = mon.set_local_events
        self._events = mon.events.PY_START | mon.events.PY_RESUME
        self._disable = mon.DISABLE
        self._ident = threading.get_ident
        self._others: tuple[dict[int, CodeType], ...] = ()
        """When several contexts are live, the code objects run in each of them (``DISABLE``
        only for one in all); empty when one is."""
        self._threaded = False
        """An engine thread besides the first has been seen: switches look at every thread."""
        self._settled: list[CodeType] = []
        """Code objects run in steps with no region open since the last switch: such a run
        counts for every law, so no later run in steps can add to it; each is disarmed for
        good (``set_local_events`` to none) at the next switch, before the re-arm."""
        self._disarmed: dict[int, CodeType] = {}
        """The code objects disarmed so: armed again in a forked child, which starts over."""
        self._raw_threads = False
        self._ends = ThreadEnds(lambda ident: self._contexts.pop(ident, None))
        """A thread that ends with regions open leaves none to the next one given its ident."""
        self._copies = False
        """A copy of hashed code was built (``code.__new__``): its runs fire no local event,
        so ``PY_START`` and ``PY_RESUME`` are set for every code object, filtered to hashed
        files (`_on_any_start`)."""
        self._set_events: Callable[..., None] = mon.set_events  # before `start` guards it
        self._register: Callable[..., Any] = mon.register_callback
        """A thread was started with ``_thread.start_new_thread`` (not listed by threading)."""

    def start(self) -> None:
        """Take the tool id, arm each hashed module's code as it is executed, and count what
        is already running."""
        mon = self._mon
        mon.use_tool_id(TOOL_ID, "lawkit footprint")
        mon.register_callback(TOOL_ID, mon.events.PY_START, self._on_start)
        mon.register_callback(TOOL_ID, mon.events.PY_RESUME, self._on_start)
        mon.register_callback(TOOL_ID, mon.events.PY_THROW, self._on_throw)
        mon.set_events(TOOL_ID, mon.events.PY_THROW)
        patch.monitoring_guarded(TOOL_ID, self.turned_off.append)
        frames = sys._current_frames()
        own = {t.ident for t in threading.enumerate() if _own(t)}
        self._threaded = any(i not in own for i in frames if i != self._ident())
        self._live(frames)
        self._count_stacks(frames.items())

    def executing(self, code: object) -> None:
        """Code is about to be executed (the ``exec`` audit event, which the process's one
        audit hook passes on: each audit hook costs every audited event, ``frame.f_code``
        included): arm it if it is hashed, with every code object nested in it."""
        if not isinstance(code, CodeType) or not self._hashed(code.co_filename):
            return
        with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
            self._arm(code)

    def code_copied(self, filename: object) -> None:
        """A code object of ``filename`` is being built (``types.CodeType``, ``code.replace``):
        a hashed one is a copy of engine code that a frame evaluator (PEP 523: TorchDynamo)
        may run with no audit event, its original never starting. From then on every code
        object's start fires (`_on_any_start`), so that the copy's runs count for the unit it
        came from (by file, qualified name and first line, as the original's would)."""
        if self._copies or not isinstance(filename, str) or not self._hashed(filename):
            return
        self._copies = True
        mon = self._mon
        with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
            self._register(TOOL_ID, mon.events.PY_START, self._on_any_start)
            self._register(TOOL_ID, mon.events.PY_RESUME, self._on_any_start)
            self._set_events(TOOL_ID, mon.events.PY_THROW | self._events)

    def _on_any_start(self, code: CodeType, offset: int) -> object:
        """Any code object started or resumed (once a copy of hashed code was built)."""
        if not self._hashed(code.co_filename):
            return self._disable
        return self._on_start(code, offset)

    def _arm(self, code: CodeType) -> None:
        """Set the events on a code object and on every code object nested in it."""
        todo = [code]
        while todo:
            c = todo.pop()
            self._set_local_events(TOOL_ID, c, self._events)
            todo.extend(k for k in c.co_consts if isinstance(k, CodeType))

    def _on_start(self, code: CodeType, offset: int) -> object:
        context = self._contexts.get(self._ident(), self._default)  # only hashed code fires
        seen = self._ran.get(context)
        if seen is None:
            seen = self._ran[context] = {}
        key = _identity(code)
        seen[key] = code
        if context == ANY_STEPS:  # counts for every law from now on: disarmed at the switch
            self._settled.append(code)
        others = self._others
        if others:  # several contexts live: disable once it has run in each
            for ran in others:
                if key not in ran:
                    return None
        return self._disable

    def _on_throw(self, code: CodeType, offset: int, exc: BaseException) -> None:
        """A generator or coroutine resumed by ``throw`` or ``close`` (any code: the event
        cannot be set on a code object)."""
        if self._hashed(code.co_filename):
            context = self._contexts.get(self._ident(), self._default)
            self._ran.setdefault(context, {})[_identity(code)] = code

    def thread_started(self, args: tuple[Any, ...]) -> None:
        """A thread started from Python (its audit event's arguments, passed on by the
        process's one audit hook): it may run any code object in its context (the current
        phase, no region open) before the next switch, so re-arm with it live."""
        owner = getattr(args[0], "__self__", None) if args else None
        if isinstance(owner, threading.Thread) and _own(owner):
            return
        self._threaded = True
        if not isinstance(owner, threading.Thread):
            self._raw_threads = True  # threading.enumerate() will not list it
        default = self._ran.setdefault(self._default, {})
        others = self._others
        if not others:
            here = self._contexts.get(self._ident(), self._default)
            if here == self._default:
                return  # the one live context: what it ran is disabled for the new thread too
            others = (self._ran.setdefault(here, {}),)
        elif any(ran is default for ran in others):
            return
        self._others = (*others, default)
        self._rearm()

    def _live(self, frames: dict[int, FrameType] | None = None) -> None:
        """Find the contexts in which a thread may run engine code before the next switch:
        those of the threads with a Python frame, but lawkit's own."""
        if not self._threaded:
            self._others = ()
            return
        if frames is not None:  # at start-up and at a phase switch: every thread's stack
            own = {t.ident for t in threading.enumerate() if _own(t)}
            idents = [ident for ident in frames if ident not in own]
        else:
            # At a region switch, the threads threading knows: sys._current_frames() there made
            # CPython 3.12.1 crash (SIGSEGV, "deallocated BytesIO object has exported buffers")
            # in about every other run of the tutorial's harness (its worker process and
            # multiprocessing's threads running while its regions switch).
            idents = [t.ident for t in threading.enumerate() if t.ident and not _own(t)]
        contexts = {self._contexts.get(ident, self._default) for ident in idents}
        if self._raw_threads:  # a thread from _thread.start_new_thread: threading lists none
            contexts.add(self._default)
        contexts.add(self._contexts.get(self._ident(), self._default))
        self._others = (tuple(self._ran.setdefault(c, {}) for c in contexts)
                        if len(contexts) > 1 else ())

    def switched_phase(self, name: str) -> None:
        """The process entered phase ``name``: re-arm, count every thread's stack in it. Back
        in ``steps`` after a shutdown, what ran in that shutdown ran in steps, no region
        open."""
        if name == "steps":
            if self._phase == "shutdown":
                steps = self._ran.setdefault(("steps", ()), {})
                for context in [c for c in self._ran if c[0] == "shutdown"]:
                    steps.update(self._ran.pop(context))
            self.regions.update(r for _, regions in self._contexts.values() for r in regions)
        self._phase = name
        self._default = (name, ())
        self._contexts = {t: (name, c[1]) for t, c in self._contexts.items()}
        frames = sys._current_frames()
        self._live(frames)
        self._rearm()
        self._count_stacks(frames.items())

    def switched_regions(self, regions: tuple[str, ...]) -> None:
        """This thread's open regions are now ``regions``: re-arm, count its stack there."""
        ident = self._ident()
        if regions:
            if self._phase == "steps":
                self.regions.update(regions)
            self._contexts[ident] = (self._phase, regions)
            self._ends.watch()
        else:
            self._contexts.pop(ident, None)
        self._live()
        self._rearm()
        self._count_stacks([(ident, sys._getframe(1))])

    def _rearm(self) -> None:
        """Disarm what has run in steps with no region open, then re-arm every other hashed
        code object (``restart_events``)."""
        settled = self._settled
        if settled:
            self._settled = []
            disarmed, set_local = self._disarmed, self._set_local_events
            for code in settled:
                key = _identity(code)
                if key not in disarmed:
                    disarmed[key] = code
                    with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
                        set_local(TOOL_ID, code, 0)
        self._restart()

    def forked(self) -> None:
        """In a forked child: forget the parent's runs; start in ``steps``, no region open."""
        self._settled = []
        for code in self._disarmed.values():  # the child's runs are its own: arm them all
            with contextlib.suppress(ValueError):
                self._set_local_events(TOOL_ID, code, self._events)
        self._disarmed = {}
        self._ran = {}
        self.regions = set()
        self._phase = "steps"
        self._default = ("steps", ())
        self._contexts = {}
        self._others = ()
        self._threaded = False  # the forking thread alone goes on
        self._rearm()
        self._count_stacks([(self._ident(), sys._getframe(1))])

    def save(self) -> None:
        """Nothing to stop: `runs` reads what was seen."""

    def resume(self) -> None:
        """Nothing to start again: the events stayed set."""

    def _count_stacks(self, stacks: Any) -> None:
        for ident, frame in stacks:
            context = self._contexts.get(ident, self._default)
            f: FrameType | None = frame
            while f is not None:
                code = f.f_code
                if self._hashed(code.co_filename):
                    self._ran.setdefault(context, {})[_identity(code)] = code
                f = f.f_back

    def runs(self) -> list[list[Any]]:
        """``[filename, qualname, firstlineno, phase, regions]`` for each code object and
        context it ran in."""
        return [[c.co_filename, c.co_qualname, c.co_firstlineno, phase, list(regions)]
                for (phase, regions), codes in self._ran.items() for c in codes.values()]

def _own(thread: threading.Thread) -> bool:
    """A thread of lawkit's own, which runs no engine code."""
    return thread.name.startswith(OWN_THREAD) or bool(getattr(thread, ENGINE_FREE, False))
