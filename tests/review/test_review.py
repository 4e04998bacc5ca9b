"""`lawkit review` on a real git repository: every class, every verdict, every format.

One repository is built per module (the `scenario` fixture of tests/review/conftest.py,
testing.lawrepo.build_scenario): a base commit on `main`, then branches `good`, `bad`,
`engine-moves`, `docs-only` and `conflicting` from it. Law files are written as text with
lawkit.lawfiles.lawwrite (as `lawkit fit` and `lawkit rekey` write them), so these tests depend
on neither command.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import src_digest
from lawkit.cli import app
from lawkit.config import load_workspace
from lawkit.keying.review import gitobjects, lawchange
from lawkit.keying.review.verify import ReviewReport, review
from lawkit.lawfiles import lawfile
from testing.lawrepo import (
    CONFIG,
    DOCSTRING_EDIT,
    ENGINE,
    WHY,
    Scenario,
    commit,
    engine_digest,
    git,
    init_repo,
    law_text,
    line_of,
)

runner = CliRunner()


def run_review(*args: str) -> Any:
    return runner.invoke(app, ["review", *args])


def report_of(s: Scenario, head: str = "HEAD", merge_with: str | None = None) -> ReviewReport:
    return review(load_workspace(cwd=s.repo), s.base, head, merge_with)


def classes(report: ReviewReport) -> dict[str, tuple[str, str]]:
    return {r.path: (r.kind, "ok" if r.ok else "finding") for r in report.files}


# -- classification and verification ------------------------------------------------------------

def test_a_correct_change_verifies_every_class_and_exits_0(in_repo: Scenario) -> None:
    report = report_of(in_repo)
    assert classes(report) == {
        "laws/adopted.yaml": ("adopt", "ok"),
        "laws/broken.yaml": ("rekey", "ok"),
        "laws/forgotten.yaml": ("rekey", "ok"),
        "laws/hand-edited.yaml": ("rekey", "ok"),
        "laws/new.yaml": ("new", "ok"),
        "laws/refit.yaml": ("refit", "ok"),
        "laws/removed.yaml": ("rekey", "ok"),
        "laws/rekeyed.yaml": ("rekey", "ok"),
        "laws/sub/deep.yaml": ("rekey", "ok"),
        "laws/wrong-from.yaml": ("rekey", "ok"),
    }
    assert report.findings == []
    assert report.exit_code == 0
    assert (report.base.digest, report.head.digest) == (in_repo.old, in_repo.new)
    assert report.engine.changed == ("atom/engine/step.py",)
    assert report.engine.added == report.engine.removed == ()
    rekey = next(r for r in report.files if r.path == "laws/rekeyed.yaml")
    assert (rekey.key_from, rekey.key_to, rekey.whys, rekey.refs) == (
        in_repo.old, in_repo.new, [WHY], ["#9"])


def test_each_problem_is_a_finding_on_its_file_and_line(in_repo: Scenario) -> None:
    report = report_of(in_repo, "bad")
    assert classes(report) == {
        "laws/adopted.yaml": ("adopt", "ok"),
        "laws/broken.yaml": ("invalid", "finding"),
        "laws/forgotten.yaml": ("forgotten", "finding"),
        "laws/hand-edited.yaml": ("hand-edit", "finding"),
        "laws/new.yaml": ("new", "ok"),
        "laws/refit.yaml": ("refit", "ok"),
        "laws/removed.yaml": ("removed", "finding"),
        "laws/rekeyed.yaml": ("rekey", "ok"),
        "laws/sub/deep.yaml": ("rekey", "ok"),
        "laws/wrong-from.yaml": ("rekey", "finding"),
    }
    texts = in_repo.texts
    found = {(f.path, f.kind, f.line) for f in report.findings}
    assert found == {
        ("laws/broken.yaml", "invalid", line_of(texts["bad:laws/broken.yaml"], "schema:")),
        ("laws/forgotten.yaml", "forgotten", line_of(texts["base:laws/forgotten.yaml"],
                                                      "atom:")),
        ("laws/hand-edited.yaml", "hand-edit", line_of(texts["bad:laws/hand-edited.yaml"],
                                                        "0.0025")),
        ("laws/removed.yaml", "removed", None),
        ("laws/wrong-from.yaml", "rekey-from", line_of(texts["bad:laws/wrong-from.yaml"],
                                                        "rekey:")),
    }
    assert report.exit_code == 1
    by_kind = {f.kind: f.message for f in report.findings}
    hand_line = line_of(texts["bad:laws/hand-edited.yaml"], "0.0025")
    assert f"line {hand_line} changed" in by_kind["hand-edit"]
    assert f"deadbeef, but the law's key at base ({in_repo.base}) is {in_repo.old}" in \
        by_kind["rekey-from"]
    assert f"names atom {in_repo.old}, but the engine at head digests to {in_repo.new}" in \
        by_kind["forgotten"]
    assert "schema: expected 'lawkit/1', got 'lawkit/2'" in by_kind["invalid"]


def test_review_changes_neither_the_work_tree_nor_the_index(in_repo: Scenario) -> None:
    repo = in_repo.repo
    before = (git(repo, "status", "--porcelain", "--ignored"), git(repo, "rev-parse", "HEAD"),
              (repo / ".git" / "index").read_bytes())
    report_of(in_repo, "bad", merge_with="engine-moves")
    after = (git(repo, "status", "--porcelain", "--ignored"), git(repo, "rev-parse", "HEAD"),
             (repo / ".git" / "index").read_bytes())
    assert after == before


# -- merge --------------------------------------------------------------------------------------

def test_merging_a_branch_that_moves_the_digest_is_a_finding(in_repo: Scenario) -> None:
    report = report_of(in_repo, merge_with="engine-moves")
    assert report.merge is not None
    moved = engine_digest(ENGINE, DOCSTRING_EDIT,
                          {"atom/sched.py": "def schedule(queue):\n    return queue[:16]\n"})
    assert report.merge.digest == moved != in_repo.new
    assert report.merge.moved.changed == ("atom/sched.py",)
    assert [f.kind for f in report.findings] == ["merge-stale"]
    assert "the laws will be stale once merged with engine-moves" in report.findings[0].message
    assert "changed atom/sched.py" in report.findings[0].message
    assert report.exit_code == 1


def test_merging_a_branch_outside_the_hashed_set_keeps_the_laws_current(in_repo: Scenario
                                                                       ) -> None:
    report = report_of(in_repo, merge_with="docs-only")
    assert report.merge is not None
    assert report.merge.digest == in_repo.new
    assert len(report.merge.moved) == 0
    assert report.merge.conflicts == ()
    assert report.exit_code == 0


def test_a_conflicted_merge_is_a_finding_naming_the_files(in_repo: Scenario) -> None:
    report = report_of(in_repo, merge_with="conflicting")
    assert report.merge is not None
    assert report.merge.conflicts == ("atom/engine/step.py",)
    assert report.merge.digest is None
    assert [f.kind for f in report.findings] == ["merge-conflict"]
    assert "conflicts in atom/engine/step.py" in report.findings[0].message
    result = run_review("--base", "main", "--merge-with", "conflicting")
    assert result.exit_code == 1, result.output
    assert "conflicted file" in result.stdout


def test_merge_with_needs_git_2_38(in_repo: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gitobjects, "git_version", lambda top: (2, 37, 1))
    result = run_review("--base", "main", "--merge-with", "docs-only")
    assert result.exit_code == 2
    assert "--merge-with needs git 2.38 or newer" in result.stderr
    assert "this git is 2.37.1" in result.stderr
    assert result.stdout == ""


# -- formats ------------------------------------------------------------------------------------

def test_text_format_lists_each_file_the_engine_files_and_the_verdict(in_repo: Scenario) -> None:
    result = run_review("--base", "main", "--merge-with", "docs-only")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("lawkit review: base main (") and in_repo.new in lines[0]
    assert any(line.split() == ["laws/rekeyed.yaml", "rekey", in_repo.old, "->", in_repo.new,
                                "ok"] for line in lines)
    assert any(line.split() == ["laws/new.yaml", "new", "->", in_repo.new, "ok"] for line in lines)
    assert ("law files changed: 10 (7 re-keyed (70%), 1 refitted (10%), 1 adopted, 1 new); "
            "untouched: 0 current") in lines
    assert f'  why: "{WHY}" (refs #9): 7 files' in lines
    assert "  changed  atom/engine/step.py" in lines
    assert any(line.startswith("merge with docs-only (") and "the laws stay current" in line
               for line in lines)
    assert lines[-1] == f"lawkit review: verified: 10 law files changed, every law names atom " \
                        f"{in_repo.new}"


def test_text_format_lists_each_finding_with_file_and_line(in_repo: Scenario) -> None:
    result = run_review("--base", "main", "--head", "bad", "--merge-with", "engine-moves")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[-1] == "lawkit review: 6 findings"
    assert "6 findings:" in lines
    forgotten = line_of(in_repo.texts["base:laws/forgotten.yaml"], "atom:")
    assert any(line.startswith(f"  laws/forgotten.yaml:{forgotten}: forgotten: ")
               for line in lines)
    assert any(line.startswith("  the laws will be stale once merged with engine-moves")
               for line in lines)
    assert ("law files changed: 9 (3 re-keyed (33%), 1 refitted (11%), 1 adopted, 1 new, "
            "1 removed, 1 hand-edited, 1 invalid); untouched: 1 forgotten, 0 current") in lines
    assert any(line.split() == ["laws/forgotten.yaml", "forgotten", in_repo.old, "1", "finding"]
               for line in lines)
    assert result.stderr == ""


def test_json_format_is_one_document_with_files_engine_and_merge(in_repo: Scenario) -> None:
    result = run_review("--base", "main", "--head", "bad", "--merge-with", "engine-moves",
                        "--format", "json")
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["verdict"] == "findings"
    assert doc["key"] == "atom"
    assert doc["base"]["digest"] == in_repo.old and doc["head"]["digest"] == in_repo.new
    assert doc["base"]["commit"] == in_repo.base
    files = {f["path"]: f for f in doc["files"]}
    assert files["laws/rekeyed.yaml"]["class"] == "rekey"
    assert files["laws/rekeyed.yaml"]["from"] == in_repo.old
    assert files["laws/rekeyed.yaml"]["to"] == in_repo.new
    assert files["laws/rekeyed.yaml"]["why"] == [WHY]
    assert files["laws/wrong-from.yaml"]["verdict"] == "finding"
    assert files["laws/wrong-from.yaml"]["findings"][0]["kind"] == "rekey-from"
    assert doc["counts"] == {"rekey": 3, "refit": 1, "adopt": 1, "new": 1, "removed": 1,
                             "hand-edit": 1, "invalid": 1, "forgotten": 1, "unchanged": 0}
    assert doc["engine"] == {"added": [], "removed": [], "changed": ["atom/engine/step.py"]}
    assert doc["merge"]["stale"] is True
    assert doc["merge"]["moved"]["changed"] == ["atom/sched.py"]
    assert len(doc["findings"]) == 6


def test_json_format_of_a_verified_change(in_repo: Scenario) -> None:
    result = run_review("--base", in_repo.base, "--format", "json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["verdict"] == "ok" and doc["findings"] == [] and doc["merge"] is None
    assert {f["verdict"] for f in doc["files"]} == {"ok"}


def test_github_format_annotates_each_finding_with_file_and_line(in_repo: Scenario) -> None:
    result = run_review("--base", "main", "--head", "bad", "--merge-with", "engine-moves",
                        "--format", "github")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    wrong = line_of(in_repo.texts["bad:laws/wrong-from.yaml"], "rekey:")
    assert any(line.startswith(f"::error file=laws/wrong-from.yaml,line={wrong},"
                               "title=lawkit review%3A rekey-from::the rekey entry says from "
                               "deadbeef") for line in lines)
    assert any(line.startswith("::error title=lawkit review%3A merge-stale::the laws will be "
                               "stale once merged") for line in lines)
    assert sum(line.startswith("::error ") for line in lines) == 6
    assert lines[-1].startswith("::notice title=lawkit review::6 findings.")


def test_github_format_of_a_verified_change_is_one_notice(in_repo: Scenario) -> None:
    result = run_review("--base", "main", "--format", "github", "--merge-with", "docs-only")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("::notice title=lawkit review::verified: 10 law files changed")


def test_markdown_format_gives_the_verdict_first_then_a_row_per_file(in_repo: Scenario) -> None:
    result = run_review("--base", "main", "--head", "bad", "--merge-with", "engine-moves",
                        "--format", "markdown")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "❌ **lawkit review: 6 findings**"
    assert "| file | class | from → to | verdict |" in lines
    assert f"| `laws/rekeyed.yaml` | rekey | `{in_repo.old}` → `{in_repo.new}` | ✅ ok |" in lines
    wrong = next(line for line in lines if line.startswith("| `laws/wrong-from.yaml` |"))
    assert "| rekey |" in wrong and "❌ line " in wrong and "deadbeef" in wrong
    assert "- changed `atom/engine/step.py`" in lines
    assert any(line.startswith("❌ merge with engine-moves") for line in lines)
    assert "- changed `atom/sched.py`" in lines


def test_markdown_format_of_a_verified_change(in_repo: Scenario) -> None:
    result = run_review("--base", "main", "--format", "markdown", "--merge-with", "docs-only")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == (f"✅ **lawkit review: verified: 10 law files changed, every law names "
                        f"atom {in_repo.new}**")
    assert sum(line.startswith("| `laws/") for line in lines) == 10
    assert any(line.startswith("✅ merge with docs-only") for line in lines)


# -- bad input ------------------------------------------------------------------------------------

def test_a_revision_that_does_not_resolve_exits_2_naming_it(in_repo: Scenario) -> None:
    for args, name in ((["--base", "no-such-branch"], "base revision 'no-such-branch'"),
                       (["--base", "main", "--head", "nope"], "head revision 'nope'"),
                       (["--base", "main", "--merge-with", "gone"],
                        "--merge-with revision 'gone'")):
        result = run_review(*args)
        assert result.exit_code == 2, result.output
        assert name in result.stderr and "does not name a commit" in result.stderr
        assert result.stdout == ""


def test_laws_outside_the_repository_exit_2(in_repo: Scenario, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    result = run_review("--base", "main", "--laws", str(outside))
    assert result.exit_code == 2, result.output
    assert "the laws folder" in result.stderr and "is outside the git repository" in \
        result.stderr


def test_an_engine_root_outside_the_repository_exits_2(in_repo: Scenario, tmp_path: Path
                                                      ) -> None:
    result = run_review("--base", "main", "--engine", str(tmp_path))
    assert result.exit_code == 2, result.output
    assert "the engine root" in result.stderr and "outside the git repository" in result.stderr


def test_an_engine_in_a_nested_repository_exits_2(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "repo", CONFIG.replace('root = "."', 'root = "vendor"'))
    commit(repo, {"laws/a.yaml": law_text("00000000", "a")}, "laws")
    init_repo(repo / "vendor")
    commit(repo / "vendor", ENGINE, "engine")
    result = runner.invoke(app, ["review", "--base", "HEAD", "--config",
                                 str(repo / "lawkit.toml")])
    assert result.exit_code == 2, result.output
    assert "inside another git repository (vendor" in result.stderr


def test_a_workspace_outside_any_repository_exits_2(tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").write_text(CONFIG)
    env_ceiling = {"GIT_CEILING_DIRECTORIES": str(tmp_path.parent)}
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env_ceiling.items():
            mp.setenv(k, v)
        result = run_review("--base", "HEAD")
    assert result.exit_code == 2, result.output
    assert "not inside a git work tree" in result.stderr


# -- cost: imports and git objects ---------------------------------------------------------------

@pytest.fixture
def git_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[str]]]:
    """Every git command run, as its arguments after `git -C DIR`."""
    calls: list[list[str]] = []
    real = subprocess.run

    def recording(args: Any, *a: Any, **kw: Any) -> Any:
        if isinstance(args, list) and args and args[0] == "git":
            calls.append([os.fsdecode(x) for x in args[3:]])
        return real(args, *a, **kw)

    monkeypatch.setattr(subprocess, "run", recording)
    yield calls


def test_review_reads_each_git_object_once(in_repo: Scenario, git_calls: list[list[str]],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[str]] = []
    real_read = src_digest.git.read_blobs

    def recording(repo_dir: Any, oids: Any) -> dict[str, bytes]:
        wanted = list(oids)
        asked.append(wanted)
        return real_read(repo_dir, wanted)

    monkeypatch.setattr(src_digest.git, "read_blobs", recording)
    report = report_of(in_repo, "bad", merge_with="engine-moves")
    assert report.exit_code == 1
    commands = [call[0] if call[0] != "--literal-pathspecs" else call[1] for call in git_calls]
    # one --batch-check naming each revision's config file and one --batch reading them; one
    # --batch-check for the law blobs' sizes (a blob over the cap is never read), one --batch
    assert commands.count("cat-file") == 4
    assert commands.count("ls-tree") == 3  # base, head, merged tree
    assert commands.count("merge-tree") == 1
    assert len(asked) == 2
    # Each blob once, though many are the same at base, head and the merge (atom/__init__.py).
    oids = asked[0] + asked[1]
    assert len(oids) == len(set(oids))
    assert git(in_repo.repo, "rev-parse", "main:atom/__init__.py") in oids
    # ... and every blob the review needs is among them: no second reader anywhere.
    ls = git(in_repo.repo, "ls-tree", "-r", "bad", "--", "laws", "atom").splitlines()
    needed = {line.split()[2] for line in ls if line.split("\t")[1].endswith((".yaml", ".py"))}
    assert needed <= set(oids)


def test_the_text_proof_of_a_rekey_agrees_with_parsing_both_files(
        in_repo: Scenario, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = [report_of(in_repo, head) for head in ("good", "bad")]
    monkeypatch.setattr(lawchange, "rekey_shape", lambda *args: None)
    slow = [report_of(in_repo, head) for head in ("good", "bad")]
    assert fast == slow


def test_a_re_keyed_file_is_parsed_once(in_repo: Scenario,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []
    real_parse = lawfile.parse

    def counting(raw: bytes, shown: str, *, key: str = "atom") -> lawfile.LawFile:
        parsed.append(shown)
        return real_parse(raw, shown, key=key)

    monkeypatch.setattr(lawfile, "parse", counting)
    report_of(in_repo)
    rekeys = ["laws/rekeyed.yaml", "laws/sub/deep.yaml", "laws/forgotten.yaml"]
    assert all(parsed.count(path) == 1 for path in rekeys), parsed
    assert parsed.count("laws/adopted.yaml") == 1
