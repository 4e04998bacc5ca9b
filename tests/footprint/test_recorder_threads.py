"""The sys.monitoring recorder on a threaded serving engine's shape: the step
loop in a background thread that opens regions, the main thread waiting on a queue in steps with
no region open, waking now and then to run engine code itself.

``DISABLE`` turns a code object's event off for every thread, so a recorder that disables a
code object after the engine thread's run in a region, to make short regions cheap, would hide
the main thread's run of it in ``"*"`` until the next switch. These tests hold any such
optimisation to the rule: the idle thread's run is recorded in ``"*"``, after the engine thread
has run the same code, in many steps and re-arms before, and while it still sits in its region.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from footprint_engine import record_harness, recorded

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12),
                                reason="the sys.monitoring recorder is Python 3.12+")

ENGINE = """\
import queue, sys, threading
import lawkit.footprint as fp
from atom.helpers import helper
from atom.gen import numbers

STEPS, WAKE = 30, 20
jobs, done = queue.Queue(), queue.Queue()
inside, leave = threading.Event(), threading.Event()
shared = []

def engine():
    while True:
        i = jobs.get()
        if i is None:
            return
        with fp.region("schedule_s"):
            helper(i)
            if i == 0:
                shared.append(numbers())
            next(shared[0])
            if i == WAKE:  # still in schedule_s: the main thread runs the same code now
                inside.set()
                leave.wait()
        done.put(i)

thread = threading.Thread(target=engine, name="engine")
thread.start()
fp.phase("steps")
for i in range(STEPS):
    jobs.put(i)
    if i == WAKE:
        inside.wait()
        if sys.argv[1:] == ["generator"]:
            next(shared[0])  # a generator the engine thread started and resumed in its region
        else:
            helper(-1)
        leave.set()
    done.get()
jobs.put(None)
thread.join()
"""

GEN = "def numbers():\n    i = 0\n    while True:\n        yield i\n        i += 1\n"


def _regions(doc: dict[str, Any], path: str, name: str) -> list[str]:
    unit = doc["files"][path]["units"][name]
    assert unit["phases"] == ["steps"]
    regions: list[str] = unit["regions"]
    return regions


def test_the_idle_main_thread_waking_while_the_engine_thread_is_in_a_region_is_recorded(
        engine: Path) -> None:
    """helper ran in schedule_s in 20 steps (each a re-arm) and again in this one before the
    main thread's run: that run, in steps with no region open, counts for every law."""
    (engine / "atom" / "gen.py").write_text(GEN)
    doc = recorded(engine, ENGINE.replace("sys.argv[1:] == [\"generator\"]", "False"))
    assert _regions(doc, "atom/helpers.py", "helper") == ["*", "schedule_s"]


def test_a_generator_of_the_engine_thread_resumed_by_the_idle_main_thread_is_recorded(
        engine: Path) -> None:
    (engine / "atom" / "gen.py").write_text(GEN)
    doc = recorded(engine, ENGINE.replace("sys.argv[1:] == [\"generator\"]", "True"))
    assert _regions(doc, "atom/gen.py", "numbers") == ["*", "schedule_s"]
    assert _regions(doc, "atom/helpers.py", "helper") == ["schedule_s"]


SIGNALLED = """\
import queue, signal, threading, time
import lawkit.footprint as fp
from atom.helpers import helper

handled = []

def on_usr1(signum, frame):
    helper(-1)  # the main thread runs engine code inside its wait: steps, no region open
    handled.append(signum)

signal.signal(signal.SIGUSR1, on_usr1)
done = queue.Queue()
main = threading.main_thread().ident

def engine():
    for i in range(20):
        with fp.region("schedule_s"):
            if i == 10:
                time.sleep(0.3)  # the main thread is blocked in done.get() by now
            helper(i)
            if i == 10:  # interrupt its wait; neither switch nor wait until the handler ran
                signal.pthread_kill(main, signal.SIGUSR1)
                while not handled:
                    pass
    done.put(True)

thread = threading.Thread(target=engine, name="engine")
fp.phase("steps")
thread.start()
done.get(timeout=60)
thread.join()
"""


def test_a_signal_handler_run_inside_the_waiting_main_threads_wait_is_recorded(
        engine: Path) -> None:
    """The main thread blocked in a wait is not live (the engine thread's region code is
    disabled after one run), but a signal handler runs inside the wait itself, before any
    event of the wait's own code: the handler tells the recorder first, so its run counts for
    every law (a recorder that left the handler alone missed it)."""
    doc = recorded(engine, SIGNALLED)
    assert _regions(doc, "atom/helpers.py", "helper") == ["*", "schedule_s"]


