"""Footprints in `fit`, `rekey` and `review` on a real git repository: laws fitted with a
footprint recorded at one commit, then three commits, each re-keying the laws, that touch only
code that never ran, start-up code, and the step path."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from footprint_engine import copy_engine, edit, lawkit

from testing.lawrepo import git

CAPTURES = "batch_size,step_s\n" + "".join(f"{b},{0.001 + 0.0001 * b}\n" for b in range(1, 9))
FIT = ["fit", "captures.csv", "--out", "laws/host.yaml", "--formula", "step_s ~ 1 + batch_size",
       "--captured-on", "current"]
EDITS = {
    "untouched": ("atom/base.py", "defined, imported, never called", "never called at all"),
    "startup": ("atom/base.py", "LIMIT = 3", "LIMIT = 5"),
    "steps": ("atom/runner.py", "return x * factor", "return x * factor + 0"),
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Recorded and fitted once for the module: each test gets a copy (`repo`)."""
    root = copy_engine(tmp_path_factory.mktemp("recorded") / "repo")
    git(root, "init", "-q", "-b", "main")
    result = lawkit("footprint", "record", "--out", "fp.json", "--", sys.executable, "run.py",
                    cwd=root)
    assert result.returncode == 0, result.stderr
    (root / "captures.csv").write_text(CAPTURES)
    result = lawkit(*FIT, "--footprint", "fp.json", cwd=root)
    assert result.returncode == 0, result.stderr
    git(root, "add", "-A")
    git(root, "commit", "-qm", "engine, footprint and laws")
    return root


@pytest.fixture
def repo(recorded: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(recorded, tmp_path / "repo", symlinks=True))


def _commit_edit(repo: Path, kind: str) -> str:
    path, old, new = EDITS[kind]
    edit(repo / path, old, new)
    result = lawkit("rekey", "--why", f"an edit to {kind} code", cwd=repo)
    assert result.returncode == 0, result.stderr
    git(repo, "commit", "-qam", kind)
    return git(repo, "rev-parse", "HEAD")


