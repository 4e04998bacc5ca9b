"""Appending to a capture whose last line has no line break: a last row
that parses whole is kept, as lawkit's reader keeps it; only a torn one is cut off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit import capture
from lawkit.cli import app

runner = CliRunner()


def _write(path: Path, steps: range) -> None:
    with capture.open(path, features=("batch_size",), regions=("schedule_s",)) as cap:
        cap.steps()
        for i in steps:
            with cap.step(batch_size=8 + 4 * i), cap.region("schedule_s"):
                sum(range(100 * (1 + i)))


def _read_rows(name: str) -> int:
    """How many rows lawkit's reader takes from the file."""
    fitted = runner.invoke(app, ["fit", name, "--formula", "schedule_s ~ 1 + batch_size",
                                 "--out", "laws/host.yaml", "--json"])
    assert fitted.exit_code == 0, fitted.output
    n: int = json.loads(fitted.stdout)["laws"][0]["fit"]["n"]
    return n


def _steps(path: Path) -> list[int]:
    lines = path.read_text().splitlines()
    if path.suffix == ".csv":
        return [int(line.split(",")[0]) for line in lines[1:]]
    return [json.loads(line)["step"] for line in lines]


@pytest.mark.parametrize("name", ["run.csv", "run.jsonl"])
def test_appending_keeps_a_whole_last_row_that_lacks_its_line_break(
        tmp_path: Path, workspace: str, name: str) -> None:
    path = tmp_path / name
    _write(path, range(4))
    path.write_bytes(path.read_bytes().removesuffix(b"\n"))  # a tool stripped the last break
    assert _read_rows(name) == 4  # the reader keeps that row
    _write(path, range(4, 6))
    assert _steps(path) == [0, 1, 2, 3, 4, 5]
    assert _read_rows(name) == 6


@pytest.mark.parametrize(("name", "cut"), [
    ("run.csv", 1),    # inside the digest: every column, but not a whole digest
    ("run.csv", 12),   # before the key column
    ("run.jsonl", 2),  # not whole JSON
])
def test_appending_cuts_off_only_a_torn_last_row_as_the_reader_leaves_it_out(
        tmp_path: Path, workspace: str, name: str, cut: int) -> None:
    path = tmp_path / name
    _write(path, range(4))
    path.write_bytes(path.read_bytes()[:-1 - cut])  # a run killed mid-row
    assert _read_rows(name) == 3
    _write(path, range(3, 5))
    assert _steps(path) == [0, 1, 2, 3, 4]
    assert _read_rows(name) == 5


def test_a_capture_holding_only_its_header_without_its_line_break_is_appended_to(
        tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "run.csv"
    path.write_text("step,batch_size,schedule_s,atom")
    _write(path, range(2))
    assert path.read_text().splitlines()[0] == "step,batch_size,schedule_s,atom"
    assert _steps(path) == [0, 1]
