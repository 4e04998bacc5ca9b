"""Everything written once: one git runner, one annotation escaper."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]


def _sources() -> dict[str, str]:
    return {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8")
            for folder in ("lawkit", "src_digest") for p in (REPO / folder).rglob("*.py")}


def test_git_runs_through_one_runner_in_src_digest() -> None:
    running = sorted(name for name, text in _sources().items() if "import subprocess" in text)
    # footprint record and overhead run the user's command, never git
    assert running == ["lawkit/footprint/overhead.py", "lawkit/footprint/record.py",
                       "src_digest/git.py"], running


def test_annotations_are_escaped_in_one_place() -> None:
    escaping = sorted(name for name, text in _sources().items() if '"%0A"' in text)
    assert escaping == ["lawkit/keying/annotations.py"], escaping


def test_a_git_failure_in_review_still_names_the_revision(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    from lawkit.cli import app
    from testing.workspaces import make_workspace

    make_workspace(tmp_path, 1)
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=tmp_path, check=True)
    result = CliRunner().invoke(app, ["review", "--base", "nope"])
    assert result.exit_code == 2, result.output
    assert "base revision 'nope' does not name a commit" in result.stderr
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    result = CliRunner().invoke(app, ["review", "--base", "HEAD"])
    assert result.exit_code == 2, result.output
    assert "git is not installed" in result.stderr
