"""The writer refuses, naming the feature, every number lawkit's reader would refuse: one too
large for a float, and one beyond the reader's 1e150 in magnitude."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit import capture
from lawkit.capture import CaptureError
from lawkit.cli import app

runner = CliRunner()
ABOVE = math.nextafter(1e150, math.inf)


@pytest.mark.parametrize(("value", "expected"), [
    (10**400, r"feature num_tokens=<an int of 1329 bits>: too large for a float \(lawkit's "
              r"reader takes numbers up to ±1e\+150: rescale it"),
    (10**300, r"feature num_tokens=<an int of 997 bits>: beyond ±1e\+150, more than lawkit's "
              r"reader takes"),
    (-ABOVE, r"feature num_tokens=-1.0000000000000002e\+150: beyond ±1e\+150"),
    (Fraction(10**400), r"feature num_tokens=inf: expected a finite number"),
], ids=["10**400", "10**300", "-(1e150+)", "Fraction(10**400)"])
def test_a_feature_the_reader_would_refuse_is_a_capture_error_naming_it(
        tmp_path: Path, workspace: str, value: object, expected: str) -> None:
    path = tmp_path / "run.csv"
    with capture.open(path, features=("batch_size", "num_tokens")) as cap:
        cap.steps()
        with pytest.raises(CaptureError, match=rf"run.csv: step 0: {expected}"), \
                cap.step(batch_size=1, num_tokens=value):  # type: ignore[arg-type]
            pass
        with cap.step(batch_size=1, num_tokens=1):
            pass
    assert len(path.read_text().splitlines()) == 2


@pytest.mark.parametrize("value", [1e150, -1e150, 10**150, ABOVE, -ABOVE, 10**150 + 10**140,
                                   10**300, 10**400],
                         ids=["1e150", "-1e150", "10**150", "1e150+", "-(1e150+)",
                              "10**150+10**140", "10**300", "10**400"])
def test_the_writer_takes_exactly_the_numbers_the_reader_takes(
        tmp_path: Path, workspace: str, value: float) -> None:
    try:
        with capture.open("run.csv", features=("n",), regions=("schedule_s",)) as cap:
            cap.steps()
            with cap.step(n=value):
                pass
        written = True
    except CaptureError:
        written = False
    rows = "".join(f"{i},{i + 1},0.{i + 1},{workspace}\n" for i in range(3))
    Path("read.csv").write_text(f"step,n,schedule_s,atom\n{rows}3,{value!r},0.4,{workspace}\n")
    fitted = runner.invoke(app, ["fit", "read.csv", "--formula", "schedule_s ~ 1 + n", "--out",
                                 "laws/host.yaml"])
    assert fitted.exit_code in (0, 2), fitted.output
    assert written == (fitted.exit_code == 0), fitted.output
