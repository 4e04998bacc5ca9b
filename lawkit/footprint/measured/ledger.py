"""One ``sys.monitoring`` tool's tables (`Ledger`): what ran in each context, what is turned off
until the next switch, and what is settled for good. The recorder keeps two, one class: the
hashed code's, counted by code object, and the environment's, counted by file (a second code
object of a file that has run somewhere adds nothing there).

A key is what the ledger counts by: a code object's identity (``object.__hash__``, unique among
live objects: ``id()`` raises an audit event; a code object's own hash reads its bytecode) or
its file name. Each table is read from copies, in C (set operations on keys), since the other
threads' callbacks add to them meanwhile, and a switch costs what it turns on or off, not what
is off (tens of thousands of a framework's code objects, where the engine runs on one).

The invariants, each with the test that breaks when it does not hold (tests/footprint/
test_ledger.py; `check` reads those the tables alone can show):

- `off`: a key is turned off only once it has run in every live context, else a run in a
  context it has not run in goes unseen
  (``test_a_key_is_turned_off_only_once_it_has_run_in_every_live_context``).
- `rearm`: at every switch, each key off that has not run in every context live after it is
  turned on again
  (``test_a_switch_turns_on_again_each_key_off_that_has_not_run_in_every_live_context``).
- `settled`: a key that ran in steps with no region open counts for every law: it fires
  nothing more, is disarmed for good at the next switch and never turned on again by one; a
  forked child arms it again, its runs being its own
  (``test_a_settled_key_fires_nothing_more_and_is_disarmed_for_good_until_a_fork``).
- `codes`: a key's code objects are turned on and off as one, and its table only grows, so
  that a switch reading it sees every code object a callback on another thread turned off
  (``test_a_files_code_objects_are_turned_on_and_off_as_one_and_only_grow``).
- `fired`: every callback is counted by kind in the context it fired in, settled or not
  (``test_each_callback_is_counted_by_kind_in_the_context_it_fired_in``).
- `first`: with ``firsts``, each code object keeps the epoch and context of its first start
  (``test_the_environments_ledger_keeps_each_code_objects_first_start``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Hashable, Iterable
from types import CodeType
from typing import Any, Protocol

from lawkit.footprint.measured.markers import Context

ANY_STEPS: Context = ("steps", ())
"""Steps with no region open: a run there counts for every law."""
KINDS = ("PY_START", "PY_RESUME", "PY_THROW", "CALL", "PY_RETURN")
"""The events a ledger counts, by index: each callback fired, in the context it fired in."""
START, RESUME, THROW, CALL, RETURN = range(len(KINDS))

identity: Callable[[object], int] = object.__hash__
"""An object's identity as an int, unique among live objects, without ``id()``'s audit event."""


class Contexts(Protocol):
    """Each thread's context (`threads.Threads`)."""

    by_thread: dict[int, Context]
    """The context of each thread with a region open."""
    default: Context
    """The context of a thread with no region open."""
    epoch: int
    """How many times the live contexts were found."""
    known: dict[int, Any]
    """The threads ``threading`` lists, by ident."""
    raw: bool
    """A thread ``threading`` does not list has run: every callback's thread is not checked."""

    def ident(self) -> int:
        """The calling thread's ident."""

    def unknown(self) -> None:
        """A thread ``threading`` does not list runs Python code (one created from C)."""


class Ran(dict[Hashable, CodeType]):
    """What ran in one context: a code object of each key, and the callbacks fired there by
    kind (`KINDS`)."""

    __slots__ = ("fired",)

    def __init__(self) -> None:
        super().__init__()
        self.fired = [0] * len(KINDS)


