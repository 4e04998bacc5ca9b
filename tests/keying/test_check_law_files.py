"""Which files are law files, the same for check, rekey and review:
every `*.yaml` and `*.yml` in any case; a symlinked folder below the laws folder is refused
loudly, never skipped and never written through."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from testing.reliability import one_line_exit_2
from testing.workspaces import OLD, law_text, make_workspace

runner = CliRunner()


@pytest.mark.parametrize("name", ["gpu.yml", "GPU.YAML", "a100.Yml", "h100.yAmL"])
def test_check_and_rekey_see_yml_and_any_case_as_law_files(tmp_path: Path, name: str) -> None:
    make_workspace(tmp_path, 0)
    (tmp_path / "laws" / name).write_text(law_text(key=OLD))
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert result.stdout.startswith(f"laws/{name}:"), result.stdout
    result = runner.invoke(app, ["rekey", "--why", "a comment moved"])
    assert result.exit_code == 0, result.output
    assert f"rekeyed laws/{name}: {OLD} ->" in result.stdout
    assert runner.invoke(app, ["check"]).exit_code == 0


def test_a_law_file_fit_writes_as_yml_is_checked(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    capture = tmp_path / "c.csv"
    capture.write_text("bs,host_s\n" + "".join(f"{i},{0.001 * i + 0.01}\n" for i in range(1, 40)))
    result = runner.invoke(app, ["fit", str(capture), "--formula", "host_s ~ 1 + bs",
                                 "--captured-on", OLD, "--out", "laws/gpu.yml"])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert "laws/gpu.yml:" in result.stdout and "stale" in result.stdout


def test_check_names_a_symlinked_folder_below_the_laws_folder(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.yaml").write_text(law_text(key=OLD))
    (tmp_path / "laws" / "linked").symlink_to(outside)
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert "laws/linked: invalid: a symlinked folder" in result.stdout, result.stdout


def test_rekey_refuses_a_law_file_reached_through_a_symlinked_folder(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.yaml").write_text(law_text(key=OLD))
    before = (outside / "x.yaml").read_bytes()
    (tmp_path / "laws" / "linked").symlink_to(outside)
    for args in (["laws/linked/x.yaml"], ["laws/linked"], []):
        result = runner.invoke(app, ["rekey", "--why", "w", *args])
        one_line_exit_2(result, "a symlinked folder")
        assert (outside / "x.yaml").read_bytes() == before


def test_review_sees_yml_law_files(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    (tmp_path / "laws" / "GPU.yml").write_text("schema: lawkit/1\nhost: {key: {atom: 1}}\n")
    git("add", "-A")
    git("commit", "-qm", "head")
    result = runner.invoke(app, ["review", "--base", "HEAD~1"])
    assert result.exit_code == 1, result.output
    assert "laws/GPU.yml" in result.stdout
