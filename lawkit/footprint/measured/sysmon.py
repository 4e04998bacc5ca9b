"""The recorder of a measured process on Python 3.12+: ``sys.monitoring`` (PEP 669).

One ``PY_START`` or ``PY_RESUME`` event per code object (a generator resumed counts), whose
callback turns that code object's events off (``set_local_events`` to none, and ``DISABLE``),
so a code object costs one event until the next switch. That turns it off for every thread: it
is done only when no thread could run that code object in a context it has not been recorded
in before the next switch. That is every time while one context is live (no thread but
lawkit's own has a Python frame, or every such thread is in the same phase and regions, or
blocked in one of threading's waits); while several are (threads in different regions, or a
thread with none beside one in a region), only once the code object has run in each of them.
The live contexts are found at every switch, and a thread started from Python
(``_thread.start_new_thread``, an audit event) re-arms and adds its context, ``steps`` or
``startup`` with no region open. A thread blocked in one of threading's waits (`wait_code`)
leaves the live contexts until its wait's code goes on, a signal handler runs on it (every
handler tells the recorder first: `signalled`) or a collection starts on it, each of which
re-arms with it live. A generator resumed by ``throw`` or ``close`` fires ``PY_THROW``, which
cannot be set on a code object nor disabled: it is set for the process and attributed like
``PY_RESUME``, filtered to hashed code. The events are set on the hashed code objects only
(``set_local_events``, as each hashed module's code is executed: ``executing``, from the
``exec`` audit event, with every code object nested in it), so the rest of the process (the
standard library, dependencies) never fires one. At every phase switch and region enter or
exit, each code object turned off that has not run in every context live after the switch is
turned on again (`_rearm`); a thread entering a region turns off what has run there and in
every other live context (`Ledger.turn_off_seen`), so a region entered again fires nothing
for it; and every code object on a stack the switch concerns counts as running in what was
entered (all threads' stacks for a phase, the switching thread's for a region): a frame already
running at a switch, like a loop that calls ``phase("steps")``, runs on in the new context.
Events cover
every thread, including threads created from C; such a thread is known once one of its
callbacks fires, it runs ``PyRun_*`` code (an ``exec`` event) or it has a Python frame at a
phase switch (`_from_c`): then the phase with no region open stays live, and what ran in a
region before counts as run with none open too, since that thread may have run it while it
was turned off. Phases are process-wide, regions per thread; a region opened at start-up (a
warm-up) attributes runs as one opened in steps does.
Back in ``steps`` after a shutdown, the runs of that shutdown move to ``steps`` with no region
open.

A code object that has run in ``steps`` with no region open counts for every law from then on
(it is settled): a start of it before the next switch, in any context, is turned off at once
and noted nowhere new (it counts everywhere already), and at that switch its events are turned
off for good, so that no switch turns it on again and the regions it runs in later cost
nothing; a forked child arms them all again.

The tables of both tools are one class (`ledger.Ledger`, whose docstring names its invariants
and the tests that hold them), the threads' contexts another (`threads.Threads`). Each
callback fired is counted by kind in the context it fired in (`event_counts`), and each set of
live contexts with several in it is kept with its threads' names (`armed_threads`): what the
footprint's cost report reads. Before the live contexts change, the threads live in steps with
no region open while hashed code ran there are named (`unregioned_threads`: `Threads.look`),
and so is a thread whose stack a switch counts there. ``LAWKIT_SYSMON_LOG`` adds a log of every
monitoring call (`trace`).

Python code run inside one of the recorder's callbacks fires no event: a signal handler that
runs there is noted (`unseen`), and `record` refuses the process.

Only code objects whose file is under a hashed package's folder are kept; attribution to units
happens in `record` (``ran.unit_of_code``), not here.

The environment (which distributions ran, in which contexts) is seen the same way under a
second tool id (`ENV_TOOL_ID`), so that the hashed code's events stay as they were: every other
code object (but the standard library's and lawkit's) is armed as it is executed, and those
already loaded at start through their modules' functions; its first start in a context notes
its *file* for that context and turns the code object off (by file: a second code object of a
file seen there adds nothing); a switch turns it on again where its file has not run in every
live context. A file that has run in ``steps`` with no region open is settled: its
code objects are disarmed for good at the next switch, as hashed code is. Files map to
distributions at the end, in `record`. Where that tool id is taken, the process notes it
(`env_everywhere`): every distribution it loaded counts as run wherever it ran.

A call that would turn either tool's events off (``set_events``, ``set_local_events``,
``free_tool_id``, ``register_callback`` on its id) is let through and noted: `record` refuses
the process.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import operator
import os
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from lawkit.footprint.measured import patch
from lawkit.footprint.measured.ledger import ANY_STEPS, RESUME, START, THROW, Ledger, identity
from lawkit.footprint.measured.markers import Context
from lawkit.footprint.measured.recorder import hashed_files
from lawkit.footprint.measured.threads import FROM_C, Threads, own, wait_code
from lawkit.footprint.measured.trace import Trace

TOOL_ID = 4
"""The sys.monitoring tool id lawkit takes (0-2 and 5 are the debugger's, coverage's,
profiler's and optimizer's)."""
ENV_TOOL_ID = 3
"""The tool id of the environment's events (code outside the hashed files)."""
ENV_KIND = "env "
"""The prefix of the environment tool's event kinds in `event_counts`."""


