"""`lawkit footprint overhead`: a polling-thread harness run bare and recorded in turn, each
region's recorded/bare ratio read from the captures it wrote, the A/A beside it, and the
recorder's own warning naming the polling thread."""

from __future__ import annotations

import contextlib
import re
import sys
from pathlib import Path

import pytest

from testing.cli import invoke

ENGINE = '''\
def leaf(x):
    return x + 1


def sample(n):
    total = 0
    for _ in range(n):
        total = leaf(total)
    return total


def schedule(waiting):
    return sorted(waiting)
'''

# The issue's shape: the engine thread runs the steps' regions while the main thread polls
# (time.sleep, as a socket poll loop does) instead of blocking in one of threading's waits.
HARNESS = '''\
import threading, time
from lawkit import capture
from eng import core

done = threading.Event()

def loop(cap):
    for i in range(30):
        with cap.step(batch=i):
            with cap.region("sample_s"):
                core.sample(3000)
            with cap.region("schedule_s"):
                core.schedule(list(range(5000, 0, -1)))
    done.set()

with capture.open("captures/run.csv", features=("batch",),
                  regions=("sample_s", "schedule_s")) as cap:
    core.sample(1)
    cap.steps()
    engine = threading.Thread(target=loop, args=(cap,), name="engine")
    engine.start()
    while not done.is_set():
        time.sleep(0.0002)
    engine.join()
'''


@pytest.fixture
def polling(tmp_path: Path) -> Path:
    """A workspace whose harness polls on its main thread while its engine thread steps."""
    (tmp_path / "eng").mkdir()
    (tmp_path / "eng" / "__init__.py").write_text("")
    (tmp_path / "eng" / "core.py").write_text(ENGINE)
    (tmp_path / "lawkit.toml").write_text('[digest]\npackages = ["eng"]\n')
    (tmp_path / "harness.py").write_text(HARNESS)
    return tmp_path


def test_overhead_prints_each_regions_ratio_with_the_aa_and_the_polling_threads_warning(
        polling: Path) -> None:
    (polling / "captures").mkdir()
    kept = polling / "captures" / "run.csv"
    with contextlib.chdir(polling):
        result = invoke("footprint", "overhead", "--runs", "2", "--", sys.executable,
                        "harness.py")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("2 recorded and 3 bare runs, alternated")
    rows = {m.group(1): (float(m.group(2)), float(m.group(3)))
            for m in re.finditer(r"^(\w+_s) +[\d.]+ +([\d.]+)x +([\d.]+)x$", result.stdout,
                                 re.MULTILINE)}
    assert set(rows) == {"sample_s", "schedule_s"}, result.stdout
    assert not kept.exists()  # the runs only measured: no capture is left behind
    if sys.version_info < (3, 12):
        assert "coverage.py, whose tracer inflates step times" in result.stderr
        return
    # sample_s calls leaf() 3000 times a step, each a callback while the main thread polls:
    # how much that costs is the machine's and the Python's (9x here on 3.12, 1.2x on 3.13),
    # so the ratio is read, not bounded (bench/footprint_threads.py measures it)
    assert rows["sample_s"][0] > 0 and rows["sample_s"][1] > 0, result.stdout
    [warning] = [line for line in result.stderr.splitlines() if "warning" in line]
    assert re.match(r"lawkit footprint overhead: warning: recording took about (\d+%|all) of "
                    r"sample_s's time in the captures", warning), warning
    assert "thread MainThread kept region sample_s's code armed: it polls instead of " \
        "blocking; make it wait in one of threading's waits (queue.Queue.get" in warning


def test_overhead_refuses_a_harness_that_writes_no_captures(polling: Path) -> None:
    (polling / "harness.py").write_text(
        "import lawkit.footprint as fp\nfrom eng import core\nfp.phase('steps')\n"
        "with fp.region('sample_s'):\n    core.sample(10)\n")
    with contextlib.chdir(polling):
        result = invoke("footprint", "overhead", "--runs", "1", "--", sys.executable,
                        "harness.py")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == (
        "lawkit: error: the runs wrote no rows timing sample_s to a lawkit.capture .csv or "
        ".jsonl file in or below .: overhead reads each run's region times from the captures "
        "it writes there")


@pytest.mark.skipif(sys.version_info < (3, 12), reason="the recorder counts its callbacks on "
                    "sys.monitoring (3.12+)")
def test_record_reports_its_cost_per_region_and_warns_once_naming_the_polling_thread(
        polling: Path) -> None:
    with contextlib.chdir(polling):
        result = invoke("footprint", "record", "--out", "fp.json", "--", sys.executable,
                        "harness.py")
    assert result.exit_code == 0, result.output
    [sample] = [line for line in result.stdout.splitlines()
                if line.startswith("recorder cost: sample_s: ")]
    assert "callbacks in steps (code kept armed by MainThread), about " in sample
    assert re.search(r" ms of its [\d.]+ ms in the captures \((\d+%|all)\)$", sample), sample
    [warning] = [line for line in result.stderr.splitlines() if "warning" in line]
    assert warning.startswith("lawkit footprint record: warning: recording took about ")
    assert "thread MainThread kept region sample_s's code armed: it polls" in warning
    assert (polling / "captures" / "run.csv").is_file()  # record's captures are the user's


@pytest.mark.skipif(sys.version_info < (3, 12), reason="the recorder counts its callbacks on "
                    "sys.monitoring (3.12+)")
def test_record_of_the_same_engine_blocked_in_a_queue_wait_warns_of_nothing(
        polling: Path) -> None:
    harness = polling / "harness.py"
    harness.write_text(harness.read_text().replace(
        "    while not done.is_set():\n        time.sleep(0.0002)\n", "    done.wait()\n"))
    with contextlib.chdir(polling):
        result = invoke("footprint", "record", "--out", "fp.json", "--", sys.executable,
                        "harness.py")
    assert result.exit_code == 0, result.output
    assert "warning" not in result.stderr, result.stderr
