"""`lawkit check`: every law valid, explained by its provenance, on the current digest."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.keying.check import check_workspace
from lawkit.keying.digest import current_digest
from lawkit.workers import map_in_workers
from testing.workspaces import OLD, law_text, make_workspace

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _lines(text: str) -> list[str]:
    return text.rstrip("\n").split("\n")


def test_check_prints_one_summary_line_and_exits_0_when_every_law_names_the_current_digest(
        tmp_path: Path) -> None:
    make_workspace(tmp_path, 12)
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "12 law files name atom=8927e824\n"


@pytest.mark.usefixtures("stale_workspace")
def test_check_exits_1_and_names_the_fix_for_a_stale_law() -> None:
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert _lines(result.stdout) == [
        f"laws/cell00000.yaml:6: stale: names {OLD}, the engine is at 8927e824",
        f"laws/cell00001.yaml:6: stale: names {OLD}, the engine is at 8927e824",
        'fix: lawkit rekey --why "..." if the engine change cannot move host time, else refit each:'
        ' lawkit fit CAPTURE... --out FILE',
    ]


def test_check_reports_an_unquoted_digest_as_invalid_with_its_line(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    law = tmp_path / "laws" / "cell00000.yaml"
    law.write_text(law.read_text().replace('atom: "8927e824"', "atom: 8927e824"))
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    first = _lines(result.stdout)[0]
    assert first.startswith("laws/cell00000.yaml:6: invalid: host.key.atom: expected a quoted "
                            "string")
    assert len(_lines(result.stdout)) == 1, result.stdout  # no command fixes it: no fix line


@pytest.mark.usefixtures("workspace")
def test_check_reports_a_file_that_is_not_yaml_and_goes_on_with_the_others(
        tmp_path: Path) -> None:
    (tmp_path / "laws" / "cell00000.yaml").write_text("schema: lawkit/1\nhost: [\n")
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    lines = _lines(result.stdout)
    assert len(lines) == 1  # the problem; no command fixes it, so no fix line
    assert lines[0].startswith("laws/cell00000.yaml:3: invalid: not valid YAML")


def test_check_names_rekey_adopt_for_laws_written_before_lawkit(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1, provenance="none")
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert _lines(result.stdout) == [
        "laws/cell00000.yaml:6: unexplained: no provenance explains the key 8927e824: laws "
        'written before lawkit; adopt them with lawkit rekey --adopt --why "..."',
        'fix: lawkit rekey --adopt --why "..."',
    ]


def test_check_for_stale_laws_without_provenance_says_adopt_then_rekey(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1, stale=True, provenance="none")
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert _lines(result.stdout)[-1] == (
        'fix: lawkit rekey --adopt --why "..."; lawkit rekey --why "..." if the engine '
        "change cannot move host time, else refit: lawkit fit CAPTURE... --out "
        "laws/cell00000.yaml")


def test_check_reports_a_key_edited_by_hand_as_unexplained(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1, stale=True)
    law = tmp_path / "laws" / "cell00000.yaml"
    law.write_text(law.read_text().replace(f'atom: "{OLD}"', 'atom: "8927e824"'))
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert _lines(result.stdout) == [
        f"laws/cell00000.yaml:6: unexplained: the key 8927e824 is not the digest the newest "
        f"provenance entry (line 33) names, {OLD}: it was edited by hand; put {OLD} back and "
        "run lawkit rekey --why TEXT, or refit: lawkit fit CAPTURE... --out laws/cell00000.yaml",
        "fix: lawkit fit CAPTURE... --out laws/cell00000.yaml",
    ]


def test_check_reports_a_body_edited_after_its_fit_and_names_lawkit_fit(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    law = tmp_path / "laws" / "cell00000.yaml"
    text = law.read_text()
    law.write_text(text.replace('where: {phase: "decode"}', 'where: {phase: "prefill"}', 1))
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert _lines(result.stdout)[0] == (
        "laws/cell00000.yaml:8: body-edited: the laws differ from the body the fit entry at "
        "line 33 recorded: edited by hand after it; undo the edit, refit (lawkit fit "
        "CAPTURE... --out laws/cell00000.yaml), or keep it: lawkit rekey --adopt --why \"...\" "
        "laws/cell00000.yaml")


def test_check_does_not_count_a_change_to_fit_statistics_as_a_body_edit(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    law = tmp_path / "laws" / "cell00000.yaml"
    law.write_text(law.read_text().replace("r2: ", "r2: 0.5, was_r2: ", 1))
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 0, result.output


@pytest.mark.usefixtures("workspace")
def test_check_reports_two_files_with_the_same_labels(tmp_path: Path) -> None:
    law = tmp_path / "laws" / "cell00001.yaml"
    law.write_text(law.read_text().replace("crs00001", "crs00000"))
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert _lines(result.stdout)[0] == (
        "laws/cell00001.yaml:3: duplicate: the same labels as laws/cell00000.yaml "
        "(cell='crs00000', model='deepseek-v4-pro', parallel='dpa8', role='prefill'): two "
        "files cannot price the same thing; change the labels of one or merge them")


def test_check_knows_files_without_labels_by_their_path_alone(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, 0)
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / "laws" / name).write_text(law_text(key=current_digest(ws)))
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 0, result.output


def test_check_json_is_one_document_with_the_digest_files_and_problems(tmp_path: Path) -> None:
    make_workspace(tmp_path, 3, stale=True)
    result = runner.invoke(app, ["check", "--format", "json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert (doc["key"], doc["digest"], doc["files"], doc["ok"]) == ("atom", "8927e824", 3, False)
    assert doc["problems"][0] == {
        "path": "laws/cell00000.yaml", "line": 6, "kind": "stale",
        "message": f"names {OLD}, the engine is at 8927e824", "fix": 'lawkit rekey --why "..."'}
    assert doc["fix"] == ('lawkit rekey --why "..." if the engine change cannot move host time, '
                          'else refit each: lawkit fit CAPTURE... --out FILE')


def test_check_json_says_ok_when_all_is_good(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    result = runner.invoke(app, ["check", "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["ok"] is True and doc["problems"] == [] and doc["fix"] is None


def test_check_github_prints_one_workflow_annotation_per_problem(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1, stale=True)
    result = runner.invoke(app, ["check", "--format", "github"])
    assert result.exit_code == 1, result.output
    assert _lines(result.stdout) == [
        f"::error file=laws/cell00000.yaml,line=6::stale: names {OLD}, the engine is at 8927e824",
        'fix: lawkit rekey --why "..." if the engine change cannot move host time, else refit: '
        "lawkit fit CAPTURE... --out laws/cell00000.yaml",
    ]


def test_check_github_escapes_what_would_end_an_annotation(tmp_path: Path) -> None:
    make_workspace(tmp_path, 0)
    (tmp_path / "laws" / "a,b:c.yaml").write_text("schema: lawkit/1\nhost: 100%\n")
    result = runner.invoke(app, ["check", "--format", "github"])
    assert result.exit_code == 1, result.output
    assert _lines(result.stdout)[0].startswith("::error file=laws/a%2Cb%3Ac.yaml,line=2::invalid:")


def test_check_finds_law_files_in_subfolders_and_leaves_out_temp_files(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    sub = tmp_path / "laws" / "a100" / "tp4"
    sub.mkdir(parents=True)
    shutil.copy(tmp_path / "laws" / "cell00000.yaml", sub / "deep.yaml")
    deep = sub / "deep.yaml"
    deep.write_text(deep.read_text().replace("crs00000", "crs99999"))
    (sub / ".lawkit-tmp-deep.yaml.1a2b3c4d").write_text("half a fil")
    (sub / "notes.txt").write_text("not a law")
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "2 law files name atom=8927e824\n"


def test_check_exits_2_when_the_laws_folder_is_missing(tmp_path: Path) -> None:
    make_workspace(tmp_path, 0)
    (tmp_path / "laws").rmdir()
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 2, result.output
    assert "the laws folder laws does not exist" in result.stderr
    assert result.stdout == ""


def test_check_exits_2_when_the_engine_has_no_file_to_hash(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    shutil.rmtree(tmp_path / "engine" / "atom")
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 2, result.output


def test_check_laws_option_points_at_another_folder(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    (tmp_path / "laws").rename(tmp_path / "elsewhere")
    result = runner.invoke(app, ["check", "--laws", "elsewhere"])
    assert result.exit_code == 0, result.output


def test_check_refuses_an_empty_laws_folder_instead_of_passing(tmp_path: Path) -> None:
    make_workspace(tmp_path, 0)
    (tmp_path / "laws" / "notes.txt").write_text("not a law file\n")
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 2, result.output
    assert "no law files in the laws folder laws" in result.stderr
    assert "an empty laws folder is an error, not a pass" in result.stderr


def test_check_report_lists_problems_in_path_order_from_the_library(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, 3, stale=True)
    report = check_workspace(ws)
    assert [p.path for p in report.problems] == [f"laws/cell0000{i}.yaml" for i in range(3)]
    assert not report.ok


def test_check_gives_the_same_report_from_worker_processes_as_in_one(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch,
                                                                    ) -> None:
    ws = make_workspace(tmp_path, 40, stale=True)
    (tmp_path / "laws" / "cell00007.yaml").write_text("schema: lawkit/1\n")
    one = check_workspace(ws)
    monkeypatch.setattr("lawkit.workers._FILES_PER_WORKER", 5)
    monkeypatch.setattr("lawkit.workers.usable_cpus", lambda: 4)
    assert check_workspace(ws) == one


def test_map_in_workers_keeps_the_order_and_redoes_a_failed_chunk_here(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("lawkit.workers._FILES_PER_WORKER", 10)
    monkeypatch.setattr("lawkit.workers.usable_cpus", lambda: 3)
    parent = os.getpid()

    def square_or_die(x: int) -> int:
        if os.getpid() != parent and x == 55:
            os._exit(3)  # a worker that dies: its chunk is redone in this process
        return x * x

    assert map_in_workers(square_or_die, range(100)) == [x * x for x in range(100)]


def test_the_pre_commit_hook_runs_lawkit_check_once_per_commit() -> None:
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    hook = next(h for h in hooks if h["id"] == "lawkit-check")
    assert hook["entry"] == "lawkit check"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is False and hook["always_run"] is True


def test_check_help_says_what_the_exit_codes_mean() -> None:
    result = runner.invoke(app, ["check", "--help"])
    assert result.exit_code == 0
    assert "Exit 0 when all is good, 1 when a problem was found" in result.stdout