class SysMonRecorder:
    """Which hashed code objects, and which files outside them, started or resumed in each
    context of this process."""

    name = "sys.monitoring"

    def __init__(self, roots: tuple[str, ...], phase: str, log: str | None = None) -> None:
        self._hashed = hashed_files(roots)
        self._tracked = env_files()
        self._phase = phase
        self._threads = Threads(phase, lambda context: self._code.table(context).fired,
                                self._relive, self._from_c, self._unregioned_runs)
        self.regions: set[str] = set()
        self.turned_off: list[str] = []
        self.steps_again: list[str] = []  # the runs of a shutdown left are moved in the ledgers
        self.unseen: list[str] = []
        self.env_everywhere = False
        """The environment's tool id was taken by another tool: every loaded distribution
        counts as run wherever the process ran."""
        self.entered: set[Context] = set()
        """Every context the process was in (a native library counts as run in each)."""
        mon: Any = getattr(sys, "monitoring")  # noqa: B009 (not in 3.11's typeshed)
        self._mon = mon
        self._trace = Trace(log) if log else None
        """The debug log of every monitoring call (``LAWKIT_SYSMON_LOG``), or None."""
        traced = self._trace.calls if self._trace is not None else _untraced
        # taken before `start` guards sys.monitoring's functions
        self._set_local_events: Callable[..., None] = traced(mon.set_local_events)
        self._set_events: Callable[..., None] = traced(mon.set_events)
        self._restart: Callable[[], None] = traced(mon.restart_events)
        self._register: Callable[..., Any] = mon.register_callback
        self._events = mon.events.PY_START | mon.events.PY_RESUME
        self._disable = mon.DISABLE
        self._code = Ledger(TOOL_ID, identity, self._threads, self._events,
                            self._set_local_events, self._disable)
        """The hashed code objects, by identity."""
        self._env = Ledger(ENV_TOOL_ID, operator.attrgetter("co_filename"), self._threads,
                           self._events, self._set_local_events, self._disable, firsts=True,
                           arms=lambda name: self._tracked(name) and not self._hashed(name))
        """The files outside the hashed ones, by name (a second code object of a file seen
        in a context adds nothing there), and each code object's first start (`env_codes`)."""
        self._env_on = False
        """The environment's tool id was taken: code outside the hashed files is armed."""
        self._copies = False
        """A copy of hashed code was built (``code.__new__``): its runs fire no local event,
        so ``PY_START`` and ``PY_RESUME`` are set for every code object, filtered to hashed
        files (`_on_any_start`)."""
        self._lived: frozenset[Context] = frozenset()  # the contexts live since the last switch
        self._callbacks: frozenset[CodeType] = frozenset(
            f.__code__ for f in (Ledger.started, SysMonRecorder._on_any_start,
                                 SysMonRecorder._on_throw, Threads.on_wait_call,
                                 Threads.on_wait_return, Threads.collecting))
        """The code of this recorder's callbacks: Python code run inside one fires no event."""

    def _callback(self, tool: int, event: str, function: Callable[..., Any]) -> None:
        """Register ``function`` for ``event`` (logged when tracing)."""
        if self._trace is not None:
            function = self._trace.callback(tool, event, function, self._disable)
        self._register(tool, getattr(self._mon.events, event), function)

    def start(self) -> None:
        """Take the tool id, arm each hashed module's code as it is executed, and count what
        is already running."""
        mon = self._mon
        mon.use_tool_id(TOOL_ID, "lawkit footprint")
        self._callback(TOOL_ID, "PY_START", functools.partial(self._code.started, START))
        self._callback(TOOL_ID, "PY_RESUME", functools.partial(self._code.started, RESUME))
        self._callback(TOOL_ID, "PY_THROW", self._on_throw)
        self._set_events(TOOL_ID, mon.events.PY_THROW)
        self._callback(TOOL_ID, "CALL", self._threads.on_wait_call)
        self._callback(TOOL_ID, "PY_RETURN", self._threads.on_wait_return)
        for code in wait_code():
            self._set_local_events(TOOL_ID, code, mon.events.CALL | mon.events.PY_RETURN)
        patch.monitoring_guarded(TOOL_ID, self.turned_off.append)
        patch.signals_watched(self.signalled)
        gc.callbacks.append(self._threads.collecting)
        try:
            mon.use_tool_id(ENV_TOOL_ID, "lawkit footprint environment")
        except ValueError:  # another tool holds it
            self.env_everywhere = True
        else:
            self._env_on = True
            self._callback(ENV_TOOL_ID, "PY_START", functools.partial(self._env.started, START))
            self._callback(ENV_TOOL_ID, "PY_RESUME",
                           functools.partial(self._env.started, RESUME))
            patch.monitoring_guarded(ENV_TOOL_ID, self.turned_off.append)
            for code in loaded_code(self._hashed, self._tracked):
                self._env.arm(code)
        threads = self._threads
        self.entered.add(threads.default)
        frames = sys._current_frames()
        lawkits = {t.ident for t in threading.enumerate() if own(t)}
        threads.threaded = any(i not in lawkits for i in frames if i != threads.ident())
        self._live_in(self._threads.live(frames))
        self._count_stacks(frames.items())

    def executing(self, code: object) -> None:
        """Code is about to be executed (the ``exec`` audit event, which the process's one
        audit hook passes on: each audit hook costs every audited event, ``frame.f_code``
        included): arm it if it is hashed, with every code object nested in it."""
        if not isinstance(code, CodeType):
            return
        self._threads.check()  # PyRun_* on a thread created from C raises it
        with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
            if self._hashed(code.co_filename):
                self._code.arm(code)
            elif self._env_on and self._tracked(code.co_filename):
                self._env.arm(code)

    def code_copied(self, filename: object) -> None:
        """A code object of ``filename`` is being built (``types.CodeType``, ``code.replace``):
        a hashed one is a copy of engine code that a frame evaluator (PEP 523: TorchDynamo)
        may run with no audit event, its original never starting. From then on every code
        object's start fires (`_on_any_start`), so that the copy's runs count for the unit it
        came from (by file, qualified name and first line, as the original's would)."""
        if self._copies or not isinstance(filename, str) or not self._hashed(filename):
            return
        self._copies = True
        with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
            self._callback(TOOL_ID, "PY_START", functools.partial(self._on_any_start, START))
            self._callback(TOOL_ID, "PY_RESUME", functools.partial(self._on_any_start, RESUME))
            self._set_events(TOOL_ID, self._mon.events.PY_THROW | self._events)

    def _on_any_start(self, kind: int, code: CodeType, offset: int) -> object:
        """Any code object started or resumed (once a copy of hashed code was built)."""
        if not self._hashed(code.co_filename):
            self._code.table(self._threads.here()).fired[kind] += 1
            return self._disable
        return self._code.started(kind, code, offset)

    def _on_throw(self, code: CodeType, offset: int, exc: BaseException) -> None:
        """A generator or coroutine resumed by ``throw`` or ``close`` (any code: the event
        cannot be set on a code object)."""
        context = self._threads.here()
        self._code.table(context).fired[THROW] += 1
        if self._hashed(code.co_filename):
            self._code.note(code, context)

    def signalled(self, frame: FrameType | None, python: bool) -> None:
        """A signal handler is about to run on this thread (the main one), Python code if
        ``python``: the thread is live again first (`woke`); and a Python handler run inside
        one of this recorder's callbacks, where no event fires, runs unseen (`record`
        refuses)."""
        self._threads.woke()
        f = frame
        while python and f is not None:
            if f.f_code in self._callbacks:
                self.unseen.append("a signal handler ran inside lawkit's own sys.monitoring "
                                   "callback, where no code it runs can be seen")
                return
            f = f.f_back

    def thread_started(self, args: tuple[Any, ...]) -> None:
        """A thread started from Python (its audit event's arguments, passed on by the
        process's one audit hook): it may run any code object in its context (the current
        phase, no region open) before the next switch, so re-arm with it live."""
        owner = getattr(args[0], "__self__", None) if args else None
        if isinstance(owner, threading.Thread) and own(owner):
            return
        threads = self._threads
        threads.look()
        threads.starting(owner)
        if threads.default in self._lived:
            return  # live already: what it ran is disabled for the new thread too
        self._live_in({*self._lived, threads.default})
        self._rearm()

    def _from_c(self) -> None:
        """A thread created from C (no region open) runs Python code: from now on the phase
        with no region open is live, and what ran in a region before counts as run with none
        open too, since that thread may have run it while it was turned off."""
        self._threads.look()
        runs = self._unregioned_runs()
        self._code.widen()
        if self._unregioned_runs() > runs:
            self._threads.noted_unregioned(FROM_C, self._unregioned_runs() - runs)
        self._env.widen()
        self._live_in({*self._lived, self._threads.default})
        self._rearm()

    def _relive(self, rearm: bool) -> None:
        """A thread entered or left one of threading's waits: the live contexts changed."""
        self._live_in(self._threads.live())
        if rearm:
            self._rearm()

    def _live_in(self, contexts: set[Context]) -> None:
        """The contexts in which a thread may run engine code before the next switch."""
        self._threads.noted_live(contexts)
        self._lived = frozenset(contexts)
        self._code.live_in(contexts)
        self._env.live_in(contexts)

    def switched_phase(self, name: str) -> None:
        """The process entered phase ``name``: re-arm, count every thread's stack in it. Back
        in ``steps`` after a shutdown, what ran in that shutdown ran in steps, no region
        open."""
        threads = self._threads
        threads.look()
        if name == "steps":
            if self._phase == "shutdown":
                self._code.steps_again()
                threads.look(any_region=True)  # what the threads live in shutdown ran
                self._env.steps_again()
                if any(c[0] == "shutdown" for c in self.entered):
                    self.entered = {c for c in self.entered if c[0] != "shutdown"}
                    self.entered.add(ANY_STEPS)
            self.regions.update(r for _, regions in list(threads.by_thread.values())
                                for r in regions)
        self._phase = name
        threads.switched_phase(name)
        self.entered.add(threads.default)
        self.entered.update(threads.by_thread.values())
        frames = sys._current_frames()
        self._live_in(self._threads.live(frames))
        self._rearm()
        self._count_stacks(frames.items())

    def switched_regions(self, regions: tuple[str, ...]) -> None:
        """This thread's open regions are now ``regions``: re-arm, count its stack there."""
        self._threads.look()
        if regions:
            if self._phase == "steps":
                self.regions.update(regions)
            self.entered.add((self._phase, regions))
        self._threads.switched_regions(self._phase, regions)
        self._live_in(self._threads.live())
        self._rearm()
        self._count_stacks([(self._threads.ident(), sys._getframe(1))])
        if regions and not self._copies:  # a copy's runs fire through process-wide events
            self._code.turn_off_seen((self._phase, regions))

    def _rearm(self) -> None:
        """Disarm what has run in steps with no region open, then turn on again what is off
        and has not run in every live context: hashed code by code object, the environment by
        file (`Ledger.rearm`); once a copy of hashed code was built, re-arm every code object
        (``restart_events``), since the process-wide events a copy fires through can only be
        turned off by ``DISABLE``."""
        self._code.rearm(turn_back_off=False)
        self._env.rearm(turn_back_off=True)
        if self._copies:
            self._restart()

    def forked(self) -> None:
        """In a forked child: forget the parent's runs; start in ``steps``, no region open."""
        if self._trace is not None:
            self._trace.forked()
        self._code.forked()
        self._env.forked()
        self._threads.forked()
        self.entered = {ANY_STEPS}
        self.regions = set()
        self._phase = "steps"
        self._live_in(self._threads.live())  # what the parent turned off is turned on again
        self._rearm()
        self._count_stacks([(self._threads.ident(), sys._getframe(1))])

    def save(self) -> None:
        """Nothing to stop (`runs` reads what was seen): name the threads that ran code in
        steps with no region open since the last switch."""
        self._threads.look()

    def resume(self) -> None:
        """Nothing to start again: the events stayed set."""

    def _count_stacks(self, stacks: Any) -> None:
        for ident, frame in stacks:
            context = self._threads.by_thread.get(ident, self._threads.default)
            runs = self._unregioned_runs() if context == ANY_STEPS else 0
            f: FrameType | None = frame
            while f is not None:
                code = f.f_code
                if self._hashed(code.co_filename):
                    self._code.note(code, context)
                elif self._env_on and self._tracked(code.co_filename):
                    self._env.note(code, context)
                f = f.f_back
            if context == ANY_STEPS and self._unregioned_runs() > runs:  # a waiting thread's too
                thread = self._threads.known.get(ident)
                self._threads.noted_unregioned(thread.name if thread is not None else FROM_C,
                                               self._unregioned_runs() - runs)

    def _unregioned_runs(self) -> int:
        """How many hashed code objects have run in steps with no region open."""
        return len(self._code.ran.get(ANY_STEPS) or ())

    def runs(self) -> list[list[Any]]:
        """``[filename, qualname, firstlineno, phase, regions]`` for each hashed code object and
        context it ran in."""
        return self._code.code_runs()

    def env_runs(self) -> list[list[Any]]:
        """``[filename, phase, regions]`` for each file outside the hashed ones whose code
        started, and each context it started in."""
        return self._env.key_runs()

    def env_codes(self) -> dict[str, list[list[Any]]]:
        """Where each code object outside the hashed files may have run: ``codes``, each one
        that started (`Ledger.first_runs`); ``live``, the last epoch each context was live in;
        ``settled``, ``[filename, epoch]``, each file settled."""
        return {"codes": self._env.first_runs(), "live": self._threads.live_epochs(),
                "settled": [[name, epoch] for name, epoch in list(self._env.settled.items())]}

    def event_counts(self) -> list[list[Any]]:
        """``[phase, regions, {kind: callbacks}]`` for each context a callback fired in (the
        environment's kinds prefixed `ENV_KIND`)."""
        counts = self._code.fired()
        for context, fired in self._env.fired().items():
            counts.setdefault(context, {}).update((ENV_KIND + k, n) for k, n in fired.items())
        return [[phase, list(regions), fired]
                for (phase, regions), fired in sorted(counts.items())]

    def armed_threads(self) -> list[list[Any]]:
        """``[phase, regions, thread names]``: the threads live in other contexts beside each
        context, which kept code armed there (`Threads.armed_threads`)."""
        return self._threads.armed_threads()

    def unregioned_threads(self) -> list[str]:
        """The names of the threads live in steps with no region open while hashed code ran
        there (`Threads.look`), sorted."""
        return sorted(self._threads.unregioned)


