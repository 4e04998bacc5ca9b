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

import sys
from pathlib import Path
from typing import Any

import pytest
from footprint_engine import recorded

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
import queue, signal, threading
import lawkit.footprint as fp
from atom.helpers import helper

def on_usr1(signum, frame):
    helper(-1)  # the main thread runs engine code inside its wait: steps, no region open

signal.signal(signal.SIGUSR1, on_usr1)
done, handled = queue.Queue(), threading.Event()
main = threading.main_thread().ident

def engine():
    for i in range(20):
        with fp.region("schedule_s"):
            helper(i)
            if i == 10:  # the main thread is blocked in done.get(): interrupt its wait
                signal.pthread_kill(main, signal.SIGUSR1)
                handled.wait(10)
    done.put(True)

thread = threading.Thread(target=engine, name="engine")
fp.phase("steps")
thread.start()
while not done.qsize():
    try:
        done.get(timeout=30)
        break
    finally:
        handled.set()
thread.join()
"""


def test_a_signal_handler_run_inside_the_idle_main_threads_wait_is_recorded(
        engine: Path) -> None:
    """A main thread blocked in a wait runs no Python code until the wait returns, except a
    signal handler, which runs at the first bytecode after the interrupted wait, inside any
    monitoring callback that comes first (where no event fires): a recorder that took the
    waiting thread as idle and watched its wake-up with a callback (CALL and C_RETURN events on
    threading's waits) missed this run; the handler's run counts for every law."""
    doc = recorded(engine, SIGNALLED)
    assert _regions(doc, "atom/helpers.py", "helper") == ["*", "schedule_s"]
