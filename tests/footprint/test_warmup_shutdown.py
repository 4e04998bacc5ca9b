"""A real engine's shape: a warm-up through the step code at start-up, attributed to its
regions (``startup_regions``), and a shutdown after the last step, which counts as not run
unless the process enters steps again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from footprint_engine import copy_engine, recorded

from lawkit.footprint.document import decode_footprint


@pytest.fixture
def engine(tmp_path: Path) -> Path:
    engine = copy_engine(tmp_path / "engine")
    (engine / "atom" / "steps.py").write_text(
        "def schedule(i):\n    return i\n\n\n"
        "def sample(i):\n    return i + 1\n\n\n"
        "def warm_only(i):\n    return i\n\n\n"
        "def stop():\n    return 0\n\n\n"
        "def both():\n    return 1\n")
    return engine


def _unit(doc: dict[str, Any], name: str) -> dict[str, Any]:
    u: dict[str, Any] = doc["files"]["atom/steps.py"]["units"][name]
    return u


WARMUP = """\
import threading
import lawkit.footprint as fp
from atom.steps import schedule, sample, warm_only

def step(i):
    with fp.region("schedule_s"):
        schedule(i)
    with fp.region("sample_s"):
        sample(i)

def engine():
    for i in range(3):   # the warm-up, through the step code, in the engine's thread
        step(i)
    with fp.region("warm_s"):
        warm_only(0)
t = threading.Thread(target=engine)
t.start(); t.join()
fp.phase("steps")
for i in range(3):
    step(i)
"""


def test_start_up_runs_are_attributed_to_their_regions(engine: Path) -> None:
    doc = recorded(engine, WARMUP)

    def named(name: str, key: str) -> list[str]:
        # coverage.py's context is process-wide (3.11): the main thread, waiting with no
        # region open, adds "*" to every context, which is sound
        got: list[str] = _unit(doc, name)[key]
        return [r for r in got if r != "*"] if doc["recorder"] == "coverage" else got

    assert _unit(doc, "schedule")["phases"] == ["startup", "steps"]
    assert named("schedule", "startup_regions") == ["schedule_s"]
    assert named("schedule", "regions") == ["schedule_s"]
    assert named("sample", "startup_regions") == ["sample_s"]
    assert named("warm_only", "startup_regions") == ["warm_s"]
    assert _unit(doc, "warm_only")["regions"] == []
    assert _unit(doc, "<module>")["startup_regions"] == ["*"]
    assert doc["regions"] == ["sample_s", "schedule_s"]  # seen in steps only: not warm_s
    fp = decode_footprint(json.dumps(doc).encode(), shown="fp.json")
    assert "sample_s" in fp.files["atom/steps.py"].units["sample"].startup_regions


def test_a_footprint_without_startup_regions_reads_every_start_up_run_as_any_region(
        engine: Path) -> None:
    doc = recorded(engine, WARMUP)
    for unit in doc["files"]["atom/steps.py"]["units"].values():
        del unit["startup_regions"]
    fp = decode_footprint(json.dumps(doc).encode(), shown="fp.json")
    units = fp.files["atom/steps.py"].units
    assert units["sample"].startup_regions == ("*",)
    assert units["stop"].startup_regions == ()


SHUTDOWN = """\
import sys
import lawkit.footprint as fp
from atom.steps import schedule, stop, both
both()
fp.phase("steps")
with fp.region("schedule_s"):
    schedule(1)
fp.phase("shutdown")
stop()
both()
if sys.argv[1:] == ["again"]:   # a sweep: a second capture enters steps again
    fp.phase("steps")
    with fp.region("schedule_s"):
        schedule(2)
    fp.phase("shutdown")
"""


def test_a_unit_that_ran_only_in_shutdown_counts_as_not_run(engine: Path) -> None:
    doc = recorded(engine, SHUTDOWN)
    assert _unit(doc, "stop")["phases"] == [] and _unit(doc, "stop")["shutdown"] is True
    assert _unit(doc, "stop")["regions"] == []
    assert _unit(doc, "both")["phases"] == ["startup"] and "shutdown" not in _unit(doc, "both")
    fp = decode_footprint(json.dumps(doc).encode(), shown="fp.json")
    assert fp.files["atom/steps.py"].units["stop"].phases == ()
    assert fp.files["atom/steps.py"].units["stop"].shutdown


def test_a_shutdown_the_process_leaves_for_steps_again_counts_as_steps_with_no_region(
        engine: Path) -> None:
    doc = recorded(engine, "import sys\nsys.argv[1:] = ['again']\n" + SHUTDOWN)
    assert _unit(doc, "stop")["phases"] == ["steps"] and _unit(doc, "stop")["regions"] == ["*"]
    assert _unit(doc, "both")["phases"] == ["startup", "steps"]
    assert _unit(doc, "both")["regions"] == ["*"]
    assert "shutdown" not in _unit(doc, "stop")