class Ledger:
    """One tool's tables: what ran where, what is off until a switch, what is settled."""

    def __init__(self, tool: int, key: Callable[[CodeType], Hashable], threads: Contexts,
                 events: int, set_local_events: Callable[[int, CodeType, int], object],
                 disable: object, *, firsts: bool = False,
                 arms: Callable[[str], bool] | None = None) -> None:
        self.tool = tool
        self._arms = arms
        """Which files' code `arm` arms (None: all)."""
        self._threads = threads
        self.key = key
        """What this ledger counts by: `identity`, or the code object's file name."""
        self.events = events
        self._set_local_events = set_local_events
        self._disable = disable
        self.ran: dict[Context, Ran] = {}
        self.live: tuple[Ran, ...] = ()
        """The tables of the live contexts: those a thread may run code in before the next
        switch."""
        self.others: tuple[Ran, ...] = ()
        """The live tables when several contexts are live, else empty: a code object is turned
        off once it has run in each of them."""
        self.off: dict[Hashable, bool] = {}
        """The keys turned off until a switch (`set_local_events` to none)."""
        self.on: dict[Hashable, bool] = {}
        """The keys `rearm` turned on again, turned off at a later switch where they have run in
        every live context (the environment's rule: `rearm`'s ``turn_back_off``)."""
        self.codes: dict[Hashable, dict[int, CodeType]] = {}
        """The code objects of each key turned off at least once."""
        self.settled: dict[Hashable, int] = {}
        """The keys that ran in steps with no region open, with the epoch each was settled in."""
        self.first: dict[int, tuple[CodeType, int, Context]] | None = {} if firsts else None
        """With ``firsts``, every code object that started, by identity, with the epoch and the
        context of its first start: a key is turned off and on as one, so a code object's
        later runs may fire nothing; they can only be in a context its key ran in and that
        was live since its first start, or, once its key is settled, anywhere in steps."""
        self.disarm: list[CodeType] = []
        """Code objects of settled keys, to disarm for good at the next switch."""
        self.disarmed: dict[int, CodeType] = {}
        """The code objects disarmed so, by identity: armed again in a forked child."""

    def arm(self, code: CodeType) -> None:
        """Set this tool's events on a code object and on every code object nested in it (for
        the environment, those of a tracked file only: a hashed function's body is not nested
        in another file's code)."""
        arms, todo = self._arms, [code]
        while todo:
            c = todo.pop()
            if arms is None or arms(c.co_filename):
                self._set_local_events(self.tool, c, self.events)
            todo.extend(k for k in c.co_consts if isinstance(k, CodeType))

    def table(self, context: Context) -> Ran:
        """The table of ``context``, made empty the first time."""
        ran = self.ran.get(context)
        if ran is None:
            ran = self.ran.setdefault(context, Ran())
        return ran

    def live_in(self, contexts: Iterable[Context]) -> None:
        """The contexts live from now on."""
        self.live = tuple(self.table(c) for c in contexts)
        self.others = self.live if len(self.live) > 1 else ()

    def started(self, kind: int, code: CodeType, offset: int) -> object:
        """The callback of ``code`` starting (``kind``: `START` or `RESUME`) on this thread:
        note it in the thread's context, and turn its key off (``DISABLE``) once it has run in
        every live context."""
        threads = self._threads
        ident = threads.ident()
        if not threads.raw and ident not in threads.known:
            threads.unknown()
        context = threads.by_thread.get(ident, threads.default)
        seen = self.ran.get(context)
        if seen is None:
            seen = self.ran.setdefault(context, Ran())
        seen.fired[kind] += 1
        first = self.first
        if first is not None and identity(code) not in first:
            first[identity(code)] = (code, threads.epoch, context)
        key = self.key(code)
        if key in self.settled:  # counts for every law already: nothing more to learn
            self.disarm.append(code)
            return self._disable
        seen[key] = code
        if context == ANY_STEPS:
            self.settled[key] = threads.epoch
            self.disarm.append(code)
        others = self.others
        if others:  # several contexts live: disable once it has run in each
            for ran in others:
                if key not in ran:
                    return None
        self._set_local_events(self.tool, code, 0)
        codes = self.codes.get(key)
        if codes is None:
            codes = self.codes.setdefault(key, {})
        codes[identity(code)] = code
        self.off[key] = True  # last: a switch takes the key out of `off` first
        return self._disable

    def note(self, code: CodeType, context: Context) -> None:
        """``code`` is running in ``context`` (on a stack at a switch, or thrown into)."""
        self.table(context)[self.key(code)] = code
        if self.first is not None:
            self.first.setdefault(identity(code), (code, self._threads.epoch, context))

    def widen(self) -> None:
        """Count every run in a region as run in its phase with no region open too (a thread
        created from C, with none open, may have run it unseen: turned off)."""
        for (phase, regions), ran in list(self.ran.items()):
            if regions:
                self.table((phase, ())).update(ran)

    def turn_off_seen(self, context: Context) -> None:
        """Turn off the keys that have run in ``context`` and in every other live context (a
        region entered again fires nothing for them)."""
        seen = self.ran.get(context)
        if not seen:
            return
        todo = _in_every(seen.keys() - self.off.keys(), self.live)
        todo.difference_update(self.settled)
        with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
            for key in todo:
                code = seen[key]
                self._set_local_events(self.tool, code, 0)
                self.codes.setdefault(key, {})[identity(code)] = code
                self.off[key] = True

    def rearm(self, *, turn_back_off: bool) -> None:
        """At a switch: disarm the code of settled keys for good, then turn on again each key
        off that has not run in every live context; with ``turn_back_off``, also turn off each
        key turned on so before that now has."""
        if self.disarm:
            disarm, self.disarm = self.disarm, []
            for key in {self.key(code) for code in disarm}:
                self.off.pop(key, None)
                self.on.pop(key, None)
                disarm.extend(list(self.codes.get(key, {}).values()))
            for code in disarm:
                ident = identity(code)
                if ident not in self.disarmed:
                    self.disarmed[ident] = code
                    with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
                        self._set_local_events(self.tool, code, 0)
        live, off, on = self.live, self.off, self.on
        with contextlib.suppress(ValueError):  # the tool was freed: noted, refused
            for key in _not_in_every(off.keys(), live):
                if off.pop(key, False):  # first: a callback adds it back after
                    if turn_back_off:
                        on[key] = True
                    self._set(key, self.events)
            if turn_back_off:
                for key in _in_every(on.keys(), live):
                    if on.pop(key, False):
                        self._set(key, 0)
                        off[key] = True

    def _set(self, key: Hashable, events: int) -> None:
        for code in list(self.codes.get(key, {}).values()):
            self._set_local_events(self.tool, code, events)

    def steps_again(self) -> None:
        """Back in steps after a shutdown: what ran in it ran in steps, no region open."""
        steps = self.table(ANY_STEPS)
        for context in [c for c in list(self.ran) if c[0] == "shutdown"]:
            shutdown = self.ran.pop(context)
            steps.update(shutdown)
            steps.fired = [a + b for a, b in zip(steps.fired, shutdown.fired, strict=True)]

    def forked(self) -> None:
        """In a forked child: forget the parent's runs, and arm what it disarmed for good."""
        with contextlib.suppress(ValueError):
            for code in self.disarmed.values():  # the child's runs are its own
                self._set_local_events(self.tool, code, self.events)
        self.disarmed = {}
        self.disarm = []
        self.settled = {}
        self.first = {} if self.first is not None else None
        self.ran = {}
        self.live = self.others = ()

    def code_runs(self) -> list[list[Any]]:
        """``[filename, qualname, firstlineno, phase, regions]`` for each code object noted and
        context it ran in (read from copies: other threads may still run)."""
        return [[c.co_filename, c.co_qualname, c.co_firstlineno, phase, list(regions)]
                for (phase, regions), ran in list(self.ran.items()) for c in list(ran.values())]

    def key_runs(self) -> list[list[Any]]:
        """``[key, phase, regions]`` for each key and context it ran in."""
        return [[key, phase, list(regions)]
                for (phase, regions), ran in list(self.ran.items()) for key in list(ran)]

    def first_runs(self) -> list[list[Any]]:
        """``[filename, qualname, firstlineno, epoch, phase, regions]`` for each code object
        that started (with ``firsts``): the epoch and context of its first start."""
        return [[c.co_filename, c.co_qualname, c.co_firstlineno, epoch, phase, list(regions)]
                for c, epoch, (phase, regions) in list((self.first or {}).values())]

    def fired(self) -> dict[Context, dict[str, int]]:
        """The callbacks fired in each context, by kind (those that fired)."""
        return {context: {k: n for k, n in zip(KINDS, ran.fired, strict=True) if n}
                for context, ran in list(self.ran.items()) if any(ran.fired)}

    def check(self) -> list[str]:
        """The invariants that can be read from the tables alone (tests call it): each key off
        or on has its code objects, is not both, and a settled key is never off or on."""
        wrong = [f"{k!r} off without its code" for k in list(self.off) if not self.codes.get(k)]
        wrong += [f"{k!r} both off and on" for k in self.off.keys() & self.on.keys()]
        wrong += [f"settled {k!r} off or on after a switch"
                  for k in (self.off.keys() | self.on.keys()) & self.settled.keys()
                  if not self.disarm]
        return wrong


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