def _review(repo: Path, base: str, head: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return lawkit("review", "--base", base, "--head", head, *extra, cwd=repo)


def test_fit_records_the_footprint_in_its_entry_on_one_line_and_refuses_another_digest(
        repo: Path) -> None:
    text = (repo / "laws/host.yaml").read_text()
    sha = __import__("hashlib").sha256((repo / "fp.json").read_bytes()).hexdigest()
    entry = [line for line in text.splitlines() if "{fit:" in line]
    assert len(entry) == 1
    assert f'footprint: {{path: "fp.json", sha256: "{sha}"}}' in entry[0]
    assert lawkit("check", cwd=repo).returncode == 0

    edit(repo / "atom/base.py", "LIMIT = 3", "LIMIT = 4")
    before = (repo / "laws/host.yaml").read_bytes()
    result = lawkit(*FIT, "--footprint", "fp.json", cwd=repo)
    assert result.returncode == 2
    recorded = json.loads((repo / "fp.json").read_text())["digest"]
    now = lawkit("digest", cwd=repo).stdout.strip()
    assert f"fp.json: recorded on atom={recorded}, but the captures ran on atom={now}" in \
        result.stderr
    assert (repo / "laws/host.yaml").read_bytes() == before


def test_review_gives_untouched_startup_and_steps_for_three_later_commits(repo: Path) -> None:
    fitted = git(repo, "rev-parse", "HEAD")
    heads = {kind: _commit_edit(repo, kind) for kind in ("untouched", "startup", "steps")}
    expected_units = {
        "untouched": {("only_defined", "changed", "not run")},
        "startup": {("only_defined", "changed", "not run"), ("<module>", "changed", "startup")},
        "steps": {("only_defined", "changed", "not run"), ("<module>", "changed", "startup"),
                  ("scale", "changed", "steps")},
    }
    previous = fitted
    for kind, head in heads.items():
        result = _review(repo, previous, head, "--format", "json")
        assert result.returncode == 0, result.stdout + result.stderr
        doc = json.loads(result.stdout)
        [verdict] = doc["footprints"]
        assert (verdict["path"], verdict["verdict"], verdict["footprint"]) == \
            ("laws/host.yaml", kind, "fp.json")
        assert {(u["unit"], u["change"], u["counts_as"]) for u in verdict["units"]} == \
            expected_units[kind]
        path, _old, _new = EDITS[kind]
        [engine] = doc["engine_units"]
        assert engine["path"] == path and engine["change"] == "changed"
        assert not engine["layout_only"] and len(engine["units"]) == 1

        text = _review(repo, previous, head)
        assert text.returncode == 0, text.stdout
        lines = text.stdout.splitlines()
        assert "footprint verdicts at head (1 law file naming a footprint):" in lines
        assert f"  laws/host.yaml  {kind:<9}  footprint fp.json" in lines
        assert any(line.startswith(f"  footprint fp.json: {kind}, atom ") for line in lines)

        required = _review(repo, previous, head, "--require", "untouched")
        assert required.returncode == (0 if kind == "untouched" else 1), required.stdout
        if kind != "untouched":
            assert f"laws/host.yaml: --require untouched: law step_s (step_s) is {kind}: " \
                f"footprint verdict {kind}: footprint fp.json, " in required.stdout
        assert "law verdicts at head (1 law):" in lines
        assert f"  laws/host.yaml  step_s (step_s)  {kind}" in lines
        previous = head


def test_review_lists_the_units_of_each_engine_file_changed_and_layout_only_moves(
        repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    edit(repo / "atom/base.py", '"""Say what kind of runner this is."""',
         '"""Say which kind of runner this is."""')
    lawkit("rekey", "--why", "a docstring", cwd=repo)
    git(repo, "commit", "-qam", "a docstring")
    doc = json.loads(_review(repo, base, "HEAD", "--format", "json").stdout)
    assert doc["engine_units"] == [{"path": "atom/base.py", "change": "changed",
                                    "layout_only": True, "units": [
                                        {"unit": "Base.prepare", "change": "changed",
                                         "layout_only": True}]}]
    text = _review(repo, base, "HEAD").stdout.splitlines()
    at = text.index("  changed  atom/base.py")
    assert text[at + 1:at + 3] == ["      (layout, comments or docstrings only)",
                                   "      changed  Base.prepare  (layout only)"]
    markdown = _review(repo, base, "HEAD", "--format", "markdown").stdout
    assert "- changed `atom/base.py`\n  - layout, comments or docstrings only\n  - changed " \
        "`Base.prepare` (layout only)\n" in markdown
    assert "| `laws/host.yaml` | ✅ untouched | `fp.json` |" in markdown
    assert "<summary>footprint <code>fp.json</code>: untouched, 1 unit changed" in markdown
    github = _review(repo, base, "HEAD", "--format", "github").stdout
    assert "%0Achanged atom/base.py: layout, comments or docstrings only; changed " \
        "Base.prepare (layout only)" in github.splitlines()[-1]
    assert "::notice file=laws/host.yaml,title=lawkit review%3A footprint untouched::footprint " \
        "verdict untouched: footprint fp.json, 1 unit changed: Base.prepare (ran in steps, " \
        "layout only)%0A" in github
    assert "%0Alaws/host.yaml  step_s (step_s)  untouched\n" in github
    assert "| `laws/host.yaml` | `step_s` (`step_s`) | — | ✅ untouched |" in markdown


def test_review_without_the_footprint_at_head_says_unknown_and_require_makes_it_a_finding(
        repo: Path) -> None:
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "rm", "-q", "fp.json")
    git(repo, "commit", "-qm", "drop the footprint")
    result = _review(repo, base, "HEAD", "--format", "json")
    assert result.returncode == 0
    [verdict] = json.loads(result.stdout)["footprints"]
    assert verdict["verdict"] == "unknown" and "missing" in verdict["why_unknown"]
    assert _review(repo, base, "HEAD", "--require", "untouched").returncode == 1


def test_rekey_prints_each_verdict_and_require_untouched_refuses_writing_nothing(
        repo: Path) -> None:
    edit(repo / "atom/base.py", "defined, imported, never called", "never called at all")
    result = lawkit("rekey", "--why", "unexecuted code", "--require", "untouched", cwd=repo)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1:3] == ["  footprint verdict untouched: footprint fp.json, 1 unit changed: "
                          "only_defined (never ran)",
                          "  laws/host.yaml  step_s (step_s)  untouched"]

    edit(repo / "atom/runner.py", "return x * factor", "return x * factor + 0")
    before = (repo / "laws/host.yaml").read_bytes()
    result = lawkit("rekey", "--why", "the step path", "--require", "untouched", cwd=repo)
    assert result.returncode == 2
    assert "laws/host.yaml: --require untouched: 1 law not untouched: step_s (step_s) steps; " \
        "footprint verdict steps: footprint fp.json" in result.stderr
    assert "nothing was written" in result.stderr
    assert (repo / "laws/host.yaml").read_bytes() == before
    assert lawkit("check", cwd=repo).returncode == 1

    result = lawkit("rekey", "--why", "the step path", "--json", cwd=repo)
    assert result.returncode == 0
    doc = json.loads(result.stdout)
    [verdict] = doc["verdicts"]
    assert verdict["verdict"] == "steps"
    assert doc["laws"] == [{"file": "laws/host.yaml", "name": "step_s", "target": "step_s",
                            "region": None, "verdict": "steps",
                            "footprints": ["fp.json"]}]


def test_rekey_require_untouched_refuses_a_law_file_without_a_footprint(tmp_path: Path) -> None:
    root = copy_engine(tmp_path / "engine")
    (root / "captures.csv").write_text(CAPTURES)
    assert lawkit(*FIT, cwd=root).returncode == 0
    edit(root / "atom/base.py", "LIMIT = 3", "LIMIT = 4")
    result = lawkit("rekey", "--why", "w", "--require", "untouched", cwd=root)
    assert result.returncode == 2
    assert "footprint verdict unknown: its newest fit names no footprint" in result.stderr
    result = lawkit("rekey", "--why", "w", cwd=root)
    assert result.returncode == 0 and "footprint verdict" not in result.stdout


def test_fit_refuses_a_footprint_outside_the_repository(repo: Path) -> None:
    outside = repo.parent / "elsewhere.json"
    shutil.copy(repo / "fp.json", outside)
    result = lawkit(*FIT, "--footprint", str(outside), cwd=repo)
    assert result.returncode == 2
    assert f"{outside}: outside the workspace" in result.stderr
    assert git(repo, "status", "--porcelain") == ""


def test_require_takes_only_untouched_or_startup(repo: Path) -> None:
    for command in (["rekey", "--why", "w"], ["review", "--base", "HEAD"]):
        result = lawkit(*command, "--require", "steps", cwd=repo)
        assert result.returncode == 2
        assert "--require 'steps': expected one of untouched, startup" in result.stderr
