"""`lawkit review` on a real git repository: every class, every verdict, every format.

One repository is built per module: a base commit on `main` with an engine (atom/*.py) and law
files keyed to its digest, then branches from it:

    good           the engine's docstring edited; every law re-keyed, refitted, adopted, added
                   or removed correctly: everything verifies
    bad            the same engine edit, with a hand-edit, a forgotten law, a re-key whose
                   `from` is wrong and a law file that no longer validates
    engine-moves   a hashed engine file edited: merging it moves the digest
    docs-only      only files outside the hashed set edited: merging it keeps the digest
    conflicting    the same engine line edited differently: the merge conflicts

Law files are written as text with lawkit.lawfiles.lawwrite (as `lawkit fit` and `lawkit rekey`
write them), so these tests depend on neither command.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
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
from lawkit.lawfiles.lawwrite import law_file_text, provenance_entry

runner = CliRunner()

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_AUTHOR_NAME": "lawkit tests",
    "GIT_AUTHOR_EMAIL": "tests@lawkit.invalid",
    "GIT_COMMITTER_NAME": "lawkit tests",
    "GIT_COMMITTER_EMAIL": "tests@lawkit.invalid",
}
AT = "2026-11-10T09:12:44Z"
WHY = "docstring only: cannot move host time"
CONFIG = 'laws = "laws"\n\n[digest]\nroot = "."\npackages = ["atom"]\n'
ENGINE: dict[str, str | None] = {
    "atom/__init__.py": "",
    "atom/engine/step.py": '"""One forward step."""\n\n\ndef step(batch):\n    return batch\n',
    "atom/sched.py": "def schedule(queue):\n    return queue[:8]\n",
    "atom/README.md": "not hashed: only *.py files are\n",
    "docs/guide.md": "outside the engine packages\n",
}
DOCSTRING_EDIT = {"atom/engine/step.py": '"""One forward step of the engine."""\n\n\n'
                                         'def step(batch):\n    return batch\n'}
LAWS: list[dict[str, Any]] = [
    {"name": "prefill", "target": "host_s", "where": {"phase": "prefill"},
     "terms": {"1": 0.0021, "num_seqs": 0.00012, "num_tokens": 3.1e-08},
     "fit": {"method": "ols", "n": 9120, "r2": 0.982}},
    {"name": "decode", "target": "host_s", "where": {"phase": "decode"},
     "terms": {"1": 0.0011, "num_seqs": 4.0e-05}},
]
REFITTED: list[dict[str, Any]] = [
    {**LAWS[0], "terms": {"1": 0.0023, "num_seqs": 0.00011, "num_tokens": 3.3e-08},
     "fit": {"method": "ols", "n": 9800, "r2": 0.985}},
    LAWS[1],
]


# -- building repositories ------------------------------------------------------------------

def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a clean environment; its stdout, stripped."""
    env = {**os.environ, **GIT_ENV}
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True, env=env, stdin=subprocess.DEVNULL)
    return proc.stdout.strip()


def init_repo(path: Path, config: str = CONFIG) -> Path:
    """An empty repository on branch main holding a lawkit.toml workspace config."""
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "commit.gpgsign", "false")
    git(path, "config", "core.autocrlf", "false")
    (path / "lawkit.toml").write_text(config)
    return path


def commit(repo: Path, files: Mapping[str, str | bytes | None], message: str) -> str:
    """Write (None: delete) the files, commit everything, and return the commit id."""
    for name, content in files.items():
        path = repo / name
        if content is None:
            path.unlink()
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def engine_digest(*layers: Mapping[str, str | None]) -> str:
    """The src_digest/1 digest of the engine files given (later layers override earlier)."""
    files: dict[str, str | None] = {}
    for layer in layers:
        files.update(layer)
    return src_digest.Manifest(tuple(
        src_digest.FileEntry(name.encode(), hashlib.sha256(content.encode()).digest())
        for name, content in files.items()
        if content is not None and name.startswith("atom/") and name.endswith(".py")
        and "__pycache__" not in name
    )).digest()


def body_of(laws: Sequence[Mapping[str, Any]]) -> str:
    """The body hash of laws given as mappings."""
    return lawfile.body_hash([lawfile.Law.model_validate(dict(law)) for law in laws])


def fit_entry(digest: str, laws: Sequence[Mapping[str, Any]] = LAWS) -> tuple[str, dict[str, Any]]:
    """A `fit` provenance entry for laws fitted on `digest`."""
    return ("fit", {"digest": digest, "at": AT, "records": 18234, "body": body_of(laws),
                    "captures": []})


def law_text(key: str, cell: str, *, laws: Sequence[Mapping[str, Any]] = LAWS,
             provenance: Sequence[tuple[str, Mapping[str, Any]]] | None = None) -> str:
    """A law file keyed to `key`, fitted on it unless `provenance` says otherwise."""
    entries = [fit_entry(key, laws)] if provenance is None else list(provenance)
    text = law_file_text(labels={"cell": cell}, key_name="atom", key=key, laws=laws,
                         provenance=entries, header="host laws of one cell")
    return text if entries else text.replace("  provenance:\n", "")


