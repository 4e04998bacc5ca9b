"""The recorder's ledger (`lawkit.footprint.measured.ledger`): each invariant its docstring names,
held on real code objects with the monitoring calls recorded instead of made."""

from __future__ import annotations

import operator
import threading
from types import CodeType

from lawkit.footprint.measured.ledger import ANY_STEPS, RESUME, START, Ledger, identity
from lawkit.footprint.measured.markers import Context

EVENTS = 3  # PY_START | PY_RESUME
DISABLE = object()
IN_A: Context = ("steps", ("a_s",))
IN_B: Context = ("steps", ("b_s",))
IN_C: Context = ("steps", ("c_s",))


class _Threads:
    """Each thread's context, as `threads.Threads` keeps it: here, one thread moved by hand."""

    def __init__(self) -> None:
        self.by_thread: dict[int, Context] = {}
        self.default: Context = ("steps", ())
        self.epoch = 0
        self.known: dict[int, object] = {threading.get_ident(): None}
        self.raw = False

    def ident(self) -> int:
        return threading.get_ident()

    def unknown(self) -> None:
        raise AssertionError("the test's own thread is known")

    def enter(self, context: Context) -> None:
        self.by_thread[self.ident()] = context


def _codes(source: str, filename: str = "engine.py") -> list[CodeType]:
    module = compile(source, filename, "exec")
    return [c for c in module.co_consts if isinstance(c, CodeType)]


def _ledger(by_file: bool = False) -> tuple[Ledger, _Threads, dict[CodeType, int]]:
    threads = _Threads()
    events: dict[CodeType, int] = {}

    def set_local_events(tool: int, code: CodeType, value: int) -> None:
        events[code] = value

    key = operator.attrgetter("co_filename") if by_file else identity
    return (Ledger(4, key, threads, EVENTS, set_local_events, DISABLE, firsts=by_file),
            threads, events)


def _run(ledger: Ledger, threads: _Threads, code: CodeType, where: Context) -> object:
    threads.enter(where)
    return ledger.started(START, code, 0)


def test_a_key_is_turned_off_only_once_it_has_run_in_every_live_context() -> None:
    ledger, threads, events = _ledger()
    [step] = _codes("def step(): pass\n")
    ledger.live_in([IN_A, IN_B])
    assert _run(ledger, threads, step, IN_A) is None  # B may still run it: stays armed
    assert events == {} and not ledger.off
    assert _run(ledger, threads, step, IN_B) is DISABLE
    assert events == {step: 0} and identity(step) in ledger.off
    assert ledger.check() == []


def test_a_switch_turns_on_again_each_key_off_that_has_not_run_in_every_live_context() -> None:
    ledger, threads, events = _ledger()
    step, other = _codes("def step(): pass\ndef other(): pass\n")
    ledger.live_in([IN_A])
    _run(ledger, threads, step, IN_A)
    _run(ledger, threads, other, IN_A)
    ledger.live_in([IN_A, IN_C])  # C live: neither has run there
    ledger.rearm(turn_back_off=False)
    assert events == {step: EVENTS, other: EVENTS} and not ledger.off
    _run(ledger, threads, step, IN_C)
    ledger.live_in([IN_C])
    ledger.rearm(turn_back_off=False)
    assert events[step] == 0 and identity(step) in ledger.off  # ran in C: stays off
    assert ledger.check() == []


def test_a_settled_key_fires_nothing_more_and_is_disarmed_for_good_until_a_fork() -> None:
    ledger, threads, events = _ledger()
    [step] = _codes("def step(): pass\n")
    ledger.live_in([ANY_STEPS, IN_A])
    assert _run(ledger, threads, step, ANY_STEPS) is None  # A may run it: not off yet
    assert _run(ledger, threads, step, IN_A) is DISABLE  # settled: counts everywhere already
    assert identity(step) not in ledger.ran[IN_A]
    ledger.rearm(turn_back_off=False)
    assert events == {step: 0} and identity(step) in ledger.disarmed
    ledger.live_in([IN_B])
    ledger.rearm(turn_back_off=True)  # no switch turns it on again
    assert events == {step: 0} and ledger.check() == []
    ledger.forked()  # a forked child's runs are its own
    assert events == {step: EVENTS} and not ledger.settled and not ledger.ran


def test_a_files_code_objects_are_turned_on_and_off_as_one_and_only_grow() -> None:
    ledger, threads, events = _ledger(by_file=True)
    first, second = _codes("def first(): pass\ndef second(): pass\n", "dep.py")
    ledger.live_in([IN_A])
    assert _run(ledger, threads, first, IN_A) is DISABLE
    assert _run(ledger, threads, second, IN_A) is DISABLE
    assert set(ledger.codes["dep.py"].values()) == {first, second}
    ledger.live_in([IN_A, IN_B])
    ledger.rearm(turn_back_off=True)  # dep.py has not run in B: both on again
    assert events == {first: EVENTS, second: EVENTS} and "dep.py" in ledger.on
    _run(ledger, threads, first, IN_B)
    ledger.rearm(turn_back_off=True)  # now it has run in every live context: both off
    assert events == {first: 0, second: 0} and "dep.py" not in ledger.on
    assert set(ledger.codes["dep.py"].values()) == {first, second}
    assert ledger.check() == []


def test_each_callback_is_counted_by_kind_in_the_context_it_fired_in() -> None:
    ledger, threads, _ = _ledger()
    step, other = _codes("def step(): pass\ndef other(): pass\n")
    ledger.live_in([IN_A, IN_B])
    _run(ledger, threads, step, IN_A)
    threads.enter(IN_A)
    ledger.started(RESUME, other, 4)
    _run(ledger, threads, step, IN_B)
    assert ledger.fired() == {IN_A: {"PY_START": 1, "PY_RESUME": 1}, IN_B: {"PY_START": 1}}


def test_the_environments_ledger_keeps_each_code_objects_first_start() -> None:
    ledger, threads, _ = _ledger(by_file=True)
    first, second = _codes("def first(): pass\ndef second(): pass\n", "dep.py")
    ledger.live_in([IN_A])
    threads.epoch = 7
    _run(ledger, threads, first, IN_A)
    threads.epoch = 8
    _run(ledger, threads, first, IN_A)
    ledger.note(second, IN_B)
    assert sorted(ledger.first_runs()) == [["dep.py", "first", 1, 7, "steps", ["a_s"]],
                                           ["dep.py", "second", 2, 8, "steps", ["b_s"]]]
