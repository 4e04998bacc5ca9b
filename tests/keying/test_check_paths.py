"""`lawkit check PATH...`: only the law files named, as a pre-commit hook passing file names
gives them; a path that is not a law file of the workspace is an error, never skipped."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from testing.workspaces import OLD, make_workspace

runner = CliRunner()
DIGEST = "8927e824"


def _stale(tmp_path: Path, name: str) -> None:
    law = tmp_path / "laws" / name
    text = law.read_text()
    law.write_text(text.replace(f'atom: "{DIGEST}"', f'atom: "{OLD}"', 1)
                   .replace(f'digest: "{DIGEST}"', f'digest: "{OLD}"'))


def test_check_of_named_files_checks_those_alone(tmp_path: Path) -> None:
    make_workspace(tmp_path, 3)
    _stale(tmp_path, "cell00002.yaml")
    result = runner.invoke(app, ["check", "laws/cell00000.yaml", "laws/cell00001.yaml"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"2 law files name atom={DIGEST}\n"
    stale = runner.invoke(app, ["check", "laws/cell00002.yaml", "laws/cell00000.yaml"])
    assert stale.exit_code == 1, stale.output
    assert stale.stdout.splitlines() == [
        f"laws/cell00002.yaml:6: stale: names {OLD}, the engine is at {DIGEST}",
        'fix: lawkit rekey --why "..." if the engine change cannot move host time, else refit: '
        "lawkit fit CAPTURE... --out laws/cell00002.yaml"]


@pytest.mark.usefixtures("workspace")
def test_check_of_a_folder_checks_the_law_files_below_it_and_a_file_named_twice_once(
        tmp_path: Path) -> None:
    sub = tmp_path / "laws" / "sub"
    sub.mkdir()
    (tmp_path / "laws" / "cell00001.yaml").rename(sub / "cell00001.yaml")
    result = runner.invoke(app, ["check", "laws/sub", "laws/sub/cell00001.yaml"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"1 law file names atom={DIGEST}\n"


def test_check_finds_duplicate_labels_among_the_files_named(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    laws = tmp_path / "laws"
    (laws / "copy.yaml").write_bytes((laws / "cell00000.yaml").read_bytes())
    result = runner.invoke(app, ["check", "laws/copy.yaml", "laws/cell00000.yaml"])
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0].startswith(
        "laws/cell00000.yaml:3: duplicate: the same labels as laws/copy.yaml (cell='crs00000'")


@pytest.mark.parametrize(("make", "given", "error"), [
    ("stray.yaml", "stray.yaml", "stray.yaml: not in the laws folder laws: lawkit checks and "
     "rekeys the workspace's law files; name files below it, or point laws (or --laws) at "
     "theirs (in lawkit.toml)"),
    ("laws/notes.txt", "laws/notes.txt", "laws/notes.txt: not a law file: a law file's name ends "
     "in .yaml or .yml (check never reads any other)"),
    (None, "laws/nope.yaml", "laws/nope.yaml: no such law file"),
])
def test_check_of_a_path_that_is_not_a_law_file_of_the_workspace_exits_2_naming_it(
        tmp_path: Path, make: str | None, given: str, error: str) -> None:
    make_workspace(tmp_path, 1)
    if make is not None:
        (tmp_path / make).write_text("schema: lawkit/1\n")
    result = runner.invoke(app, ["check", given])
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr == f"lawkit: error: {error}\n"


def test_check_of_named_files_keeps_the_cache_entries_of_the_others(tmp_path: Path) -> None:
    from lawkit.keying.checkcache import CheckCache

    ws = make_workspace(tmp_path, 6)
    assert runner.invoke(app, ["check"]).exit_code == 0
    edited = tmp_path / "laws" / "cell00000.yaml"
    edited.write_text(edited.read_text() + "# a note\n")  # a new entry: the cache is saved
    assert runner.invoke(app, ["check", "laws/cell00000.yaml"]).exit_code == 0
    cache = CheckCache(ws.laws)
    kept = [name for name in (f"laws/cell0000{i}.yaml" for i in range(6))
            if cache.get(cache.entry(name, "atom", (tmp_path / name).read_bytes())) is not None]
    assert len(kept) == 6, kept
