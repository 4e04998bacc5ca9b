"""The Python API: `lawkit.load`, `Law.predict`, and the commands as functions returning the
reports the commands print."""

from __future__ import annotations

import functools
import json
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

import lawkit
from lawkit.cli import app
from testing.workspaces import ENGINE, make_fit_folder

runner = CliRunner()


def _workspace(root: Path) -> Path:
    """A workspace whose engine digests to the test vector 8927e824, with captures."""
    make_fit_folder(root, ENGINE)
    rows = [{"phase": phase, "num_seqs": s, "host_s": (0.002 if phase == "prefill" else 0.001)
             + 1e-4 * s + (1e-6 if s % 2 else -1e-6)}
            for phase in ("prefill", "decode") for s in range(1, 33)]
    pd.DataFrame(rows).to_csv(root / "caps.csv", index=False)
    return root


def _fit(root: Path) -> lawkit.fitting.fit.FitReport:
    return lawkit.fit(root / "caps.csv", out=root / "laws" / "host.yaml",
                      formula="host_s ~ 1 + num_seqs", by="phase", captured_on="current",
                      workspace=root)


def test_importing_lawkit_loads_nothing_until_a_name_is_used() -> None:
    code = ("import sys, lawkit\n"
            "print(sorted(m for m in sys.modules if m.startswith('lawkit') or m in "
            "('numpy', 'pydantic', 'typer')))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "['lawkit', 'lawkit._version']"  # the version: one string


def test_the_api_names_are_the_library_objects() -> None:
    from lawkit import errors
    from lawkit.lawfiles import lawfile, predict

    assert lawkit.LawFile is lawfile.LawFile and lawkit.Law is lawfile.Law
    assert lawkit.load is lawfile.load
    assert lawkit.LawDomainWarning is predict.LawDomainWarning
    assert issubclass(lawkit.LawDomainWarning, UserWarning)
    assert lawkit.LawkitError is errors.LawkitError
    for name in lawkit.__all__:
        assert getattr(lawkit, name) is not None
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        lawkit.nope  # noqa: B018


def test_the_api_names_are_functions_whatever_was_imported_first() -> None:
    code = ("import lawkit.keying.rekey, lawkit.keying.digest, lawkit.fitting.score\n"
            "import inspect, lawkit\n"
            "print(*(inspect.isfunction(getattr(lawkit, n))\n"
            "        for n in ('rekey', 'digest', 'score', 'check', 'fit', 'load')))\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.split() == ["True"] * 6


def test_no_module_of_lawkit_is_named_like_an_api_name() -> None:
    top = {p.stem for p in Path(lawkit.__file__).parent.iterdir()}
    assert not top & set(lawkit.__all__)


def test_load_then_law_then_predict(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    _fit(root)
    law = lawkit.load(root / "laws" / "host.yaml").law("host_s[prefill]")
    assert law.predict({"num_seqs": 10}) == pytest.approx(0.002 + 1e-3, rel=1e-3)
    values = law.predict(pd.DataFrame({"num_seqs": [1, 16, 32]}))
    assert values.tolist() == pytest.approx([0.0021, 0.0036, 0.0052], rel=1e-3)
    with pytest.warns(lawkit.LawDomainWarning, match=r"num_seqs 64 > 32"):
        law.predict({"num_seqs": 64})


def test_digest_returns_the_report_lawkit_digest_prints(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    report = lawkit.digest(root)
    assert report.digest == "8927e824"
    assert report.to_json() == json.loads(runner.invoke(app, ["digest", "--json"]).stdout)
    assert lawkit.digest(engine=root / "engine").digest == "8927e824"


def test_check_returns_the_report_lawkit_check_prints(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    _fit(root)
    report = lawkit.check(root)
    assert report.ok and report.digest == "8927e824"
    result = runner.invoke(app, ["check", "--format", "json"])
    assert result.exit_code == 0, result.output
    assert report.to_json() == json.loads(result.stdout)


def test_rekey_returns_the_report_lawkit_rekey_prints(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    _fit(root)
    report = lawkit.rekey(root, why="docstring only", to="0badc0de", dry_run=True)
    assert [c.path for c in report.changed] == ["laws/host.yaml"]
    assert report.changed[0].from_ == "8927e824" and report.changed[0].to == "0badc0de"
    assert "+    atom: \"0badc0de\"" in report.diff
    result = runner.invoke(app, ["rekey", "--why", "docstring only", "--to", "0badc0de",
                                 "--dry-run"])
    assert result.exit_code == 0, result.output
    stamp = re.compile(r'at: "[0-9T:-]+Z"')  # the two runs may fall in different seconds
    assert stamp.sub("at", result.stdout) == stamp.sub("at", report.diff)


def test_fit_returns_the_report_and_writes_the_file_as_lawkit_fit_does(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    dry = lawkit.fit(root / "caps.csv", out=root / "laws" / "host.yaml",
                     formula=["host_s ~ 1 + num_seqs"], by=["phase"], captured_on="current",
                     workspace=root, write=False)
    assert not (root / "laws" / "host.yaml").exists()
    report = _fit(root)
    assert report.written and report.digest == "8927e824"
    assert [f.spec.name for f in report.laws] == ["host_s[decode]", "host_s[prefill]"]
    assert [f.law["terms"] for f in report.laws] == [f.law["terms"] for f in dry.laws]
    assert lawkit.load(root / "laws" / "host.yaml").law("host_s[decode]").terms == \
        report.laws[0].law["terms"]


def test_score_returns_the_report_lawkit_score_prints(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    _fit(root)
    report = lawkit.score("laws/host.yaml", ["caps.csv"], max_mape=0.05)
    result = runner.invoke(app, ["score", "laws/host.yaml", "caps.csv", "--max-mape", "0.05",
                                 "--json"])
    assert result.exit_code == report.exit_code == 0, result.output
    assert report.to_json() == json.loads(result.stdout)
    assert [s.metrics.n for s in report.laws] == [32, 32]


TRACE_MAP = """\
[trace]
regions = { schedule_s = "schedule" }

[[trace.steps]]
prefix = "decode["
features = 'decode\\[bs=(?P<batch_size>\\d+)\\]'
"""


def test_fit_and_score_read_traces_by_a_trace_map_file_as_the_commands_do(
        tmp_path: Path) -> None:
    """`trace_map=` is `--trace-map`: the workspace has no [trace] table of its own."""
    (tmp_path / "lawkit.toml").write_text('laws = "."\n')
    (tmp_path / "map.toml").write_text(TRACE_MAP)
    events = [e for bs in range(1, 7) for e in (
        {"ph": "X", "name": f"decode[bs={bs}]", "ts": bs * 1000.0, "dur": 900, "pid": 1,
         "tid": 1},
        {"ph": "X", "name": "schedule", "ts": bs * 1000.0 + 10, "dur": 50 + 10 * bs, "pid": 1,
         "tid": 1})]
    (tmp_path / "t.json").write_text(json.dumps({"traceEvents": events}))
    fit = functools.partial(lawkit.fit, "t.json", out="a.yaml", captured_on="0123abcd",
                            formula="schedule_s ~ 1 + batch_size")
    with pytest.raises(lawkit.LawkitError, match=r"--trace-map"):
        fit()
    report = fit(trace_map="map.toml")
    terms = report.laws[0].law["terms"]
    assert terms["1"] == pytest.approx(50e-6) and terms["batch_size"] == pytest.approx(1e-5)
    scored = lawkit.score("a.yaml", ["t.json"], trace_map=tmp_path / "map.toml")
    result = runner.invoke(app, ["score", "a.yaml", "t.json", "--trace-map", "map.toml",
                                 "--json"])
    assert result.exit_code == scored.exit_code == 0, result.output
    assert scored.to_json() == json.loads(result.stdout)
    assert [s.metrics.n for s in scored.laws] == [6]


def test_score_takes_rows_in_memory_too(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    _fit(root)
    frame = pd.read_csv(root / "caps.csv")
    frame["host_s"] *= 1.2
    law_file = lawkit.load(root / "laws" / "host.yaml")
    report = lawkit.score(law_file, frame, max_mape=0.1)
    assert report.exit_code == 1
    assert [s.name for s in report.failed] == ["host_s[decode]", "host_s[prefill]"]
    with pytest.raises(TypeError, match="apply to capture files"):
        lawkit.score(law_file, frame, where="num_seqs > 3")


def test_the_environment_target_and_its_acceptance_as_the_commands_take_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python API had no environment option at all: `env` is `--env`, `accept_env`
    `--accept-env`, for check, rekey and review alike."""
    from lawkit.footprint.document import DistRecord
    from testing.environments import make_env_repo, write_lock

    root = make_env_repo(tmp_path / "repo", {"torchlike": DistRecord(
        "2.11.0", "r1", None, ("steps",), ("sample_s",), ())}, {"torchlike": "2.11.0"})
    monkeypatch.chdir(root)
    write_lock(root, {"torchlike": "2.12.0"})
    assert lawkit.check().ok  # no target: not compared
    report = lawkit.check(env="requirements.txt")
    assert [p.kind for p in report.problems] == ["environment"]
    with pytest.raises(lawkit.LawkitError, match="--require untouched: 1 law not untouched"):
        lawkit.rekey(why="torch", accept_env=True, env="requirements.txt", require="untouched")
    accepted = lawkit.rekey(why="torch 2.12 moves no host time", accept_env=True,
                            env="requirements.txt")
    assert [c.kind for c in accepted.changed] == ["env"]
    assert lawkit.check(env="requirements.txt").ok
    reviewed = lawkit.review("HEAD", env="requirements.txt")  # the law file as committed
    assert {law.name: law.verdict for law in reviewed.laws} == {"sampling": "steps",
                                                                 "scheduling": "untouched"}
