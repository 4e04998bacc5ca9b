"""`lawkit.capture`, the engine-side writer: one row per step, the
columns in order, region seconds summed or empty, whole rows on disk whatever kills the run,
and a CaptureError naming the step for every misuse, with the rows already finished kept."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

import lawkit.footprint
from lawkit import capture
from lawkit.capture import CaptureError
from lawkit.cli import app
from lawkit.config import load_workspace
from lawkit.errors import LawkitError
from lawkit.keying.digest import current_digest

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()
FEATURES = ("batch_size", "num_tokens")
REGIONS = ("schedule_s", "sample_s")


def _run_steps(cap: capture.Capture, steps: int, *, start: int = 0) -> None:
    """Steps whose batch size is 8 + 4 i; schedule_s runs every step, sample_s every other."""
    cap.steps()
    for i in range(start, start + steps):
        with cap.step(batch_size=8 + 4 * i, num_tokens=float(i) / 2):
            with cap.region("schedule_s"):
                time.sleep(0.0002 * (1 + i))
            if i % 2:
                with cap.region("sample_s"):
                    pass


def _rows(path: Path) -> list[list[str]]:
    return [line.split(",") for line in path.read_text().splitlines()]


def test_a_csv_capture_has_step_features_regions_and_the_key_column_in_order(
        tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "captures" / "deep" / "run1.csv"
    with capture.open(path, features=FEATURES, regions=REGIONS) as cap:
        _run_steps(cap, 4)
    header, *rows = _rows(path)
    assert header == ["step", "batch_size", "num_tokens", "schedule_s", "sample_s", "atom"]
    assert [r[0] for r in rows] == ["0", "1", "2", "3"]
    assert [r[1:3] for r in rows] == [["8", "0.0"], ["12", "0.5"], ["16", "1.0"], ["20", "1.5"]]
    assert all(float(r[3]) >= 0.0002 for r in rows)
    assert [r[4] == "" for r in rows] == [True, False, True, False]
    assert {r[5] for r in rows} == {workspace}


def test_a_region_entered_twice_in_a_step_is_summed_and_one_inside_itself_timed_once(
        tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "run.jsonl"
    with capture.open(path, features=("n",), regions=("sample_s",)) as cap:
        cap.steps()
        with cap.step(n=1):
            for _ in range(2):
                with cap.region("sample_s"):
                    time.sleep(0.01)
        with cap.step(n=2), cap.region("sample_s"):
            time.sleep(0.1)
            with cap.region("sample_s"):
                time.sleep(0.1)
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert list(first) == ["step", "n", "sample_s", "atom"]
    assert 0.02 <= first["sample_s"] < 0.2
    # Once: 0.2 s, not 0.1 (from inside), nor 0.3 (twice); 0.1 s of room for a loaded machine.
    assert 0.2 <= second["sample_s"] < 0.3


def test_a_capture_it_wrote_fits_with_no_captured_on_and_empty_cells_are_left_out_and_counted(
        tmp_path: Path, workspace: str) -> None:
    for name in ("run.csv", "run.jsonl", "run.parquet"):
        with capture.open(name, features=FEATURES, regions=REGIONS) as cap:
            _run_steps(cap, 8)
        result = runner.invoke(app, ["fit", name, "--formula", "sample_s ~ 1 + batch_size",
                                     "--formula", "schedule_s ~ 1 + batch_size",
                                     "--out", "laws/host.yaml", "--json"])
        assert result.exit_code == 0, (name, result.output)
        report = json.loads(result.stdout)
        assert report["digest"] == workspace
        sample, schedule = report["laws"]
        assert sample["fit"]["n"] == 4 and sample["dropped"] == 4, name
        assert schedule["fit"]["n"] == 8 and schedule["dropped"] == 0, name
        scored = runner.invoke(app, ["score", "laws/host.yaml", name, "--json"])
        assert scored.exit_code == 0, scored.output
        by_name = {law["name"]: law for law in json.loads(scored.stdout)["laws"]}
        assert by_name["sample_s"]["n"] == 4 and by_name["sample_s"]["unmeasured"] == 4
        assert by_name["schedule_s"]["unmeasured"] == 0


def test_appending_to_its_own_file_counts_steps_on_and_keeps_every_row(
        tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "run.csv"
    for start in (0, 3):
        with capture.open(path, features=FEATURES, regions=REGIONS) as cap:
            _run_steps(cap, 3, start=start)
    _header, *rows = _rows(path)
    assert [r[0] for r in rows] == ["0", "1", "2", "3", "4", "5"]
    assert [r[1] for r in rows] == ["8", "12", "16", "20", "24", "28"]


def test_appending_after_a_torn_last_line_cuts_it_off_first(
        tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "run.csv"
    with capture.open(path, features=FEATURES, regions=REGIONS) as cap:
        _run_steps(cap, 2)
    path.write_bytes(path.read_bytes() + b"2,16,1.0,0.0")  # a run killed mid-row
    with capture.open(path, features=FEATURES, regions=REGIONS) as cap:
        _run_steps(cap, 1, start=2)
    assert [r[0] for r in _rows(path)[1:]] == ["0", "1", "2"]
    assert all(len(r) == 6 for r in _rows(path))


@pytest.mark.parametrize(("name", "existing", "expected"), [
    ("run.csv", b"step,batch_size,atom\n0,8,aaaaaaaa\n", "exists with another header"),
    ("run.jsonl", b'{"step": 0, "batch_size": 8, "atom": "aaaaaaaa"}\n',
     "exists with other columns"),
    ("run.jsonl", b"[" * 20000 + b"]" * 20000 + b"\n", "not this writer's"),
    ("run.parquet", b"PAR1", "never appended to"),
])
def test_appending_to_a_file_with_another_header_is_a_capture_error_and_changes_nothing(
        tmp_path: Path, workspace: str, name: str, existing: bytes, expected: str) -> None:
    path = tmp_path / name
    path.write_bytes(existing)
    with pytest.raises(CaptureError, match=expected) as info:
        capture.open(path, features=FEATURES, regions=REGIONS)
    assert isinstance(info.value, LawkitError) and info.value.exit_code == 2
    assert path.read_bytes() == existing


@pytest.mark.parametrize("name", ["run.csv", "run.jsonl"])
def test_appending_rows_under_another_digest_is_a_capture_error_and_changes_nothing(
        tmp_path: Path, workspace: str, name: str) -> None:
    path = tmp_path / name
    with capture.open(path, features=FEATURES, regions=REGIONS, digest="0badc0de") as cap:
        _run_steps(cap, 2)
    before = path.read_bytes()
    with pytest.raises(CaptureError, match=rf"atom='0badc0de': appending rows on {workspace}"):
        capture.open(path, features=FEATURES, regions=REGIONS)
    assert path.read_bytes() == before


def _misuse(cap: capture.Capture, case: str) -> None:
    if case == "a feature missing":
        with cap.step(batch_size=8):
            pass
    elif case == "a feature not declared":
        with cap.step(batch_size=8, num_tokens=1, seqs=2):
            pass
    elif case == "a non-finite feature":
        with cap.step(batch_size=8, num_tokens=math.inf):
            pass
    elif case == "a feature that is not a number":
        with cap.step(batch_size=8, num_tokens="12"):  # type: ignore[arg-type]
            pass
    elif case == "a region not declared":
        with cap.step(batch_size=8, num_tokens=1), cap.region("prepare_s"):
            pass
    elif case == "a region between steps":
        with cap.region("schedule_s"):
            pass
    elif case == "a step inside a step":
        with cap.step(batch_size=8, num_tokens=1), cap.step(batch_size=8, num_tokens=1):
            pass


@pytest.mark.parametrize(("case", "expected"), [
    ("a feature missing", r"step 2: feature 'num_tokens' missing"),
    ("a feature not declared", r"step 2: feature 'seqs' was not declared at open"),
    ("a non-finite feature", r"step 2: feature num_tokens=inf: expected a finite number"),
    ("a feature that is not a number", r"step 2: feature num_tokens='12': expected a number"),
    ("a region not declared", r"step 2: region 'prepare_s' was not declared at open "
                              r"\(regions: schedule_s, sample_s\)"),
    ("a region between steps", r"region 'schedule_s' entered between steps \(before step 2\)"),
    ("a step inside a step", r"step 2 begun inside step 2"),
])
def test_each_misuse_is_a_capture_error_naming_the_step_and_the_rows_before_it_are_on_disk(
        tmp_path: Path, workspace: str, case: str, expected: str) -> None:
    path = tmp_path / "run.csv"
    cap = capture.open(path, features=FEATURES, regions=REGIONS)
    _run_steps(cap, 2)
    with pytest.raises(CaptureError, match=expected):
        _misuse(cap, case)
    assert [r[0] for r in _rows(path)[1:]] == ["0", "1"]  # written before the error was raised
    with cap.step(batch_size=1, num_tokens=2):
        pass
    cap.close()
    assert [r[0] for r in _rows(path)[1:]] == ["0", "1", "2"]


def test_a_feature_set_inside_the_step_fills_its_cell(tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "run.csv"
    with capture.open(path, features=FEATURES, regions=REGIONS) as cap:
        cap.steps()
        with cap.step(num_tokens=3), cap.region("schedule_s"):
            cap.set(batch_size=48)
    assert _rows(path)[1][1:3] == ["48", "3"]


def test_a_body_that_raises_leaves_no_row_for_its_step(tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "run.csv"
    with capture.open(path, features=FEATURES, regions=REGIONS) as cap:
        _run_steps(cap, 1)
        with pytest.raises(KeyError), cap.step(batch_size=1, num_tokens=1), \
                cap.region("schedule_s"):
            raise KeyError("engine bug")
        assert lawkit.footprint.open_regions() == ()
        _run_steps(cap, 1, start=1)
    assert [r[0] for r in _rows(path)[1:]] == ["0", "1"]


@pytest.mark.parametrize(("kwargs", "expected"), [
    ({"features": "batch_size"}, "expected a sequence of column names"),
    ({"features": ("batch size",)}, "'batch size' is not a column name"),
    ({"features": ("n", "n")}, "'n' is named twice"),
    ({"features": ("n",), "regions": ("n",)}, "column 'n' is named twice"),
    ({"features": ("atom",)}, "column 'atom' is named twice"),
    ({"features": ("n",), "digest": "NOTHEX!!", "key": "atom"}, "expected 4 to 64 lowercase"),
])
def test_bad_columns_or_digest_are_refused_at_open_and_write_nothing(
        tmp_path: Path, workspace: str, kwargs: dict[str, object], expected: str) -> None:
    with pytest.raises(CaptureError, match=expected):
        capture.open(tmp_path / "run.csv", **kwargs)  # type: ignore[arg-type]
    assert not (tmp_path / "run.csv").exists()


def test_outside_a_workspace_the_digest_must_be_given(tmp_path: Path) -> None:
    with pytest.raises(CaptureError, match=r"cannot compute the engine digest .*pass digest="):
        capture.open(tmp_path / "run.csv", features=FEATURES)
    with capture.open(tmp_path / "run.csv", features=("n",), digest="0badc0de",
                      key="engine") as cap:
        cap.steps()
        with cap.step(n=1):
            pass
    assert _rows(tmp_path / "run.csv") == [["step", "n", "engine"], ["0", "1", "0badc0de"]]


def test_a_compressed_or_unknown_suffix_is_refused(tmp_path: Path, workspace: str) -> None:
    for name in ("run.csv.gz", "run.txt"):
        with pytest.raises(CaptureError, match=r"written as \.csv, \.jsonl or \.parquet"):
            capture.open(tmp_path / name, features=FEATURES)


KILLED_WRITER = """
import sys, time
from lawkit import capture
with capture.open(sys.argv[1], features=("batch_size",), regions=("schedule_s", "sample_s")) as cap:
    cap.steps()
    i = 0
    while True:
        with cap.step(batch_size=1 + i % 64):
            with cap.region("schedule_s"):
                sum(range(50 * (1 + i % 64)))
            if i % 3:
                with cap.region("sample_s"):
                    pass
        i += 1
        if i == 2000:
            print("running", flush=True)
