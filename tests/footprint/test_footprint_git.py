"""`lawkit footprint diff --rev` on a real git repository: a footprint recorded at one commit,
then three later commits touching code that never ran, start-up code, and the step path."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from footprint_engine import copy_engine, edit, lawkit

from testing.lawrepo import git


def _commit(repo: Path, message: str) -> str:
    git(repo, "commit", "-qam", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = copy_engine(tmp_path / "repo")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "engine")
    result = lawkit("footprint", "record", "--out", "fp.json", "--", sys.executable, "run.py",
                    cwd=root)
    assert result.returncode == 0, result.stderr
    return root


def _diff(repo: Path, rev: str) -> tuple[int, dict[str, object]]:
    result = lawkit("footprint", "diff", "fp.json", "--rev", rev, "--json", cwd=repo)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def test_diff_rev_gives_untouched_startup_and_steps_for_three_later_commits(repo: Path) -> None:
    edit(repo / "atom/base.py", "defined, imported, never called", "never called at all")
    unexecuted = _commit(repo, "only code that never runs")
    edit(repo / "atom/base.py", "LIMIT = 3", "LIMIT = 5")
    startup = _commit(repo, "start-up code")
    edit(repo / "atom/runner.py", "return x * factor", "return x * factor + 0")
    steps = _commit(repo, "the step path")

    code, doc = _diff(repo, unexecuted)
    assert (code, doc["verdict"]) == (0, "untouched")
    assert doc["units"] == [{"path": "atom/base.py", "unit": "only_defined", "change": "changed",
                             "phases": [], "regions": [], "counts_as": "not run",
                             "layout_only": False}]
    fp_digest = json.loads((repo / "fp.json").read_text())["digest"]
    assert doc["digest"]["footprint"] == fp_digest
    assert doc["digest"]["target"] == lawkit("digest", "--rev", unexecuted, cwd=repo).stdout.strip()

    code, doc = _diff(repo, startup)
    assert (code, doc["verdict"]) == (1, "startup")
    assert {(u["unit"], u["counts_as"]) for u in doc["units"]} == {
        ("only_defined", "not run"), ("<module>", "startup")}

    code, doc = _diff(repo, steps)
    assert (code, doc["verdict"]) == (1, "steps")
    assert ("scale", "steps") in {(u["unit"], u["counts_as"]) for u in doc["units"]}


def test_diff_finds_the_recorded_source_in_history_to_class_a_docstring_change(
        repo: Path) -> None:
    edit(repo / "atom/base.py", '"""Say what kind of runner this is."""',
         '"""Say which kind of runner this is."""')
    rev = _commit(repo, "a docstring")
    code, doc = _diff(repo, rev)
    assert (code, doc["verdict"]) == (0, "untouched")  # it ran in steps: its code did not change
    assert doc["units"] == [{"path": "atom/base.py", "unit": "Base.prepare", "change": "changed",
                             "phases": ["steps"], "regions": ["*"], "counts_as": "layout only",
                             "layout_only": True}]
    text = lawkit("footprint", "diff", "fp.json", cwd=repo)  # the work tree, as committed
    assert text.returncode == 0
    assert text.stdout.splitlines()[1] == ("changed  atom/base.py  Base.prepare  ran in steps: "
                                           "counts as layout only")


def test_diff_exits_2_on_a_bad_revision_or_a_damaged_footprint(repo: Path) -> None:
    result = lawkit("footprint", "diff", "fp.json", "--rev", "no-such-rev", cwd=repo)
    assert result.returncode == 2 and "no-such-rev" in result.stderr
    (repo / "bad.json").write_text('{"schema": "other"}')
    result = lawkit("footprint", "diff", "bad.json", cwd=repo)
    assert result.returncode == 2
    assert ("bad.json: schema: expected one of ['lawkit-footprint/1', 'lawkit-footprint/2', "
            "'lawkit-footprint/3']" in result.stderr)
    result = lawkit("footprint", "diff", "missing.json", cwd=repo)
    assert result.returncode == 2 and "missing.json" in result.stderr
