"""The conventions every command follows: `--format` and
`--json` as one, `-q`, `-h`, `-V`, and `--config` before or after the command."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from lawkit import __version__
from lawkit.cli import app
from testing.cli import invoke as _invoke
from testing.workspaces import OLD, make_workspace

REPO = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parents[1] / "data" / "sarathi-a100" / "cpu_overheads.csv"
FORMULA = "schedule_median ~ 1 + batch_size"

REPORTS = ["check", "digest", "fit", "rekey", "review", "score", "show", "footprint record",
           "footprint diff"]
"""Every command that prints a report, in a text form and as one JSON document."""
QUIET = ["check", "fit", "rekey", "review", "score", "footprint record", "footprint diff"]
"""The report commands whose report can be all good: `-q` prints only problems."""


def _command(name: str) -> Any:
    from typer.main import get_command

    group = get_command(app)
    ctx = group.context_class(group, info_name="lawkit")
    command = group
    for part in name.split():
        command = command.get_command(ctx, part)
    return command


def _options(name: str) -> set[str]:
    return {flag for param in _command(name).params if param.param_type_name == "option"
            for flag in param.opts}


def _unstamped(output: str) -> str:
    """`output` with each rekey clause's `at:` time masked: the two runs compared may fall in
    different seconds of the clock."""
    return re.sub(r'at: \\"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\\"', 'at: \\"<time>\\"', output)


def _captures(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(DATA, root / "caps.csv"))


@pytest.mark.parametrize("name", REPORTS)
def test_every_report_command_takes_both_format_json_and_json(name: str) -> None:
    assert {"--format", "--json"} <= _options(name), name


@pytest.mark.parametrize("name", QUIET)
def test_every_report_command_that_can_be_all_good_takes_q_and_quiet(name: str) -> None:
    assert {"-q", "--quiet"} <= _options(name), name


@pytest.mark.parametrize("args", [
    ["check"],
    ["digest"],
    ["show", "laws/cell00000.yaml"],
    ["rekey", "--why", "a comment", "--dry-run", "--to", OLD],
    ["review", "--base", "HEAD"],
])
@pytest.mark.usefixtures("git_workspace")
def test_json_and_format_json_print_the_same_document(args: list[str]) -> None:
    spelled = _invoke(*args, "--json")
    formatted = _invoke(*args, "--format", "json")
    assert spelled.exit_code == formatted.exit_code, (spelled.output, formatted.output)
    assert spelled.exit_code in (0, 1), spelled.output
    assert _unstamped(spelled.stdout) == _unstamped(formatted.stdout)
    assert json.loads(_unstamped(spelled.stdout)) == json.loads(_unstamped(formatted.stdout))


def test_fit_and_score_print_the_same_document_for_json_and_format_json(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    documents = []
    for folder, flags in (("a", ["--json"]), ("b", ["--format", "json"])):
        _captures(tmp_path / folder)
        monkeypatch.chdir(tmp_path / folder)
        fitted = _invoke("fit", "caps.csv", "--out", "laws/x.yaml", "--formula", FORMULA,
                         "--captured-on", "68ad8fc6", *flags)
        assert fitted.exit_code == 0, fitted.output
        scored = _invoke("score", "laws/x.yaml", "caps.csv", *flags)
        assert scored.exit_code == 0, scored.output
        documents.append((json.loads(fitted.stdout), json.loads(scored.stdout)))
    assert documents[0] == documents[1]


@pytest.mark.parametrize("args", [
    ["check"],
    ["digest"],
    ["show", "laws/cell00000.yaml"],
    ["rekey", "--why", "a comment", "--dry-run"],
    ["review", "--base", "HEAD"],
    ["score", "laws/cell00000.yaml", "caps.csv"],
    ["fit", "caps.csv", "--out", "laws/new.yaml", "--formula", FORMULA],
    ["footprint", "record", "--out", "fp.json"],
    ["footprint", "diff", "fp.json"],
])
def test_json_with_another_format_is_a_usage_error_exit_2_and_nothing_runs(
        args: list[str], tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    command = ["--", "true"] if args[:2] == ["footprint", "record"] else []
    result = _invoke(*args, "--json", "--format", "text", *command)
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == ("Error: Invalid value for '--json': it is --format "
                                              "json, and --format text was given too: give one")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_json_with_format_json_is_not_a_conflict(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    result = _invoke("check", "--json", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["ok"] is True


@pytest.mark.parametrize("name", ["", "check", "digest", "fit", "rekey", "review", "schema",
                                  "score", "show", "footprint", "footprint record",
                                  "footprint diff"])
def test_h_is_help_for_lawkit_and_every_command(name: str) -> None:
    short = _invoke(*name.split(), "-h")
    long = _invoke(*name.split(), "--help")
    assert short.exit_code == 0, short.output
    assert short.stdout == long.stdout
    assert short.stdout.startswith(f"Usage: lawkit {name}".rstrip() + " ")
    assert "-h, --help" in short.stdout


def test_capital_v_prints_the_version_as_version_does() -> None:
    result = _invoke("-V")
    assert result.exit_code == 0, result.output
    assert result.stdout == f"lawkit {__version__}\n" == _invoke("--version").stdout


def test_check_q_prints_nothing_when_all_is_good_and_the_problems_otherwise(
        tmp_path: Path) -> None:
    make_workspace(tmp_path / "good", 2)
    good = _invoke("check", "-q", "--config", "good/lawkit.toml")
    assert (good.exit_code, good.stdout, good.stderr) == (0, "", "")
    make_workspace(tmp_path / "stale", 1, stale=True)
    stale = _invoke("check", "--quiet", "--config", "stale/lawkit.toml")
    assert stale.exit_code == 1, stale.output
    assert stale.stdout.splitlines() == [
        f"laws/cell00000.yaml:6: stale: names {OLD}, the engine is at 8927e824",
        'fix: lawkit rekey --why "..." if the engine change cannot move host time, else refit: '
        "lawkit fit CAPTURE... --out laws/cell00000.yaml"]


def test_rekey_and_review_q_print_nothing_when_done(git_workspace: Path) -> None:
    (git_workspace / "engine" / "atom" / "engine" / "step.py").write_text("x = 2\n")
    rekeyed = _invoke("rekey", "--why", "a constant no step reads", "-q")
    assert (rekeyed.exit_code, rekeyed.stdout, rekeyed.stderr) == (0, "", "")
    assert _invoke("check").exit_code == 0
    assert _invoke("review", "--base", "HEAD").stdout != ""
    reviewed = _invoke("review", "--base", "HEAD", "-q")
    assert (reviewed.exit_code, reviewed.stdout, reviewed.stderr) == (0, "", "")


def test_fit_and_score_q_print_nothing_when_all_is_good(tmp_path: Path) -> None:
    _captures(tmp_path)
    fitted = _invoke("fit", "caps.csv", "--out", "laws/x.yaml", "--formula", FORMULA,
                     "--captured-on", "68ad8fc6", "-q")
    assert (fitted.exit_code, fitted.stdout, fitted.stderr) == (0, "", "")
    assert (tmp_path / "laws" / "x.yaml").is_file()
    scored = _invoke("score", "laws/x.yaml", "caps.csv", "--max-mape", "50%", "-q")
    assert (scored.exit_code, scored.stdout, scored.stderr) == (0, "", "")
    failed = _invoke("score", "laws/x.yaml", "caps.csv", "--max-mape", "1%", "-q")
    assert failed.exit_code == 1, failed.output
    assert "FAIL schedule_median: MAPE 8.9% > 1.0%" in failed.stdout.splitlines(), failed.stdout


def test_config_is_taken_before_or_after_the_command(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    make_workspace(tmp_path / "ws", 2)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    after = _invoke("check", "--config", "../ws/lawkit.toml")
    before = _invoke("--config", "../ws/lawkit.toml", "check")
    assert after.exit_code == before.exit_code == 0, (after.output, before.output)
    assert after.stdout == before.stdout == "2 law files name atom=8927e824\n"
    digest = _invoke("--config", "../ws/lawkit.toml", "digest")
    assert digest.stdout == "8927e824\n"
    footprint = _invoke("--config", "../ws/lawkit.toml", "footprint", "diff", "none.json")
    assert footprint.exit_code == 2 and "none.json" in footprint.stderr


def test_config_naming_two_files_before_and_after_the_command_is_a_usage_error(
        tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    shutil.copy(tmp_path / "lawkit.toml", tmp_path / "other.toml")
    result = _invoke("--config", "other.toml", "check", "--config", "lawkit.toml")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines()[-1] == ("Error: Invalid value for '--config': given "
                                              "before the command as other.toml and after it "
                                              "as lawkit.toml: give one")
    same = _invoke("--config", "lawkit.toml", "check", "--config", "lawkit.toml")
    assert same.exit_code == 0, same.output


def _string_constants(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # docstrings, attribute docstrings included: a string standing alone as a statement is
    # never shown to a user
    docstrings = {id(node.value) for node in ast.walk(tree)
                  if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and id(node) not in docstrings]


def test_no_message_sends_a_pip_user_to_a_docs_file_a_pip_install_does_not_have() -> None:
    found = [f"{path.relative_to(REPO)}:{line}: {text!r}"
             for path in sorted((REPO / "lawkit").rglob("*.py"))
             for line, text in _string_constants(path) if "docs/" in text]
    assert found == []


def test_no_config_found_says_what_to_write_not_which_docs_page_to_read(tmp_path: Path) -> None:
    result = _invoke("check")
    assert result.exit_code == 2, result.output
    assert "docs/" not in result.stderr
    assert "run lawkit init --package YOURENGINE in " in result.stderr, result.stderr


def test_a_law_file_keyed_by_another_field_names_the_key_it_holds(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    config = tmp_path / "lawkit.toml"
    config.write_text(config.read_text() + 'key = "engine"\n')
    result = _invoke("check")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        "laws/cell00000.yaml:6: invalid: host.key.engine: missing: the digest the laws price goes "
        "here; it holds atom instead, but this workspace's digest key is engine "
        "([tool.lawkit.digest] key): rename atom to engine, or key the workspace by atom"]


def test_a_misspelt_key_names_itself_and_the_likely_one(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    law = tmp_path / "laws" / "cell00000.yaml"
    law.write_text(law.read_text().replace("target:", "targt:", 1))
    result = _invoke("check")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        "laws/cell00000.yaml:9: invalid: host.laws[0].targt: unknown key, and "
        "host.laws[0].target is missing: rename targt to target"]
