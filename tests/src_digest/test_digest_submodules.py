"""A submodule inside a hashed package: the work tree
walk hashes its checked-out files like any folder's, `--rev` reads them at the recorded commit
from the submodule's own git objects or fails naming it, and `--explain` names them as its."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from lawkit.cli import app
from testing import lawrepo
from testing.reliability import one_line_exit_2
from testing.workspaces import make_engine

runner = CliRunner()


def git(cwd: Path, *args: str) -> None:
    """testing.lawrepo's git, allowed to clone a submodule from a local path."""
    lawrepo.git(cwd, "-c", "protocol.file.allow=always", *args)


def engine_with_submodule(tmp_path: Path) -> Path:
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "kernel.py").write_text("k = 1\n")
    (lib / "README.md").write_text("not hashed\n")
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "lib")
    engine = tmp_path / "engine"
    make_engine(engine)
    git(engine, "init", "-q")
    git(engine, "add", "-A")
    git(engine, "commit", "-qm", "engine")
    git(engine, "submodule", "add", "-q", str(lib), "atom/vendor")
    git(engine, "commit", "-qm", "vendor")
    return engine


def digest(*args: str) -> str:
    result = runner.invoke(app, ["digest", *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_a_clean_checkout_with_a_submodule_digests_the_same_from_the_work_tree_and_rev_head(
        tmp_path: Path) -> None:
    engine = engine_with_submodule(tmp_path)
    tree = digest("--engine", str(engine), "--manifest")
    assert "atom/vendor/kernel.py" in tree
    assert digest("--engine", str(engine), "--manifest", "--rev", "HEAD") == tree
    assert digest("--engine", str(engine), "--explain").splitlines()[1:] == \
        ["the work tree hashes the same files as HEAD"]


def test_rev_reads_a_submodule_from_git_modules_when_its_checkout_is_gone(
        tmp_path: Path) -> None:
    engine = engine_with_submodule(tmp_path)
    clean = digest("--engine", str(engine))
    git(engine, "submodule", "deinit", "-q", "-f", "--", "atom/vendor")
    assert (engine / ".git" / "modules" / "atom" / "vendor").is_dir()
    assert digest("--engine", str(engine), "--rev", "HEAD") == clean


def test_rev_fails_naming_a_submodule_whose_objects_are_not_here(tmp_path: Path) -> None:
    engine = engine_with_submodule(tmp_path)
    git(tmp_path, "clone", "-q", str(engine), "clone")  # no --recurse-submodules
    one_line_exit_2(runner.invoke(app, ["digest", "--engine", str(tmp_path / "clone"), "--rev",
                                        "HEAD"]),
                    "submodule atom/vendor", "git submodule update --init -- atom/vendor")
    shutil.rmtree(engine / ".git" / "modules")
    shutil.rmtree(engine / "atom" / "vendor")
    (engine / "atom" / "vendor").mkdir()
    one_line_exit_2(runner.invoke(app, ["digest", "--engine", str(engine), "--rev", "HEAD"]),
                    "submodule atom/vendor")


def test_explain_names_a_submodules_files_as_its_own(tmp_path: Path) -> None:
    engine = engine_with_submodule(tmp_path)
    (engine / "atom" / "vendor" / "kernel.py").write_text("k = 2\n")
    (engine / "atom" / "vendor" / "new.py").write_text("n = 1\n")
    lines = digest("--engine", str(engine), "--explain").splitlines()[1:]
    assert lines[0].startswith("edited     atom/vendor/kernel.py  (submodule atom/vendor's "
                               "file: differs from the commit HEAD records for it"), lines
    assert lines[1].startswith("untracked  atom/vendor/new.py  (submodule atom/vendor's file: "
                               "is not in the commit HEAD records"), lines


def test_review_verifies_a_rekey_over_a_submodule_update_from_the_submodules_objects(
        tmp_path: Path) -> None:
    import os

    from testing.workspaces import make_workspace

    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "kernel.py").write_text("k = 1\n")
    git(lib, "init", "-q")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "lib")
    ws = tmp_path / "ws"
    make_workspace(ws, 1)
    git(ws, "init", "-q")
    git(ws, "submodule", "add", "-q", str(lib), "engine/atom/vendor")
    os.chdir(ws)
    assert runner.invoke(app, ["rekey", "--why", "vendor added"]).exit_code == 0
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "base")
    vendor = ws / "engine" / "atom" / "vendor"
    (vendor / "kernel.py").write_text("k = 2\n")
    git(vendor, "commit", "-qam", "kernel 2")
    result = runner.invoke(app, ["rekey", "--why", "the vendored kernel's docstring"])
    assert result.exit_code == 0, result.output
    git(ws, "add", "-A")
    git(ws, "commit", "-qm", "vendor update, rekeyed")
    assert runner.invoke(app, ["check"]).exit_code == 0
    result = runner.invoke(app, ["review", "--base", "HEAD~1"])
    assert result.exit_code == 0, result.output


def test_footprint_trees_at_a_revision_hold_a_submodules_files_as_the_work_tree_does(
        tmp_path: Path) -> None:
    from lawkit.config import load_workspace
    from lawkit.footprint.trees import rev_sources, work_tree_sources

    engine = engine_with_submodule(tmp_path)
    config = load_workspace(cwd=tmp_path, engine=engine).digest
    at_head, work_tree = rev_sources(config, "HEAD"), work_tree_sources(config)
    assert "atom/vendor/kernel.py" in at_head.files
    assert at_head.files == work_tree.files and at_head.digest == work_tree.digest