def env_files() -> Callable[[str], bool]:
    """Whether code of a file may belong to a distribution: not the standard library's (it is
    ``python``, the build), not lawkit's own, not generated (``<string>``), remembered by file
    name."""
    stdlib, site, own = _standard_folders()
    known: dict[str, bool] = {}

    def tracked(filename: str) -> bool:
        keep = known.get(filename)
        if keep is None:
            if not filename or filename.startswith("<"):
                keep = False
            else:
                real = os.path.realpath(filename)
                keep = known[filename] = not (real.startswith(own) or (
                    real.startswith(stdlib) and not real.startswith(site)
                    and f"{os.sep}site-packages{os.sep}" not in real
                    and f"{os.sep}dist-packages{os.sep}" not in real))
        return keep

    return tracked


def _standard_folders() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """The standard library's folders, the site folders, and lawkit's own package folders."""
    import site
    import sysconfig

    def folders(paths: list[str]) -> tuple[str, ...]:
        return tuple(sorted({os.path.join(os.path.realpath(p), "") for p in paths if p}))

    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    here = sysconfig.get_paths()
    sites = [here["purelib"], here["platlib"], *getattr(site, "getsitepackages", list)()]
    lawkit = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    return (folders([base["stdlib"], base["platstdlib"]]), folders(sites), folders([lawkit]))


