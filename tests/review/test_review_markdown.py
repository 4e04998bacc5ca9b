"""review --format markdown passes no HTML through: a file name, a ref or a
--why holding tags is shown as text by a CommonMark renderer with HTML enabled."""

from __future__ import annotations

from pathlib import Path

from markdown_it import MarkdownIt
from typer.testing import CliRunner

from lawkit.cli import app
from testing.lawrepo import git
from testing.workspaces import OLD, law_text, make_workspace

runner = CliRunner()
HOSTILE = "<details><img src=x onerror=alert(1)>"


def test_markdown_output_renders_no_tag_from_a_why_a_ref_or_a_file_name(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1, stale=True)
    hostile_file = tmp_path / "laws" / f"{HOSTILE.replace('/', '')} `x` |y|.yaml"
    hostile_file.write_text(law_text(key=OLD, labels={"cell": "other"}))
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "base")
    (tmp_path / "engine" / "atom" / "new.py").write_text("y = 2\n")
    result = runner.invoke(app, ["rekey", "--why", f"{HOSTILE} *bold* & [a](b)",
                                 "--ref", "<b>#1</b>"])
    assert result.exit_code == 0, result.output
    (tmp_path / "engine" / "atom" / "<img src=x onerror=alert(2)>.py").write_text("z = 3\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-qm", "head")
    branch = "<img-src=x-onerror=alert(3)>"
    git(tmp_path, "branch", branch)
    result = runner.invoke(app, ["review", "--base", "HEAD~1", "--head", branch,
                                 "--format", "markdown"])
    assert result.exit_code in (0, 1), result.output
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(result.stdout)
    assert "<img" not in html and "<b>" not in html, html
    assert html.count("<details>") == 1  # the report's own fold of the engine files
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;img-src=x-onerror=alert(3)&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;.py" in html
    assert "<strong>bold</strong>" not in html and 'href="b"' not in html