def rekeyed(text: str, old: str, new: str, *, why: str = WHY, from_: str | None = None) -> str:
    """`text` re-keyed as `lawkit rekey` does it: the key line, and one appended line."""
    assert text.count(f'atom: "{old}"') == 1
    entry = provenance_entry("rekey", {"from": from_ or old, "to": new, "at": AT, "why": why,
                                       "refs": ["#9"]})
    eol = "\r\n" if "\r\n" in text else "\n"
    if not text.endswith(("\n", "\r")):
        text += eol
    return text.replace(f'atom: "{old}"', f'atom: "{new}"') + f"    - {entry}{eol}"


def adopted(text: str, key: str) -> str:
    """`text`, a law file without provenance, adopted: `provenance:` and one `adopt` entry."""
    entry = provenance_entry("adopt", {"digest": key, "at": AT, "why": "fitted before lawkit",
                                       "body": body_of(LAWS)})
    return text + f"  provenance:\n    - {entry}\n"


def line_of(text: str, needle: str, nth: int = 1) -> int:
    """The 1-based line of the nth line holding `needle`."""
    hits = [i for i, line in enumerate(text.splitlines(), start=1) if needle in line]
    return hits[nth - 1]


# -- the scenario -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Scenario:
    repo: Path
    base: str
    old: str
    new: str
    texts: dict[str, str]


@pytest.fixture(autouse=True)
def _git_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    repo = init_repo(tmp_path_factory.mktemp("review") / "repo")
    old, new = engine_digest(ENGINE), engine_digest(ENGINE, DOCSTRING_EDIT)
    at_base = {name: law_text(old, cell) for name, cell in (
        ("laws/rekeyed.yaml", "a"), ("laws/sub/deep.yaml", "b"), ("laws/refit.yaml", "c"),
        ("laws/hand-edited.yaml", "e"), ("laws/removed.yaml", "f"), ("laws/forgotten.yaml", "g"),
        ("laws/wrong-from.yaml", "h"), ("laws/broken.yaml", "i"))}
    # A law written before lawkit, already keyed to the new digest: adopting it is enough.
    at_base["laws/adopted.yaml"] = law_text(new, "d", provenance=[])
    base = commit(repo, {**ENGINE, **at_base}, "base")

    def rekey(name: str, **kwargs: Any) -> str:
        return rekeyed(at_base[name], old, new, **kwargs)

    shared = {
        **DOCSTRING_EDIT,
        "laws/rekeyed.yaml": rekey("laws/rekeyed.yaml"),
        "laws/sub/deep.yaml": rekey("laws/sub/deep.yaml"),
        "laws/refit.yaml": law_text(new, "c", laws=REFITTED,
                                    provenance=[fit_entry(old), fit_entry(new, REFITTED)]),
        "laws/adopted.yaml": adopted(at_base["laws/adopted.yaml"], new),
        "laws/new.yaml": law_text(new, "j"),
    }
    good = {**shared, **{name: rekey(name) for name in (
        "laws/hand-edited.yaml", "laws/forgotten.yaml", "laws/wrong-from.yaml",
        "laws/broken.yaml", "laws/removed.yaml")}}
    bad = {
        **shared,
        "laws/removed.yaml": None,
        "laws/hand-edited.yaml": rekey("laws/hand-edited.yaml").replace("0.0021", "0.0025", 1),
        "laws/wrong-from.yaml": rekey("laws/wrong-from.yaml", from_="deadbeef"),
        "laws/broken.yaml": rekey("laws/broken.yaml").replace("lawkit/1", "lawkit/2"),
    }
    branches = {
        "good": good,
        "bad": bad,
        "engine-moves": {"atom/sched.py": "def schedule(queue):\n    return queue[:16]\n"},
        "docs-only": {"docs/guide.md": "edited\n", "atom/README.md": "edited\n",
                      "atom/__pycache__/cached.py": "x = 1\n", "atom/notes.txt": "notes\n"},
        "conflicting": {"atom/engine/step.py": '"""A different docstring."""\n'},
    }
    texts = {}
    for branch, files in branches.items():
        git(repo, "checkout", "-q", "-b", branch, base)
        commit(repo, files, branch)
        texts.update({f"{branch}:{k}": v for k, v in files.items() if isinstance(v, str)})
    texts.update({f"base:{k}": v for k, v in at_base.items()})
    git(repo, "checkout", "-q", "good")
    return Scenario(repo=repo, base=base, old=old, new=new, texts=texts)


@pytest.fixture
def in_repo(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> Scenario:
    monkeypatch.chdir(scenario.repo)
    return scenario


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

def test_review_imports_neither_numpy_pandas_nor_scipy(in_repo: Scenario) -> None:
    code = ("import sys\n"
            "from typer.testing import CliRunner\n"
            "from lawkit.cli import app\n"
            "r = CliRunner().invoke(app, ['review', '--base', 'main', '--merge-with', "
            "'docs-only', '--format', 'markdown'])\n"
            "assert r.exit_code == 0, r.output\n"
            "heavy = {'numpy', 'pandas', 'scipy', 'matplotlib'} & set(sys.modules)\n"
            "assert not heavy, heavy\n")
    proc = subprocess.run([sys.executable, "-c", code], cwd=in_repo.repo, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stderr


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
