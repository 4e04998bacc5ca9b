"""The captures' host (docs/footprints.md, "The environment"): `fit` keeps it in the `fit`
entry, `score` says in one line when the captures it scores come from another CPU model than
the fit's; captures without a host are read as before."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.fitting.provenance import fit_host
from lawkit.lawfiles.lawfile import load

runner = CliRunner()
DATA = Path(__file__).resolve().parents[1] / "data" / "sarathi-a100" / "cpu_overheads.csv"
FORMULA = "schedule_median ~ 1 + batch_size"
DIGEST = "68ad8fc6"
HOST = {"cpu_model": "AMD EPYC 7B13", "logical_cpus": 16, "platform": "Linux-6.8.0-x86_64",
        "python": "3.12.3"}


@pytest.fixture(autouse=True)
def _laws_here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "lawkit.toml").write_text('laws = "."\n')
    monkeypatch.chdir(tmp_path)


def capture(tmp_path: Path, name: str, host: dict[str, object] | None) -> str:
    shutil.copy(DATA, tmp_path / name)
    if host is not None:
        (tmp_path / f"{name}.host.json").write_text(json.dumps(host))
    return name


def fitted(*captures: str, out: str = "a.yaml") -> tuple[str, dict[str, object]]:
    result = runner.invoke(app, ["fit", *captures, "--formula", FORMULA, "--captured-on",
                                 DIGEST, "--out", out])
    assert result.exit_code == 0, result.output
    entry = load(Path(out)).host.provenance[-1].fit
    assert entry is not None
    return Path(out).read_text(), dict(entry.model_extra or {})


def test_fit_keeps_the_captures_host_and_without_one_writes_no_host_key(tmp_path: Path) -> None:
    text, extra = fitted(capture(tmp_path, "a.csv", HOST))
    assert extra["host"] == HOST
    text, extra = fitted(capture(tmp_path, "b.csv", None), out="b.yaml")
    assert "host" not in extra and "cpu_model" not in text


def test_captures_that_disagree_keep_only_what_they_share() -> None:
    other = {**HOST, "cpu_model": "Intel Xeon 8480+"}
    assert fit_host([HOST, other]) == {**HOST, "cpu_model": None}
    assert fit_host([HOST, None]) is None and fit_host([]) is None


def test_score_says_in_one_line_when_the_captures_come_from_another_cpu(tmp_path: Path) -> None:
    fitted(capture(tmp_path, "a.csv", HOST))
    same = runner.invoke(app, ["score", "a.yaml", "a.csv"])
    assert same.exit_code == 0, same.output and "CPU model" not in same.output
    capture(tmp_path, "c.csv", {**HOST, "cpu_model": "Intel Xeon 8480+"})
    moved = runner.invoke(app, ["score", "a.yaml", "c.csv"])
    lines = [line for line in moved.stdout.splitlines() if "CPU model" in line]
    assert len(lines) == 1 and "Intel Xeon 8480+" in lines[0] and "AMD EPYC 7B13" in lines[0]
    capture(tmp_path, "d.csv", None)  # no host: read as before, nothing said
    assert "CPU model" not in runner.invoke(app, ["score", "a.yaml", "d.csv"]).stdout


def test_a_host_file_that_is_not_a_json_object_is_exit_2_naming_it(tmp_path: Path) -> None:
    capture(tmp_path, "a.csv", None)
    (tmp_path / "a.csv.host.json").write_text("[1, 2]")
    result = runner.invoke(app, ["fit", "a.csv", "--formula", FORMULA, "--captured-on", DIGEST,
                                 "--out", "a.yaml"])
    assert result.exit_code == 2 and "a.csv.host.json" in result.output
