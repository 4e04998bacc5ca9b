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
every other live context (`_turn_off_seen`), so a region entered again fires nothing for it;
and every code object on a stack the switch concerns counts as running in what was entered
(all threads' stacks for a phase, the switching thread's for a region): a frame already running
at a switch, like a loop that calls ``phase("steps")``, runs on in the new context. Events cover
every thread, including threads started from C (but such a thread, not started from Python and
with no Python frame at a switch, is not known to be live: a code object it runs may have been
turned off by another thread's run in another context). Phases are process-wide, regions per
thread; a region opened at start-up (a warm-up) attributes runs as one opened in steps does.
Back in ``steps`` after a shutdown, the runs of that shutdown move to ``steps`` with no region
open.

A code object that has run in ``steps`` with no region open counts for every law from then on:
at the next switch its events are turned off for good, so that no switch turns it on again and
the regions it runs in later cost nothing. The runs before that switch are recorded as before
(in each live context); a forked child arms them all again.

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
import gc
import os
import sys
import threading
from collections.abc import Callable
from types import CodeType, FrameType
from typing import Any

from lawkit.footprint.measured import patch
from lawkit.footprint.measured.markers import ENGINE_FREE, OWN_THREAD, Context
from lawkit.footprint.measured.recorder import ThreadEnds, hashed_files

ANY_STEPS: Context = ("steps", ())
"""Steps with no region open: a run there counts for every law."""
TOOL_ID = 4
"""The sys.monitoring tool id lawkit takes (0-2 and 5 are the debugger's, coverage's,
profiler's and optimizer's)."""
ENV_TOOL_ID = 3
"""The tool id of the environment's events (code outside the hashed files)."""

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
        self._off: dict[int, CodeType] = {}
        """Code objects turned off (``set_local_events`` to none) until a switch: each has run
        in every live context, so it has nothing to add until then. At each switch, those
        that have not run in every context live after it are turned on again (`_rearm`), and
        a thread entering a region turns off what has run there before (`_turn_off_seen`):
        its runs in the region fire no event at all. No ``restart_events``, which makes every
        code object of the process instrument itself again as it next runs."""
        self._live_ran: tuple[dict[int, CodeType], ...] = ()
        """The code objects run in each live context (`_others`, also when there is one)."""
        self._raw_threads = False
        self._ends = ThreadEnds(lambda ident: self._contexts.pop(ident, None))
        """A thread that ends with regions open leaves none to the next one given its ident."""
        self._copies = False
        """A copy of hashed code was built (``code.__new__``): its runs fire no local event,
        so ``PY_START`` and ``PY_RESUME`` are set for every code object, filtered to hashed
        files (`_on_any_start`)."""
        self._set_events: Callable[..., None] = mon.set_events  # before `start` guards it
        self._env = False
        """The environment's tool id was taken: code outside the hashed files is armed."""
        self.env_everywhere = False
        """It was not (another tool holds it): every loaded distribution counts everywhere."""
        self._tracked = env_files()
        self._env_ran: dict[Context, dict[str, None]] = {}
        """The files outside the hashed ones whose code started in each context."""
        self._env_others: tuple[dict[str, None], ...] = ()
        self._env_live: tuple[dict[str, None], ...] = ()
        self._env_codes: dict[str, dict[int, CodeType]] = {}
        """The code objects outside the hashed files turned off at least once, by file (a
        file's table only grows, so that a callback on another thread adds to the one a switch
        reads)."""
        self._env_off: dict[str, bool] = {}
        """The files some of whose code objects may be turned off: at a switch where such a
        file has not run in every live context, all of them are turned on again."""
        self._env_on: dict[str, bool] = {}
        """The files whose code objects were turned on again so: at a later switch where the
        file has run in every live context, all of them are turned off (a region entered again
        fires nothing for them). A switch costs the files it turns on or off, not the files
        off (tens of thousands of a framework's code objects, where the engine runs on one)."""
        self._env_started: dict[int, tuple[CodeType, int, Context]] = {}
        """Every code object outside the hashed files that started, with the epoch and the
        context of its first start. A file's code is turned off and on by file, so a code
        object's later runs may fire nothing; they can only be in a context its file ran in
        and that was live since its first start (`_last_live`), or, once its file is settled,
        anywhere in steps: what `record` reads, by code object, from `env_codes`."""
        self._epoch = 0
        """How many times the live contexts were found (`_live`)."""
        self._last_live: dict[Context, int] = {}
        """The last epoch each context was live in."""
        self._env_settled_at: dict[str, int] = {}
        """The epoch each file was settled in."""
        self._env_settled: set[str] = set()
        """Files that ran in steps with no region open: nothing more to learn from them."""
        self._env_disarm: list[CodeType] = []
        self._env_disarmed: dict[int, CodeType] = {}
        self.entered: set[Context] = set()
        """Every context the process was in (a native library counts as run in each)."""
        self._register: Callable[..., Any] = mon.register_callback
        self._waiting: set[int] = set()
        """Threads blocked in one of threading's waits (`WAITS`): no Python code runs on them
        until the wait returns (`_on_wait_return`) or a signal handler runs (`signalled`), so
        their contexts are not live meanwhile."""
        self.unseen: list[str] = []
        self._callbacks: frozenset[CodeType] = frozenset(
            f.__code__ for f in (SysMonRecorder._on_start, SysMonRecorder._on_any_start,
                                 SysMonRecorder._on_env_start, SysMonRecorder._on_throw,
                                 SysMonRecorder._on_wait_call, SysMonRecorder._on_wait_return,
                                 SysMonRecorder._collecting))
        """The code of this recorder's callbacks: Python code run inside one fires no event."""

    def start(self) -> None:
        """Take the tool id, arm each hashed module's code as it is executed, and count what
        is already running."""
        mon = self._mon
        mon.use_tool_id(TOOL_ID, "lawkit footprint")
        mon.register_callback(TOOL_ID, mon.events.PY_START, self._on_start)
        mon.register_callback(TOOL_ID, mon.events.PY_RESUME, self._on_start)
        mon.register_callback(TOOL_ID, mon.events.PY_THROW, self._on_throw)
        mon.set_events(TOOL_ID, mon.events.PY_THROW)
        mon.register_callback(TOOL_ID, mon.events.CALL, self._on_wait_call)
        mon.register_callback(TOOL_ID, mon.events.PY_RETURN, self._on_wait_return)
        for code in wait_code():
            mon.set_local_events(TOOL_ID, code, mon.events.CALL | mon.events.PY_RETURN)
        patch.monitoring_guarded(TOOL_ID, self.turned_off.append)
        patch.signals_watched(self.signalled)
        gc.callbacks.append(self._collecting)
        try:
            mon.use_tool_id(ENV_TOOL_ID, "lawkit footprint environment")
        except ValueError:  # another tool holds it
            self.env_everywhere = True
        else:
            self._env = True
            mon.register_callback(ENV_TOOL_ID, mon.events.PY_START, self._on_env_start)
            mon.register_callback(ENV_TOOL_ID, mon.events.PY_RESUME, self._on_env_start)
            patch.monitoring_guarded(ENV_TOOL_ID, self.turned_off.append)
            for code in loaded_code(self._hashed, self._tracked):
                self._arm_env(code)
        self.entered.add(self._default)
        frames = sys._current_frames()
        own = {t.ident for t in threading.enumerate() if _own(t)}
        self._threaded = any(i not in own for i in frames if i != self._ident())
        self._live(frames)
        self._count_stacks(frames.items())

    def executing(self, code: object) -> None:
        """Code is about to be executed (the ``exec`` audit event, which the process's one
        audit hook passes on: each audit hook costs every audited event, ``frame.f_code``
        included): arm it if it is hashed, with every code object nested in it."""
        if not isinstance(code, CodeType):
            return
        with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
            if self._hashed(code.co_filename):
                self._arm(code)
            elif self._env and self._tracked(code.co_filename):
                self._arm_env(code)

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

    def _arm_env(self, code: CodeType) -> None:
        """Arm a code object outside the hashed files, and those nested in it, for the
        environment (the nested ones of a tracked file only: a hashed function's body is not
        nested in another file's code)."""
        todo = [code]
        while todo:
            c = todo.pop()
            if self._tracked(c.co_filename) and not self._hashed(c.co_filename):
                self._set_local_events(ENV_TOOL_ID, c, self._events)
            todo.extend(k for k in c.co_consts if isinstance(k, CodeType))

    def _on_env_start(self, code: CodeType, offset: int) -> object:
        """A code object outside the hashed files started: note its file in this context."""
        name = code.co_filename
        key = _identity(code)
        if key not in self._env_started:
            self._env_started[key] = (code, self._epoch,
                                      self._contexts.get(self._ident(), self._default))
        if name in self._env_settled:  # counts in steps with no region open: nothing to add
            self._env_disarm.append(code)
            return self._disable
        context = self._contexts.get(self._ident(), self._default)
        seen = self._env_ran.get(context)
        if seen is None:
            seen = self._env_ran[context] = {}
        seen[name] = None
        if context == ANY_STEPS:
            self._env_settled.add(name)
            self._env_settled_at.setdefault(name, self._epoch)
            self._env_disarm.append(code)
        others = self._env_others
        if others:
            for ran in others:
                if name not in ran:
                    return None
        self._set_local_events(ENV_TOOL_ID, code, 0)
        codes = self._env_codes.get(name)
        if codes is None:
            codes = self._env_codes.setdefault(name, {})
        codes[key] = code
        self._env_off[name] = True  # last: a switch takes the file out of it first
        return self._disable

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
        self._set_local_events(TOOL_ID, code, 0)
        self._off[key] = code
        return self._disable

    def _on_throw(self, code: CodeType, offset: int, exc: BaseException) -> None:
        """A generator or coroutine resumed by ``throw`` or ``close`` (any code: the event
        cannot be set on a code object)."""
        if self._hashed(code.co_filename):
            context = self._contexts.get(self._ident(), self._default)
            self._ran.setdefault(context, {})[_identity(code)] = code

    def _on_wait_call(self, code: CodeType, offset: int, callable_: object,
                      arg0: object) -> None:
        """A call in one of threading's waits (`wait_code`): a call after the blocking one
        means this thread is back from it; the blocking one (`WAITS`) takes this thread's
        context out of the live ones until then."""
        ident = self._ident()
        if ident in self._waiting:
            self._woken(ident)
            return
        if not self._threaded or getattr(callable_, "__name__", None) not in WAITS:
            return
        locked = getattr(getattr(callable_, "__self__", None), "locked", None)
        if locked is not None and not locked():  # a lock free now: no wait (or a short one)
            return
        self._waiting.add(ident)
        self._live()

    def _on_wait_return(self, code: CodeType, offset: int, retval: object) -> None:
        """One of threading's waits returned: this thread is back from it."""
        ident = self._ident()
        if ident in self._waiting:
            self._woken(ident)

    def _woken(self, ident: int) -> None:
        """A thread back from its wait may run any code object in its context: re-arm with
        it live."""
        self._waiting.discard(ident)
        self._live()
        self._rearm()

    def _collecting(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self.woke()

    def woke(self) -> None:
        """Python code is about to run on this thread outside the code of its wait (a signal
        handler, a collection's finalizers): if it was waiting, it is live again first."""
        ident = self._ident()
        if ident in self._waiting:
            self._woken(ident)

    def signalled(self, frame: FrameType | None, python: bool) -> None:
        """A signal handler is about to run on this thread (the main one), Python code if
        ``python``: the thread is live again first (`woke`); and a Python handler run inside
        one of this recorder's callbacks, where no event fires, runs unseen (`record`
        refuses)."""
        self.woke()
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
            self._env_others = (self._env_ran.setdefault(here, {}),)
        elif any(ran is default for ran in others):
            return
        self._others = self._live_ran = (*others, default)
        self._env_others = self._env_live = (
            *self._env_others, self._env_ran.setdefault(self._default, {}))
        self._noted_live([c for c, e in list(self._last_live.items()) if e == self._epoch]
                         + [self._default])
        self._rearm()

    def _live(self, frames: dict[int, FrameType] | None = None) -> None:
        """Find the contexts in which a thread may run engine code before the next switch:
        those of the threads with a Python frame, but lawkit's own."""
        if not self._threaded:
            here = self._contexts.get(self._ident(), self._default)
            self._live_ran = (self._ran.setdefault(here, {}),)
            self._env_live = (self._env_ran.setdefault(here, {}),)
            self._others = self._env_others = ()
            self._noted_live((here,))
            return
        waiting = self._waiting
        if frames is not None:  # at start-up and at a phase switch: every thread's stack
            own = {t.ident for t in threading.enumerate() if _own(t)}
            idents = [i for i in frames if i not in own and i not in waiting]
        else:
            # At a region switch, the threads threading knows: sys._current_frames() there made
            # CPython 3.12.1 crash (SIGSEGV, "deallocated BytesIO object has exported buffers")
            # in about every other run of the tutorial's harness (its worker process and
            # multiprocessing's threads running while its regions switch).
            idents = [t.ident for t in threading.enumerate()
                      if t.ident and t.ident not in waiting and not _own(t)]
        contexts = {self._contexts.get(ident, self._default) for ident in idents}
        if self._raw_threads:  # a thread from _thread.start_new_thread: threading lists none
            contexts.add(self._default)
        if self._ident() not in waiting:
            contexts.add(self._contexts.get(self._ident(), self._default))
        self._live_ran = tuple(self._ran.setdefault(c, {}) for c in contexts)
        self._env_live = tuple(self._env_ran.setdefault(c, {}) for c in contexts)
        several = len(contexts) > 1
        self._others = self._live_ran if several else ()
        self._env_others = self._env_live if several else ()
        self._noted_live(contexts)

    def _noted_live(self, contexts: Any) -> None:
        """A new epoch, in which ``contexts`` are live."""
        epoch = self._epoch = self._epoch + 1
        for context in contexts:
            self._last_live[context] = epoch

    def switched_phase(self, name: str) -> None:
        """The process entered phase ``name``: re-arm, count every thread's stack in it. Back
        in ``steps`` after a shutdown, what ran in that shutdown ran in steps, no region
        open."""
        if name == "steps":
            if self._phase == "shutdown":
                steps = self._ran.setdefault(("steps", ()), {})
                for context in [c for c in list(self._ran) if c[0] == "shutdown"]:
                    steps.update(self._ran.pop(context))
                env = self._env_ran.setdefault(("steps", ()), {})
                for context in [c for c in list(self._env_ran) if c[0] == "shutdown"]:
                    env.update(self._env_ran.pop(context))
                if any(c[0] == "shutdown" for c in self.entered):
                    self.entered = {c for c in self.entered if c[0] != "shutdown"}
                    self.entered.add(("steps", ()))
            self.regions.update(r for _, regions in list(self._contexts.values()) for r in regions)
        self._phase = name
        self._default = (name, ())
        self._contexts = {t: (name, c[1]) for t, c in list(self._contexts.items())}
        self.entered.add(self._default)
        self.entered.update(self._contexts.values())
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
            self.entered.add((self._phase, regions))
            self._ends.watch()
        else:
            self._contexts.pop(ident, None)
        self._live()
        self._rearm()
        self._count_stacks([(ident, sys._getframe(1))])
        if regions and not self._copies:  # a copy's runs fire through process-wide events
            self._turn_off_seen((self._phase, regions))

    def _turn_off_seen(self, context: Context) -> None:
        """Turn off the code objects that have run in ``context`` and in every other live
        context."""
        seen = self._ran.get(context)
        if not seen:
            return
        off = self._off
        todo = _in_every(seen.keys() - off.keys(), self._live_ran)
        todo.difference_update(self._disarmed)
        with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
            for key in todo:
                code = seen[key]
                self._set_local_events(TOOL_ID, code, 0)
                off[key] = code

    def _rearm(self) -> None:
        """Disarm what has run in steps with no region open, then turn on again each code
        object turned off that has not run in every live context (`_off`), and each one
        outside the hashed files whose file has not (`_env_off`), turning off those turned on
        so before whose file now has (`_env_on`); once a copy of hashed code was built, re-arm
        every code object (``restart_events``), since the process-wide events a copy fires
        through can only be turned off by ``DISABLE``. The tables are compared with set
        operations, in C, so that a switch costs what it turns on or off, not what is off
        (tens of thousands of a framework's code objects, where the engine runs on one), and
        each is one step for the other threads, whose callbacks add to them meanwhile."""
        if self._settled:
            off = self._off
            for code in self._settled:
                off.pop(_identity(code), None)
            self._disarm(TOOL_ID, self._settled, self._disarmed)
            self._settled = []
        if self._env_disarm:  # settled files: every code object of theirs for good
            disarm = self._env_disarm
            self._env_disarm = []
            for name in {code.co_filename for code in disarm}:
                self._env_off.pop(name, None)
                self._env_on.pop(name, None)
                disarm.extend(list(self._env_codes.get(name, {}).values()))
            self._disarm(ENV_TOOL_ID, disarm, self._env_disarmed)
        events = self._events
        with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
            off = self._off
            for key in _not_in_every(off.keys(), self._live_ran):
                turned = off.pop(key, None)
                if turned is not None:
                    self._set_local_events(TOOL_ID, turned, events)
            env_live, env_off, env_on = self._env_live, self._env_off, self._env_on
            for name in _not_in_every(env_off.keys(), env_live):
                if env_off.pop(name, False):  # first: a callback adds it back after
                    env_on[name] = True
                    self._set_env_events(name, events)
            for name in _in_every(env_on.keys(), env_live):
                if env_on.pop(name, False):
                    self._set_env_events(name, 0)
                    env_off[name] = True
        if self._copies:
            self._restart()

    def _set_env_events(self, name: str, events: int) -> None:
        """Set the environment's events of file ``name``'s code objects in `_env_codes`."""
        for code in list(self._env_codes.get(name, {}).values()):
            self._set_local_events(ENV_TOOL_ID, code, events)

    def _disarm(self, tool: int, codes: list[CodeType], disarmed: dict[int, CodeType]) -> None:
        """Turn tool ``tool``'s events off for good on each of ``codes`` not yet in
        ``disarmed`` (noted there, for a forked child to arm again)."""
        for code in codes:
            key = _identity(code)
            if key not in disarmed:
                disarmed[key] = code
                with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
                    self._set_local_events(tool, code, 0)

    def forked(self) -> None:
        """In a forked child: forget the parent's runs; start in ``steps``, no region open."""
        self._settled = []
        for code in self._disarmed.values():  # the child's runs are its own: arm them all
            with contextlib.suppress(ValueError):
                self._set_local_events(TOOL_ID, code, self._events)
        self._disarmed = {}
        self._env_disarm = []
        for code in self._env_disarmed.values():
            with contextlib.suppress(ValueError):
                self._set_local_events(ENV_TOOL_ID, code, self._events)
        self._env_disarmed = {}
        self._env_settled = set()
        self._env_ran = {}
        self._env_started = {}
        self._last_live = {}
        self._env_settled_at = {}
        self._env_others = ()
        self.entered = {("steps", ())}
        self._ran = {}
        self.regions = set()
        self._phase = "steps"
        self._default = ("steps", ())
        self._contexts = {}
        self._others = ()
        self._waiting = set()
        self._threaded = False  # the forking thread alone goes on
        self._live()  # what the parent turned off is turned on again
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
                elif self._env and self._tracked(code.co_filename):
                    self._env_ran.setdefault(context, {})[code.co_filename] = None
                    self._env_started.setdefault(_identity(code), (code, self._epoch, context))
                f = f.f_back

    def runs(self) -> list[list[Any]]:
        """``[filename, qualname, firstlineno, phase, regions]`` for each code object and
        context it ran in (read from copies: other threads may still run)."""
        return [[c.co_filename, c.co_qualname, c.co_firstlineno, phase, list(regions)]
                for (phase, regions), codes in list(self._ran.items())
                for c in list(codes.values())]

    def env_runs(self) -> list[list[Any]]:
        """``[filename, phase, regions]`` for each file outside the hashed ones whose code
        started, and each context it started in."""
        return [[name, phase, list(regions)]
                for (phase, regions), names in list(self._env_ran.items())
                for name in list(names)]

    def env_codes(self) -> dict[str, list[list[Any]]]:
        """Where each code object outside the hashed files may have run: ``codes``, ``[filename,
        qualname, firstlineno, epoch, phase, regions]`` for each one that started (the epoch
        and context of its first start); ``live``, ``[phase, regions, epoch]``, the last epoch
        each context was live in; ``settled``, ``[filename, epoch]``, each file settled."""
        return {"codes": [[c.co_filename, c.co_qualname, c.co_firstlineno, epoch, phase,
                           list(regions)]
                          for c, epoch, (phase, regions) in list(self._env_started.values())],
                "live": [[phase, list(regions), epoch]
                         for (phase, regions), epoch in list(self._last_live.items())],
                "settled": [[name, epoch] for name, epoch in list(self._env_settled_at.items())]}


def _not_in_every(known: Any, live: tuple[dict[Any, Any], ...]) -> set[Any]:
    """The keys of ``known`` (a dict's keys) missing from at least one of the ``live`` dicts."""
    missing: set[Any] = set()
    for ran in live:
        missing |= known - ran.keys()
    return missing


def _in_every(known: Any, live: tuple[dict[Any, Any], ...]) -> set[Any]:
    """The keys of ``known`` (a dict's keys, or a set) found in every one of the ``live``
    dicts."""
    if not live:
        return set(known)
    common: set[Any] = known & live[0].keys()
    for ran in live[1:]:
        common = common & ran.keys()
    return common


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
            if id(obj) in seen:
                continue
            seen.add(id(obj))
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


def _own(thread: threading.Thread) -> bool:
    """A thread of lawkit's own, which runs no engine code."""
    return thread.name.startswith(OWN_THREAD) or bool(getattr(thread, ENGINE_FREE, False))
