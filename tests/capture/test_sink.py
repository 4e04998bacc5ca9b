"""A capture's writes that fail (the disk full for a moment): no finished row is lost, a torn
row is never left anywhere but last, and the engine learns of a failure that lasts."""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import lawkit.capture.sink
from lawkit import capture
from lawkit.capture import CaptureError

_real_write = os.write


def _writes_to(path: Path, fd: int) -> bool:
    try:
        return os.fstat(fd).st_ino == path.stat().st_ino
    except OSError:
        return False


def _failing(path: Path, fails: Callable[[], bool], *, partial: int = 0,
             ) -> Callable[[int, bytes], int]:
    """An `os.write` that, for the capture at `path` while `fails()`, writes `partial` bytes (a
    short write: part of a row on disk) and fails with a full disk at the next call, as the
    system does."""
    short = [False]

    def write(fd: int, data: bytes) -> int:
        if _writes_to(path, fd):
            if short[0]:
                short[0] = False
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            if fails():
                if partial and len(data) > partial:
                    short[0] = True
                    return _real_write(fd, bytes(data[:partial]))
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return _real_write(fd, data)
    return write


def _check_rows(path: Path, steps: int) -> None:
    header, *rows = path.read_text().split("\n")
    assert header == "step,n,atom" and rows[-1] == ""  # the file ends with a whole row
    assert [row.split(",")[:2] for row in rows[:-1]] == [[str(i), str(i)] for i in range(steps)]


def test_a_background_flush_that_fails_once_loses_no_row_and_leaves_no_torn_row(
        tmp_path: Path, workspace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lawkit.capture.sink, "FLUSH_SECONDS", 0.02)
    path = tmp_path / "run.csv"
    failed: list[str] = []

    def once_in_the_flusher() -> bool:
        if failed or threading.current_thread().name != "lawkit-capture-flush":
            return False
        failed.append("failed")
        return True

    with capture.open(path, features=("n",)) as cap:
        monkeypatch.setattr(os, "write", _failing(path, once_in_the_flusher, partial=5))
        cap.steps()
        for i in range(60):
            with cap.step(n=i):
                time.sleep(0.005)
    assert failed == ["failed"]
    _check_rows(path, 60)


def test_a_write_that_keeps_failing_is_raised_at_the_next_step_and_at_close_losing_nothing(
        tmp_path: Path, workspace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lawkit.capture.sink, "FLUSH_SECONDS", 0.02)
    monkeypatch.setattr(lawkit.capture.sink, "CLOSE_TRIES", (0.01,))
    path = tmp_path / "run.csv"
    full = False
    cap = capture.open(path, features=("n",))
    monkeypatch.setattr(os, "write", _failing(path, lambda: full, partial=3))
    cap.steps()
    for i in range(3):
        with cap.step(n=i):
            pass
    full = True
    steps = 3
    with pytest.raises(CaptureError, match=r"run.csv: step \d+ not begun: cannot write: No "
                                           r"space left on device; \d+ finished rows are held "
                                           r"in memory, not lost: they are written at the "
                                           r"next step or at close once the disk has room"):
        for i in range(3, 10_000):
            with cap.step(n=i):
                time.sleep(0.002)
            steps += 1
    with pytest.raises(CaptureError, match=rf"run.csv: cannot write: No space left on device; "
                                           rf"{steps} finished rows are held in memory"):
        cap.close()  # the rows since the last write that succeeded, none lost
    full = False  # room again
    cap.close()
    _check_rows(path, steps)
    cap.close()  # closed: nothing more to do


def test_a_parquet_capture_whose_write_fails_at_close_keeps_its_rows_for_another_close(
        tmp_path: Path, workspace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import pyarrow.parquet as pq

    real_write_table = pq.write_table
    fails = [True]

    def write_table(table: object, where: object) -> None:
        if fails.pop():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_write_table(table, where)

    monkeypatch.setattr(pq, "write_table", write_table)
    path = tmp_path / "run.parquet"
    cap = capture.open(path, features=("n",))
    cap.steps()
    for i in range(4):
        with cap.step(n=i):
            pass
    with pytest.raises(CaptureError, match=r"cannot write: No space left on device; its 4 rows "
                                           r"are held in memory, not lost"):
        cap.close()
    assert not path.exists()
    fails.append(False)
    cap.close()
    assert pq.read_table(path).column("n").to_pylist() == [0.0, 1.0, 2.0, 3.0]
