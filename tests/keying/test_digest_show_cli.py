"""`lawkit digest` and `lawkit show` from the command line."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from src_digest import host_key_of
from testing.lawrepo import git
from testing.samples import GOOD

runner = CliRunner()


@pytest.mark.usefixtures("git_workspace")
def test_digest_prints_the_test_vector_digest_alone() -> None:
    result = runner.invoke(app, ["digest"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "8927e824\n"


@pytest.mark.usefixtures("git_workspace")
def test_digest_manifest_lists_each_file_after_the_digest() -> None:
    result = runner.invoke(app, ["digest", "--manifest"])
    lines = result.stdout.splitlines()
    assert lines[0] == "8927e824"
    assert lines[1].endswith("  atom/__init__.py")
    step_sha = hashlib.sha256(b"x = 1\n").hexdigest()
    assert lines[2] == f"{step_sha}  atom/engine/step.py"


@pytest.mark.usefixtures("git_workspace")
def test_digest_json_is_one_document() -> None:
    result = runner.invoke(app, ["digest", "--json"])
    doc = json.loads(result.stdout)
    assert doc["key"] == "atom" and doc["digest"] == "8927e824" and doc["files"] == 2


@pytest.mark.usefixtures("git_workspace")
def test_digest_at_a_revision_reads_git_objects_and_agrees_with_the_work_tree(
        tmp_path: Path) -> None:
    (tmp_path / "engine" / "atom" / "engine" / "step.py").write_text("x = 2\n")
    git(tmp_path, "commit", "-qam", "change")
    changed = host_key_of(tmp_path / "engine")
    assert runner.invoke(app, ["digest", "--rev", "HEAD"]).stdout == f"{changed}\n"
    assert runner.invoke(app, ["digest", "--rev", "HEAD~1"]).stdout == "8927e824\n"
    bad = runner.invoke(app, ["digest", "--rev", "nope"])
    assert bad.exit_code == 2
    assert "nope" in bad.stderr and "Traceback" not in bad.output


@pytest.mark.usefixtures("git_workspace")
def test_digest_explain_names_edited_untracked_and_missing_files(tmp_path: Path) -> None:
    atom = tmp_path / "engine" / "atom"
    (atom / "engine" / "step.py").write_text("x = 3\n")
    (atom / "_version.py").write_text("version = '1.0'\n")
    (atom / "__init__.py").unlink()
    result = runner.invoke(app, ["digest", "--explain"])
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert out[0] == host_key_of(tmp_path / "engine")
    assert any(line.startswith("edited") and "atom/engine/step.py" in line for line in out)
    assert any(line.startswith("untracked") and "atom/_version.py" in line and "exclude" in line
               for line in out)
    assert any(line.startswith("missing") and "atom/__init__.py" in line for line in out)


def test_digest_of_a_tree_with_nothing_to_hash_exits_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "atom").mkdir()
    result = runner.invoke(app, ["digest"])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "no file matched" in result.stderr


def test_show_validates_and_prints_and_json_has_the_yaml_keys(tmp_path: Path) -> None:
    (tmp_path / "x.yaml").write_text(GOOD)
    text = runner.invoke(app, ["show", "x.yaml"])
    assert text.exit_code == 0, text.output
    assert "law prefill: host_s = 0.0021 + 0.00012*num_seqs" in text.stdout
    doc = json.loads(runner.invoke(app, ["show", "x.yaml", "--json"]).stdout)
    assert doc["host"]["laws"][0]["terms"]["num_seqs"] == 0.00012
    assert doc["host"]["laws"][0]["where"] == {"phase": "prefill"}
    assert doc["host"]["provenance"][1]["rekey"]["from"] == "59e9ff5a"
    assert doc["device"] == {"gpu": "a100"}


def test_show_of_a_bad_file_exits_2_naming_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "laws").mkdir()
    (tmp_path / "laws" / "x.yaml").write_text(GOOD.replace('"68ad8fc6"', "1e10"))
    result = runner.invoke(app, ["show", "laws/x.yaml"])
    assert result.exit_code == 2
    assert result.stderr == ("lawkit: error: laws/x.yaml:6: host.key.atom: expected a quoted "
                             'string, got 1e10 (a float): write it as "1e10"\n')

