"""The captures a run wrote, found under its working directory, read from the rows it added,
and put back as they were after a run made only to measure."""

from __future__ import annotations

import math
from pathlib import Path

from lawkit.capture import open as open_capture
from lawkit.footprint.runcaptures import Kept, RunCaptures, region_seconds


def _capture(path: Path, steps: int) -> None:
    """One run appending ``steps`` rows, each timing region ``a_s``."""
    with open_capture(path, features=("n",), regions=("a_s",), digest="abcdef12") as cap:
        cap.steps()
        for n in range(steps):
            with cap.step(n=n + 10 * steps), cap.region("a_s"):
                pass


def test_a_run_is_read_from_the_rows_it_appended_in_csv_and_jsonl_below_the_folder(
        tmp_path: Path) -> None:
    _capture(tmp_path / "captures" / "run.csv", 1)
    before = RunCaptures.before(tmp_path)
    _capture(tmp_path / "captures" / "run.csv", 2)
    _capture(tmp_path / "deep" / "er" / "run.jsonl", 3)
    _capture(tmp_path / ".venv" / "hidden.csv", 4)  # a hidden folder is not looked in
    times = before.column_times()
    assert sorted(times["n"]) == [20, 21, 30, 31, 32]  # the rows the run added, and only those
    assert len(times["a_s"]) == 5 and all(t >= 0 for t in times["a_s"])
    assert region_seconds(times)["a_s"] == math.fsum(times["a_s"])


def test_kept_captures_are_put_back_and_new_ones_removed(tmp_path: Path) -> None:
    _capture(tmp_path / "run.csv", 1)
    original = (tmp_path / "run.csv").read_bytes()
    spare = tmp_path / "spare"
    spare.mkdir()
    kept = Kept(tmp_path, spare)
    _capture(tmp_path / "run.csv", 1)
    _capture(tmp_path / "new.jsonl", 1)
    kept.restore()
    assert (tmp_path / "run.csv").read_bytes() == original
    assert not (tmp_path / "new.jsonl").exists()
    assert not (tmp_path / "new.jsonl.host.json").exists()


def test_a_last_line_without_its_line_break_is_no_row_of_the_run_torn_or_whole(
        tmp_path: Path) -> None:
    run = tmp_path / "run.csv"
    _capture(run, 1)
    run.write_bytes(run.read_bytes() + b"11,12")  # a row torn mid-write: cut by the next run
    before = RunCaptures.before(tmp_path)
    _capture(run, 2)
    assert sorted(before.column_times()["n"]) == [20, 21]
    run.write_bytes(run.read_bytes()[:-1])  # a whole last row that lost its line break: kept
    before = RunCaptures.before(tmp_path)
    _capture(run, 2)
    assert sorted(before.column_times()["n"]) == [20, 21]