def loaded_code(hashed: Callable[[str], bool],
                tracked: Callable[[str], bool]) -> list[CodeType]:
    """The code objects of the functions (and methods of classes) of the modules already
    loaded, outside the hashed files and the standard library: those a ``.pth`` file or the
    interpreter imported before the recorder started."""
    found: list[CodeType] = []
    seen: set[int] = set()
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if not isinstance(filename, str) or hashed(filename) or not tracked(filename):
            continue
        todo: list[object] = list(getattr(module, "__dict__", {}).values())
        while todo:
            obj = todo.pop()
            if identity(obj) in seen:
                continue
            seen.add(identity(obj))
            if isinstance(obj, (staticmethod, classmethod)):
                todo.append(obj.__func__)
            elif isinstance(obj, property):
                todo.extend((obj.fget, obj.fset, obj.fdel))
            elif isinstance(obj, type) and getattr(obj, "__module__", None) == module.__name__:
                todo.extend(vars(obj).values())
            else:
                code = getattr(obj, "__code__", None)
                if isinstance(code, CodeType) and getattr(obj, "__module__", None) == \
                        module.__name__:
                    found.append(code)
                    wrapped = getattr(obj, "__wrapped__", None)
                    if wrapped is not None:
                        todo.append(wrapped)
    return found


def _untraced(function: Callable[..., Any]) -> Callable[..., Any]:
    return function
