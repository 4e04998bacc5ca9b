"""rekey never loses an edit saved while it runs: just before the first file is
replaced, every file is confirmed to hold the bytes that were read; a changed one is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lawkit import fsio
from lawkit.cli import app
from testing.reliability import one_line_exit_2
from testing.workspaces import make_workspace

runner = CliRunner()


def _edit_after_prepare(monkeypatch: pytest.MonkeyPatch, victim: Path, edit: Any) -> None:
    """Make `edit(victim)` happen after rekey read and prepared every file, before any rename:
    what an editor saving (or a git checkout) in the middle of a long run does."""
    real = fsio._prepare_all

    def prepare_then_edit(*args: Any, **kwargs: Any) -> Any:
        temps = real(*args, **kwargs)
        edit(victim)
        return temps

    monkeypatch.setattr(fsio, "_prepare_all", prepare_then_edit)


@pytest.mark.parametrize("how", ["edited", "removed", "replaced by a symlink"])
def test_rekey_refuses_a_file_changed_while_it_ran_and_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    make_workspace(tmp_path, files=12, stale=True)
    files = sorted((tmp_path / "laws").glob("*.yaml"))
    before = {p: p.read_bytes() for p in files}
    victim = files[7]

    def edit(path: Path) -> None:
        if how == "edited":
            path.write_bytes(path.read_bytes() + b"# a comment saved by an editor\n")
        elif how == "removed":
            path.unlink()
        else:
            path.unlink()
            path.symlink_to(files[0])

    _edit_after_prepare(monkeypatch, victim, edit)
    edited = {p: p.read_bytes() for p in files if p != victim}
    line = one_line_exit_2(runner.invoke(app, ["rekey", "--why", "race"]), "laws/cell00007.yaml",
                           "changed while lawkit was working on it", "nothing was written")
    assert line
    for path in files:
        if path != victim:
            assert path.read_bytes() == before[path] == edited[path]
    if how == "edited":
        assert victim.read_bytes().endswith(b"# a comment saved by an editor\n")
    assert not [p for p in (tmp_path / "laws").iterdir() if p.name.startswith(fsio.TEMP_PREFIX)]


def test_rekey_writes_when_nothing_changed_meanwhile(tmp_path: Path) -> None:
    make_workspace(tmp_path, files=12, stale=True)
    result = runner.invoke(app, ["rekey", "--why", "no race"])
    assert result.exit_code == 0, result.output
    assert "rekeyed 12 law files" in result.stdout
