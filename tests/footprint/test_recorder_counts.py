"""What the 3.12+ recorder reports of its own work: the callbacks it fired per region and event
kind, the threads that kept code armed (`RecordReport.events`, `RecordReport.armed_threads`),
and the log of every monitoring call behind ``LAWKIT_SYSMON_LOG``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from lawkit.config import load_workspace
from lawkit.footprint.measured.sitehook import LOG_ENV
from lawkit.footprint.record import RecordReport, record_footprint

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12),
                                reason="coverage.py (3.11) fires no callback of lawkit's")

HARNESS = """\
import threading, time
import lawkit.footprint as fp
from atom.helpers import helper
from atom.util import util_fn

go, done = threading.Event(), threading.Event()


def engine():
    go.wait()
    for step in range(200):
        with fp.region("sample_s"):
            helper(step)
            util_fn(step)
    done.set()


fp.phase("steps")
thread = threading.Thread(target=engine, name="engine")
thread.start()
go.set()
POLL
thread.join()
"""
WAITING = HARNESS.replace("POLL\n", "done.wait()\n")
# a poll loop, not one of threading's waits: the main thread is live while it sleeps
POLLING = HARNESS.replace("POLL\n", "while not done.is_set():\n    time.sleep(0.0002)\n")


def _record(engine: Path, harness: str) -> RecordReport:
    (engine / "harness.py").write_text(harness)
    ws = load_workspace(config=engine / "lawkit.toml")
    return record_footprint(ws, [sys.executable, "harness.py"], engine / "fp.json", cwd=engine)


def test_a_polling_main_thread_is_named_as_keeping_the_regions_code_armed(engine: Path) -> None:
    report = _record(engine, POLLING)
    assert report.armed_threads["sample_s"] == ["MainThread"]
    assert report.armed_threads["*"] == ["engine"]
    # the main thread, live with no region open, never runs helper or util_fn: each of the
    # engine thread's calls of them in the region fires a callback, about two a step
    assert report.events["sample_s"]["PY_START"] > 100
    assert set(report.events) == {"sample_s", "*"}


def test_a_main_thread_blocked_in_a_wait_lets_the_regions_code_fire_about_once(
        engine: Path) -> None:
    report = _record(engine, WAITING)
    # once each in the region, and again where the main thread was live for a moment (between
    # go.set() and its wait): never once a step
    assert report.events["sample_s"]["PY_START"] <= 6


def test_the_sysmon_log_names_every_monitoring_call_of_each_process(
        engine: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    monkeypatch.setenv(LOG_ENV, str(logs))
    _record(engine, WAITING.replace("fp.phase(\"steps\")\n",
                                    "fp.phase(\"steps\")\nimport os\n"
                                    "if os.fork() == 0:\n    helper(0)\n    os._exit(0)\n"
                                    "os.wait()\n"))
    files = sorted(logs.iterdir())
    assert len(files) == 2  # the main process and its forked child, a file each
    text = "\n".join(f.read_text() for f in files)
    helpers = os.path.realpath(engine / "atom" / "helpers.py")
    assert f"set_local_events 4 {helpers}:1 helper 3" in text  # armed as its module ran
    assert f"DISABLE 4 PY_START {helpers}:1 helper" in text
    assert "set_events 4 " in text


def test_nothing_is_logged_without_the_variable(engine: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LOG_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    _record(engine, WAITING)
    assert not list(tmp_path.glob("**/sysmon-*.log"))
