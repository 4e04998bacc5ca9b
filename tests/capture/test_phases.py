"""A capture through an engine's phases: a warm-up through the step
code before `cap.steps()`, which writes no row, and the steps' end once the last capture in
steps has closed and no step is open on any thread."""

from __future__ import annotations

import queue
import threading
from pathlib import Path

import pytest

import lawkit.capture
import lawkit.footprint
from lawkit import capture
from lawkit.capture import CaptureError


def _rows(path: Path) -> list[list[str]]:
    return [line.split(",") for line in path.read_text().splitlines()[1:]]


def test_warm_up_steps_and_regions_before_cap_steps_write_no_row_and_take_no_number(
        tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "run.csv"
    with capture.open(path, features=("n",), regions=("schedule_s",)) as cap:
        for i in range(3):  # the engine's warm-up, through its own step code, unguarded
            with cap.step(n=i), cap.region("schedule_s"):
                cap.set(n=i + 1)
        assert lawkit.footprint.current_phase() == "startup"
        cap.steps()
        for i in range(2):
            with cap.step(n=10 + i), cap.region("schedule_s"):
                pass
    assert [row[:2] for row in _rows(path)] == [["0", "10"], ["1", "11"]]
    assert all(row[2] for row in _rows(path))


def test_a_warm_up_step_is_checked_as_a_step_is_and_named_a_warm_up_step(
        tmp_path: Path, workspace: str) -> None:
    with capture.open(tmp_path / "run.csv", features=("n",), regions=("schedule_s",)) as cap:
        with cap.step(n=1):
            pass
        with pytest.raises(CaptureError, match=r"warm-up step 1: region 'sample_s' was not "
                                               r"declared at open"), cap.step(n=1):
            cap.region("sample_s")
        with pytest.raises(CaptureError, match=r"warm-up step 1: feature 'n' missing"), \
                cap.step():
            pass
        cap.steps()
        with cap.step(n=2):
            pass
    assert _rows(tmp_path / "run.csv") == [["0", "2", "", workspace]]


def test_a_warm_up_region_is_on_the_threads_regions_while_recorded(
        tmp_path: Path, workspace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The recorder attributes a warm-up's runs to their regions (`startup_regions`)."""
    monkeypatch.setattr(lawkit.capture, "recording", lambda: True)
    with capture.open(tmp_path / "run.csv", features=("n",), regions=("schedule_s",)) as cap:
        with cap.step(n=1), cap.region("schedule_s"):
            assert lawkit.footprint.open_regions() == ("schedule_s",)
        assert lawkit.footprint.open_regions() == ()
        cap.steps()


def test_an_engine_thread_warms_up_then_steps_once_the_main_thread_calls_cap_steps(
        tmp_path: Path, workspace: str) -> None:
    """A serving engine's shape: the step loop in a background thread, a warm-up through the
    step code, the main thread submitting work and waiting on a queue."""
    path = tmp_path / "run.csv"
    cap = capture.open(path, features=("batch_size",), regions=("schedule_s", "forward_s"))
    submitted: queue.Queue[int | None] = queue.Queue()
    done: queue.Queue[int] = queue.Queue()
    warm = threading.Event()
    died: list[BaseException] = []

    def step(batch_size: int) -> None:
        with cap.step(batch_size=batch_size):
            with cap.region("schedule_s"):
                pass
            with cap.region("forward_s"):
                pass

    def engine() -> None:
        try:
            for size in (1, 2, 4):  # the warm-up: every batch size once
                step(size)
            warm.set()
            while (size := submitted.get()) is not None:
                step(size)
                done.put(size)
        except BaseException as exc:  # what would kill the engine thread
            died.append(exc)
            warm.set()

    thread = threading.Thread(target=engine)
    thread.start()
    assert warm.wait(30)
    cap.steps()
    for size in (3, 5):
        submitted.put(size)
        assert done.get(timeout=30) == size
    submitted.put(None)
    thread.join(30)
    cap.close()
    assert died == [] and not thread.is_alive()
    assert [row[:2] for row in _rows(path)] == [["0", "3"], ["1", "5"]]


def test_closing_a_capture_that_saw_only_warm_up_steps_is_a_capture_error(
        tmp_path: Path, workspace: str) -> None:
    cap = capture.open(tmp_path / "run.csv", features=("n",))
    for i in range(2):
        with cap.step(n=i):
            pass
    with pytest.raises(CaptureError, match=r"run.csv: closed after 2 warm-up steps and no "
                                           r"cap.steps\(\): nothing was captured"):
        cap.close()
    cap.close()  # closed: said once
    # A body that raised says what happened itself; a capture never stepped closes quietly.
    with pytest.raises(KeyError), capture.open(tmp_path / "b.csv", features=("n",)) as cap:
        with cap.step(n=1):
            pass
        raise KeyError("engine failed to start")
    capture.open(tmp_path / "c.csv", features=("n",)).close()


def test_the_steps_end_when_the_last_capture_in_steps_closes_and_a_later_one_steps_again(
        tmp_path: Path, workspace: str) -> None:
    first = capture.open(tmp_path / "a.csv", features=("n",))
    second = capture.open(tmp_path / "b.csv", features=("n",))
    first.steps()
    second.steps()
    first.close()
    assert lawkit.footprint.current_phase() == "steps"
    second.close()
    assert lawkit.footprint.current_phase() == "shutdown"
    with capture.open(tmp_path / "c.csv", features=("n",)) as cap:  # a sweep: the next run
        cap.steps()
        assert lawkit.footprint.current_phase() == "steps"
        with cap.step(n=1):
            pass
    assert lawkit.footprint.current_phase() == "shutdown"


def test_the_steps_end_only_once_no_step_is_open_on_any_thread(
        tmp_path: Path, workspace: str) -> None:
    cap = capture.open(tmp_path / "run.csv", features=("n",))
    cap.steps()
    inside, leave = threading.Event(), threading.Event()
    raised: list[BaseException] = []

    def engine() -> None:
        try:
            with cap.step(n=1):
                inside.set()
                leave.wait(30)
        except CaptureError as exc:
            raised.append(exc)

    thread = threading.Thread(target=engine)
    thread.start()
    assert inside.wait(30)
    cap.close()  # from the main thread, while the engine thread is inside a step
    assert lawkit.footprint.current_phase() == "steps"
    leave.set()
    thread.join(30)
    assert lawkit.footprint.current_phase() == "shutdown"
    # that step's row cannot be written any more: said, not lost in silence
    assert [str(e) for e in raised] == [
        f"{tmp_path / 'run.csv'}: step 0 ended after the capture was closed (from another "
        "thread?): its row is not written; close the capture once its last step has ended"]
