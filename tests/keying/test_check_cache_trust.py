"""check's cache is what docs/commands.md#the-cache says: budgeted by the laws
folder's size, not read where CI is set unless --cache is given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.config import Workspace
from lawkit.keying import check as check_module
from lawkit.keying.checkcache import CheckCache
from testing.workspaces import make_workspace

runner = CliRunner()


def _entries(ws_laws: Path) -> dict[str, object]:
    entries = json.loads(CheckCache(ws_laws).path.read_text())["entries"]
    assert isinstance(entries, dict)
    return entries


def test_a_partial_rekey_keeps_the_entries_of_the_other_files(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path, 200, stale=True)
    assert runner.invoke(app, ["check"]).exit_code == 1
    assert len(_entries(ws.laws)) == 200
    paths = [f"laws/cell{i:05d}.yaml" for i in range(8)]
    result = runner.invoke(app, ["rekey", "--why", "a few", *paths])
    assert result.exit_code == 0, result.output
    assert len(_entries(ws.laws)) >= 200  # the 192 others and the 8 rekeyed files


def test_where_ci_is_set_check_does_not_read_the_cache_unless_told(
        stale_workspace: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    assert runner.invoke(app, ["check"]).exit_code == 1
    # An entry edited on disk (or a cache restored from another checkout) says "no problem".
    path = CheckCache(stale_workspace.laws).path
    document = json.loads(path.read_text())
    for entry in document["entries"].values():
        entry["named"] = "8927e824"
    path.write_text(json.dumps(document))
    assert runner.invoke(app, ["check"]).exit_code == 0  # a developer's machine trusts its own
    monkeypatch.setenv("CI", "true")
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert result.stdout.count("stale") == 2
    assert runner.invoke(app, ["check", "--cache"]).exit_code == 0
    monkeypatch.setenv("CI", "false")
    assert runner.invoke(app, ["check"]).exit_code == 0


@pytest.mark.usefixtures("stale_workspace")
def test_where_ci_is_set_rekey_does_not_read_the_cache_unless_told(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert runner.invoke(app, ["check"]).exit_code == 1
    monkeypatch.setenv("CI", "1")
    read = []
    real = check_module.read_law_file

    def spy(path: object, shown: str, key: str, cache: object) -> object:
        read.append(cache)
        return real(path, shown, key, cache)  # type: ignore[arg-type]

    monkeypatch.setattr("lawkit.keying.rekey.read_law_file", spy)
    assert runner.invoke(app, ["rekey", "--why", "ci", "--dry-run"]).exit_code == 0
    assert read == [None, None]
    assert runner.invoke(app, ["rekey", "--why", "ci", "--dry-run", "--cache"]).exit_code == 0
    assert None not in read[2:]