"""


@pytest.mark.parametrize("name", ["killed.csv", "killed.jsonl"])
def test_a_writer_killed_mid_run_leaves_whole_rows_that_fit(
        tmp_path: Path, workspace: str, name: str) -> None:
    with subprocess.Popen([sys.executable, "-c", KILLED_WRITER, name], cwd=tmp_path,
                          stdout=subprocess.PIPE, text=True) as child:
        assert child.stdout is not None and child.stdout.readline() == "running\n"
        time.sleep(2.5)  # past two flushes
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    data = (tmp_path / name).read_bytes()
    assert data.count(b"\n") > 100 and data.endswith(b"\n")
    result = runner.invoke(app, ["fit", name, "--formula", "schedule_s ~ 1 + batch_size",
                                 "--out", "laws/host.yaml"])
    assert result.exit_code == 0, result.output


def test_a_torn_last_row_is_left_out_of_fit_and_score_with_a_note(
        tmp_path: Path, workspace: str) -> None:
    for name in ("run.csv", "run.jsonl"):
        with capture.open(name, features=FEATURES, regions=REGIONS) as cap:
            _run_steps(cap, 6)
        whole = Path(name).read_bytes()
        Path(name).write_bytes(whole[:-5])  # killed inside the key column of step 5
        fitted = runner.invoke(app, ["fit", name, "--formula", "schedule_s ~ 1 + batch_size",
                                     "--out", "laws/host.yaml", "--json"])
        assert fitted.exit_code == 0, fitted.output
        report = json.loads(fitted.stdout)
        assert report["laws"][0]["fit"]["n"] == 5
        assert len(report["notes"]) == 1 and report["notes"][0].startswith(f"{name}: ")
        scored = runner.invoke(app, ["score", "laws/host.yaml", name])
        assert scored.exit_code == 0, scored.output
        assert "schedule_s  5 " in scored.stdout
        assert f"note: {name}: " in scored.stdout and "left out" in scored.stdout


USER_SNIPPET = '''\
from lawkit import capture

with capture.open("captures/run1.csv", features=("batch_size",),
                  regions=("schedule_s",)) as cap:
    reveal_type(cap)
    cap.steps()
    with cap.step(batch_size=8):
        cap.set(batch_size=9)
        with cap.region("schedule_s"):
            pass
    columns: tuple[str, ...] = cap.columns
'''


def test_lawkit_capture_type_checks_under_mypy_strict_in_a_user_snippet(tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text(USER_SNIPPET)
    # The editable install hides lawkit from mypy: found on MYPYPATH instead, and, as an
    # installed package's would be, its own modules' errors are not the user's.
    env = {**os.environ, "MYPYPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "--follow-imports=silent", "user.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False, env=env)
    assert done.returncode == 0, done.stdout
    assert 'Revealed type is "lawkit.capture.Capture"' in done.stdout


def test_the_stand_in_engine_harness_writes_its_captures_with_lawkit_capture(
        tmp_path: Path) -> None:
    """examples/engine/run_steps.py times the Sarathi regions of the stand-in's step."""
    import shutil

    shutil.copytree(REPO / "examples" / "engine", tmp_path / "engine")
    (tmp_path / "lawkit.toml").write_text('laws = "laws"\n\n[digest]\nroot = "engine"\n'
                                          'packages = ["atom"]\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "engine")}
    done = subprocess.run([sys.executable, "engine/run_steps.py", "6", "captures/steps.csv"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr
    header, *rows = _rows(tmp_path / "captures" / "steps.csv")
    assert header == ["step", "batch_size", "schedule_s", "sampler_s", "prepare_inputs_s",
                      "process_model_outputs_s", "atom"]
    assert len(rows) == 6 and all(all(cell for cell in row) for row in rows)
    assert {row[-1] for row in rows} == {current_digest(load_workspace())}
    fit = runner.invoke(app, ["fit", "captures/steps.csv", "--formula",
                              "sampler_s ~ 1", "--out", "laws/host.yaml"])
    assert fit.exit_code == 0, fit.output


def test_a_capture_never_closed_gets_its_rows_written_at_interpreter_exit(
        tmp_path: Path) -> None:
    script = ("from lawkit import capture\n"
              "for name in ('run.csv', 'run.parquet'):\n"
              "    cap = capture.open(name, features=('n',), digest='0badc0de')\n"
              "    cap.steps()\n"
              "    for i in range(3):\n"
              "        with cap.step(n=i):\n"
              "            pass\n")
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert _rows(tmp_path / "run.csv")[1:] == [["0", "0", "0badc0de"], ["1", "1", "0badc0de"],
                                               ["2", "2", "0badc0de"]]
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "run.parquet").column("n").to_pylist() == [0.0, 1.0, 2.0]


def test_numpy_scalars_and_int_enums_are_written_as_the_numbers_they_are(
        tmp_path: Path, workspace: str) -> None:
    import enum

    import numpy as np

    class Phase(enum.IntEnum):
        PREFILL = 1

    for suffix in (".csv", ".jsonl"):
        path = tmp_path / f"run{suffix}"
        with capture.open(path, features=FEATURES) as cap:
            cap.steps()
            with cap.step(batch_size=np.int64(4), num_tokens=np.float64(2.5)):
                pass
            with cap.step(batch_size=Phase.PREFILL, num_tokens=np.float32(0.5)):
                pass
        if suffix == ".csv":
            assert [r[:3] for r in _rows(path)[1:]] == [["0", "4", "2.5"], ["1", "1", "0.5"]]
        else:
            rows = [json.loads(line) for line in path.read_text().splitlines()]
            assert [(r["batch_size"], r["num_tokens"]) for r in rows] == [(4, 2.5), (1, 0.5)]
    with capture.open(tmp_path / "bool.csv", features=FEATURES) as cap:
        cap.steps()
        with pytest.raises(CaptureError, match=r"step 0: feature batch_size=np.True_: "
                                               r"expected a number"), \
                cap.step(batch_size=np.True_, num_tokens=1):
            pass


def test_parquet_without_pyarrow_is_refused_at_open_not_after_the_run(
        tmp_path: Path, workspace: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as if it were not installed
    with pytest.raises(CaptureError, match=r"writing Parquet needs pyarrow"):
        capture.open(tmp_path / "run.parquet", features=FEATURES)
    assert not (tmp_path / "run.parquet").exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
def test_a_step_in_a_forked_worker_is_refused_not_lost(tmp_path: Path, workspace: str) -> None:
    path = tmp_path / "run.csv"
    with capture.open(path, features=FEATURES) as cap:
        cap.steps()
        pid = os.fork()
        if pid == 0:  # the worker: its rows would be written by no one
            try:
                cap.step(batch_size=1, num_tokens=1)
            except CaptureError as exc:
                os._exit(7 if "open a capture file of the worker's own" in str(exc) else 1)
            os._exit(0)
        _pid, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 7
        with cap.step(batch_size=2, num_tokens=2):
            pass
    assert [r[1] for r in _rows(path)[1:]] == ["2"]