IN_CALLBACK = """\
import _thread, operator, signal
import lawkit.footprint as fp
from atom.helpers import helper
from atom.util import util_fn

signal.signal(signal.SIGUSR1, lambda signum, frame: util_fn(1))
fp.phase("steps")
with fp.region("schedule_s"):
    # trip SIGUSR1, then start engine code from C with no bytecode between: the handler runs
    # at the next bytecode, the recorder's PY_START callback's on 3.12, where no event fires
    list(map(operator.call, [_thread.interrupt_main, helper], [signal.SIGUSR1, 1]))
"""


def test_a_signal_handler_run_inside_the_recorders_callback_is_refused_or_recorded(
        engine: Path) -> None:
    """Python code run inside a sys.monitoring callback fires no event: a handler run there
    makes `record` refuse, naming it; where it runs after the callback (3.13), it is
    recorded."""
    result = record_harness(engine, IN_CALLBACK)
    if result.returncode == 0:
        doc = json.loads((engine / "fp.json").read_text())
        assert _regions(doc, "atom/util.py", "util_fn") == ["schedule_s"]
    else:
        assert result.returncode == 2, result.stderr
        assert "a signal handler ran inside lawkit's own sys.monitoring callback" in \
            result.stderr
        assert not (engine / "fp.json").exists()


def test_a_handler_set_while_recording_is_given_back_as_it_was_set(engine: Path) -> None:
    """The recorder stands in front of every signal handler; the program sees its own."""
    doc = recorded(engine, """\
import signal
from atom.helpers import helper
def on_usr1(signum, frame):
    pass
helper(1)
old = signal.signal(signal.SIGUSR1, on_usr1)
assert old is signal.SIG_DFL, old
assert signal.getsignal(signal.SIGUSR1) is on_usr1
assert signal.signal(signal.SIGUSR1, signal.SIG_IGN) is on_usr1
assert signal.getsignal(signal.SIGUSR1) is signal.SIG_IGN
# SIGINT's handler from start-up: SIG_IGN where the test's runner ignores SIGINT (inherited)
assert signal.getsignal(signal.SIGINT) in (signal.default_int_handler, signal.SIG_IGN)
""")
    assert doc["processes"] == 1


TURNED_OFF = """\
import lawkit.footprint as fp
from atom.helpers import helper
from atom.util import util_fn

fp.phase("steps")
for i in range(5):  # entered again, schedule_s turns off what ran in it before
    with fp.region("schedule_s"):
        helper(i)
        util_fn(i)
with fp.region("update_s"):
    util_fn(-1)  # turned off in schedule_s, on again in another region
helper(-1)  # and in steps with no region open
"""


def test_code_turned_off_in_its_region_is_recorded_where_it_runs_next(engine: Path) -> None:
    """A region entered again turns off the code that has run in it (its runs there add
    nothing): the next switch turns it on again wherever it has not run."""
    doc = recorded(engine, TURNED_OFF)
    assert _regions(doc, "atom/helpers.py", "helper") == ["*", "schedule_s"]
    assert _regions(doc, "atom/util.py", "util_fn") == ["schedule_s", "update_s"]


SWITCHING = """\
import sys, threading
import lawkit.footprint as fp
from atom import many

failed = []
threading.excepthook = lambda args: failed.append(args.exc_value)
sys.setswitchinterval(1e-6)  # switch threads between about every few bytecodes
funcs = [getattr(many, f"f{i}") for i in range(600)]

def engine():
    for i in range(400):
        with fp.region("schedule_s"):  # every thread in the same context
            for f in funcs[: i + 1 : 7]:
                f()
            funcs[i]()  # a code object new to the context while the others switch

fp.phase("steps")
threads = [threading.Thread(target=engine) for _ in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
sys.exit(f"an engine thread failed: {failed[0]!r}" if failed else 0)
"""


def test_threads_switching_regions_while_others_record_new_code_all_finish(
        engine: Path) -> None:
    """A switch reads the recorder's tables while other threads' callbacks add to them (the
    thread switch interval cut to a microsecond): no switch fails for it, and every code object
    the threads ran is recorded in their region."""
    (engine / "atom" / "many.py").write_text(
        "".join(f"def f{i}():\n    return {i}\n\n" for i in range(600)))
    doc = recorded(engine, SWITCHING)
    units = doc["files"]["atom/many.py"]["units"]
    ran = {name: unit["regions"] for name, unit in units.items() if unit["regions"]}
    assert ran == {f"f{i}": ["schedule_s"] for i in range(400)}
