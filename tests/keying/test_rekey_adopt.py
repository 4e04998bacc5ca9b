"""`lawkit rekey --adopt`: laws written before lawkit, and laws kept by hand: an
edited body gets one `adopt` entry vouching for it as it is now, so `check` passes again."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.lawfiles import lawfile
from testing.workspaces import OLD, files_below, make_workspace

runner = CliRunner()
DIGEST = "8927e824"
LAW = "laws/cell00000.yaml"


def _hand_edit(tmp_path: Path) -> Path:
    """Change one coefficient of the first law, as a person tuning it would."""
    law = tmp_path / LAW
    text = law.read_text()
    start = text.index('"1": ') + len('"1": ')
    end = text.index(",", start)
    law.write_text(text[:start] + "0.00123" + text[end:])
    return law


def test_adopt_vouches_for_a_body_edited_by_hand_after_an_adoption(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1, provenance="none")
    assert runner.invoke(app, ["rekey", "--adopt", "--why", "pre-lawkit laws"]).exit_code == 0
    law = _hand_edit(tmp_path)
    edited = runner.invoke(app, ["check"])
    assert edited.exit_code == 1 and " body-edited: " in edited.stdout, edited.output
    before = law.read_text()

    result = runner.invoke(app, ["rekey", "--adopt", "--why", "hand-tuned intercept", LAW])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [f"adopted {LAW} at atom={DIGEST}",
                                          "adopted 1 law file"]
    after = law.read_text()
    assert after.startswith(before) and after.count("\n") == before.count("\n") + 1
    entries = yaml.safe_load(after)["host"]["provenance"]
    assert [list(e) for e in entries] == [["adopt"], ["adopt"]]
    newest = entries[-1]["adopt"]
    assert (newest["digest"], newest["why"]) == (DIGEST, "hand-tuned intercept")
    assert newest["body"] == lawfile.load(law).body_hash() != entries[0]["adopt"]["body"]
    assert runner.invoke(app, ["check"]).exit_code == 0


@pytest.mark.usefixtures("workspace")
def test_adopt_vouches_for_a_fitted_law_edited_by_hand(tmp_path: Path) -> None:
    _hand_edit(tmp_path)
    result = runner.invoke(app, ["rekey", "--adopt", "--why", "hand-tuned intercept"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"adopted {LAW} at atom={DIGEST}",
        "skipped laws/cell00001.yaml: nothing to adopt: its provenance explains its key and its "
        "laws",
        "adopted 1 law file (1 skipped)"]
    assert runner.invoke(app, ["check"]).exit_code == 0


def test_adopt_refuses_a_key_edited_by_hand_and_writes_nothing(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1, stale=True)
    law = tmp_path / LAW
    law.write_text(law.read_text().replace(f'atom: "{OLD}"', f'atom: "{DIGEST}"', 1))
    before = files_below(tmp_path / "laws")
    result = runner.invoke(app, ["rekey", "--adopt", "--why", "hand-tuned", LAW])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        f"lawkit: error: {LAW}:6: the key {DIGEST} is not the digest the newest provenance entry "
        f"(line 33) names, {OLD}: it was edited by hand; put {OLD} back and run lawkit rekey --why "
        f"TEXT, or refit: lawkit fit CAPTURE... --out {LAW}; --adopt vouches for laws as they "
        "are, not for a key; nothing was written\n")
    assert files_below(tmp_path / "laws") == before


def test_check_names_the_adoption_that_keeps_a_hand_edit(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    _hand_edit(tmp_path)
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[0].endswith(
        f"or keep it: lawkit rekey --adopt --why \"...\" {LAW}")


@pytest.mark.usefixtures("stale_workspace")
def test_adopt_exits_1_naming_a_stale_file_it_adopted_or_left_alone(tmp_path: Path) -> None:
    _hand_edit(tmp_path)
    result = runner.invoke(app, ["rekey", "--adopt", "--why", "hand-tuned intercept"])
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"adopted {LAW} at atom={OLD}"
    assert lines[1].startswith("skipped laws/cell00001.yaml: nothing to adopt")
    assert lines[2] == f"{LAW}:6: stale: names {OLD}, the engine is at {DIGEST}"
    assert lines[3] == f"laws/cell00001.yaml:6: stale: names {OLD}, the engine is at {DIGEST}"
    assert lines[4].startswith("adopted 1 law file (1 skipped, 2 of those with a problem")
    # the hand edit is vouched for: only the key is left for a rekey to move
    assert runner.invoke(app, ["rekey", "--why", "a comment"]).exit_code == 0
    assert runner.invoke(app, ["check"]).exit_code == 0
