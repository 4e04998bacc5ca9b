"""A first run as a newcomer makes it, with the bundled captures (examples/sarathi-a100): a fit
in a folder with no config, then `lawkit init`, and each message on the way naming the one next
step."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

import lawkit.capture
from lawkit.errors import CaptureError
from testing.cli import invoke as _invoke

CAPTURES = Path(__file__).resolve().parents[2] / "examples" / "sarathi-a100" / "captures.csv"
FORMULA = "schedule_s ~ 1 + batch_size"


@pytest.fixture
def captures(tmp_path: Path) -> Path:
    return Path(shutil.copy(CAPTURES, tmp_path / "captures.csv"))


def test_a_fit_with_no_config_writes_the_law_file_where_asked(captures: Path) -> None:
    result = _invoke("fit", "captures.csv", "--formula", FORMULA, "--out", "law.yaml",
                     "--captured-on", "0123abcd")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    law = yaml.safe_load(Path("law.yaml").read_text())
    assert law["host"]["key"] == {"atom": "0123abcd"}
    assert _invoke("score", "law.yaml", "captures.csv").exit_code == 0


def test_with_no_config_the_digest_is_still_required_and_the_message_names_both_ways_on(
        captures: Path) -> None:
    result = _invoke("fit", "captures.csv", "--formula", FORMULA, "--out", "law.yaml")
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "lawkit: error: the captures do not say which engine digest they ran on (no 'atom' "
        "column, no Parquet metadata lawkit.atom): pass --captured-on DIGEST (8 lowercase hex "
        "characters), or run lawkit init to start a workspace, whose lawkit digest (and "
        "--captured-on current) names the engine's\n")
    assert not Path("law.yaml").exists()


def test_with_no_config_a_name_that_is_not_a_law_file_is_still_refused(captures: Path) -> None:
    result = _invoke("fit", "captures.csv", "--formula", FORMULA, "--out", "law.txt",
                     "--captured-on", "0123abcd")
    assert result.exit_code == 2, result.output
    assert "--out law.txt: a law file is named *.yaml or *.yml" in result.stderr
    assert not Path("law.txt").exists()


@pytest.mark.parametrize("command", [["check"], ["digest"],
                                     ["fit", "captures.csv", "--formula", FORMULA, "--out",
                                      "law.yaml", "--captured-on", "current"]])
def test_with_no_config_check_digest_and_captured_on_current_say_to_run_lawkit_init(
        captures: Path, command: list[str]) -> None:
    result = _invoke(*command)
    assert result.exit_code == 2, result.output
    assert f"run lawkit init --package YOURENGINE in {captures.parent} to write one" in \
        result.stderr, result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_capture_open_with_no_config_names_digest_and_lawkit_init(tmp_path: Path) -> None:
    with pytest.raises(CaptureError) as raised:
        lawkit.capture.open(tmp_path / "steps.csv", features=["batch_size"])
    assert str(raised.value) == (
        "cannot compute the engine digest for the key column (no lawkit.toml, nor a "
        f"pyproject.toml with [tool.lawkit], was found from {tmp_path}): pass digest= (and "
        "key=), or run from a workspace (lawkit init starts one)")
    assert not (tmp_path / "steps.csv").exists()


def test_init_then_the_commands_it_prints_take_a_newcomer_to_a_checked_law(
        tmp_path: Path, captures: Path) -> None:
    (tmp_path / "myengine").mkdir()
    (tmp_path / "myengine" / "__init__.py").write_text("STEP = 1\n")
    init = _invoke("init")
    assert init.exit_code == 0, init.output
    digest = _invoke("digest")
    assert digest.exit_code == 0, digest.output
    fit = _invoke("fit", "captures.csv", "--formula", FORMULA, "--captured-on", "current",
                  "--out", "laws/schedule_s.yaml")
    assert fit.exit_code == 0, fit.output
    law = yaml.safe_load((tmp_path / "laws" / "schedule_s.yaml").read_text())
    assert law["host"]["key"] == {"myengine": digest.stdout.strip()}
    check = _invoke("check")
    assert check.exit_code == 0, check.output
    assert check.stdout == f"1 law file names myengine={digest.stdout.strip()}\n"
    experiment = _invoke("fit", "captures.csv", "--formula", FORMULA, "--captured-on",
                         "current", "--out", str(tmp_path / "try.yaml"))
    assert experiment.exit_code == 0, experiment.output
    assert experiment.stderr == ("lawkit: note: --out try.yaml is outside the laws folder "
                                 "laws: lawkit check will not read it\n")
    assert (tmp_path / "try.yaml").is_file()
