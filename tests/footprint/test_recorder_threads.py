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
