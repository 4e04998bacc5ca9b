"""`lawkit rekey`: two text edits per law file, verified, all or nothing."""

from __future__ import annotations

import datetime
import json
import os
import re
import stat
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit import fsio
from lawkit.cli import app
from lawkit.config import load_workspace
from lawkit.errors import LawkitError, RefusalError
from lawkit.keying.rekey import adopt, adopted_bytes, rekey, rekeyed_bytes
from testing.workspaces import OLD, body_of, files_below, make_workspace

NEW = "8927e824"  # the digest of workspaces.ENGINE
AT = datetime.datetime(2026, 11, 10, 9, 12, 44, tzinfo=datetime.UTC)
runner = CliRunner()
LAW = {"name": "prefill", "target": "host_s", "terms": {"1": 0.0021, "num_seqs": 0.00012}}
BODY = body_of([LAW])
SMALL = f"""\
# laws for one cell
schema: lawkit/1
labels: {{cell: crs005}}   # what it prices
host:
  key:
    atom: "{OLD}"  # the digest
  laws:
    - name: prefill
      target: host_s
      terms: {{"1": 0.0021, num_seqs: 0.00012}}
  provenance:
    - {{fit: {{digest: "{OLD}", at: "2026-10-02T11:20:00Z", records: 10, body: "{BODY}"}}}}
device: {{gpu: a100}}
"""
REKEY_LINE = (f'    - {{rekey: {{from: "{OLD}", to: "{NEW}", at: "2026-11-10T09:12:44Z", why: '
              f'"docstring only", refs: ["#2655"]}}}}\n')


def _workspace(tmp_path: Path, texts: dict[str, str | bytes]) -> Path:
    make_workspace(tmp_path, 0)
    for name, text in texts.items():
        path = tmp_path / "laws" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode() if isinstance(text, str) else text)
    return tmp_path / "laws"


def _rekey(tmp_path: Path, **kwargs: object) -> object:
    ws = load_workspace(config=tmp_path / "lawkit.toml")
    run = adopt if kwargs.pop("adopt", False) else rekey
    return run(ws, why=str(kwargs.pop("why", "docstring only")), at=AT, **kwargs)  # type: ignore[arg-type]


def test_rekey_changes_only_the_key_line_and_adds_one_clause(tmp_path: Path) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL})
    _rekey(tmp_path, refs=["#2655"])
    old = SMALL.splitlines(keepends=True)
    new = (laws / "a.yaml").read_text().splitlines(keepends=True)
    assert new[5] == f'    atom: "{NEW}"  # the digest\n'
    assert new[12] == REKEY_LINE
    assert new[:5] + new[6:12] + new[13:] == old[:5] + old[6:]


@pytest.mark.usefixtures("stale_workspace")
def test_rekey_from_the_command_line_says_what_it_did(tmp_path: Path) -> None:
    result = runner.invoke(app, ["rekey", "--why", "docstring only", "--ref", "#1", "--ref", "#2"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"rekeyed laws/cell00000.yaml: {OLD} -> {NEW}",
        f"rekeyed laws/cell00001.yaml: {OLD} -> {NEW}",
        f"rekeyed 2 law files to atom={NEW}",
    ]
    last = (tmp_path / "laws" / "cell00000.yaml").read_text().splitlines()[-1]
    assert re.fullmatch(rf'    - \{{rekey: \{{from: "{OLD}", to: "{NEW}", at: "\d{{4}}-\d\d-\d\dT'
                        r'\d\d:\d\d:\d\dZ", why: "docstring only", refs: \["#1", "#2"\]\}\}', last)
    at = re.search(r'at: "([^"]+)", why', last)
    assert at is not None
    stamp = datetime.datetime.strptime(at.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.UTC)
    assert abs((datetime.datetime.now(datetime.UTC) - stamp).total_seconds()) < 120


def test_rekey_keeps_crlf_a_bom_single_quotes_and_comments_byte_for_byte(tmp_path: Path) -> None:
    text = SMALL.replace(f'atom: "{OLD}"', f"atom: '{OLD}'").replace("\n", "\r\n")
    raw = b"\xef\xbb\xbf" + text.encode()
    laws = _workspace(tmp_path, {"a.yaml": raw})
    _rekey(tmp_path, refs=["#2655"])
    expected = raw.replace(f"atom: '{OLD}'".encode(), f"atom: '{NEW}'".encode()).replace(
        b"\r\ndevice:", b"\r\n" + REKEY_LINE.replace("\n", "\r\n").encode().rstrip(b"\r\n")
        + b"\r\ndevice:")
    assert (laws / "a.yaml").read_bytes() == expected


def test_rekey_gives_a_file_without_a_final_newline_one(tmp_path: Path) -> None:
    text = SMALL.replace("device: {gpu: a100}\n", "").rstrip("\n")
    laws = _workspace(tmp_path, {"a.yaml": text})
    _rekey(tmp_path, refs=["#2655"])
    assert (laws / "a.yaml").read_text() == \
        text.replace(OLD, NEW, 1) + "\n" + REKEY_LINE


def test_rekey_appends_at_the_indentation_of_the_existing_items(tmp_path: Path) -> None:
    text = SMALL.replace("    - {fit:", "  - {fit:")  # an indentless sequence
    laws = _workspace(tmp_path, {"a.yaml": text})
    _rekey(tmp_path, refs=["#2655"])
    assert REKEY_LINE[2:] in (laws / "a.yaml").read_text()


def test_rekey_refuses_a_flow_style_provenance_list_naming_its_line_and_writes_nothing(
        tmp_path: Path) -> None:
    flow = SMALL.replace("  provenance:\n    - {fit:", "  provenance: [{fit:").replace(
        '}}\ndevice', '}}]\ndevice')
    laws = _workspace(tmp_path, {"a.yaml": SMALL, "b.yaml": flow})
    before = files_below(laws)
    result = runner.invoke(app, ["rekey", "--why", "docstring only"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("lawkit: error: laws/b.yaml:11: host.provenance is a "
                                    "flow-style list ([...]): lawkit appends one line per entry")
    assert "nothing was written" in result.stderr
    assert files_below(laws) == before


def test_adopt_refuses_an_empty_flow_provenance_list_and_says_it_can_go(tmp_path: Path) -> None:
    text = SMALL.replace(SMALL[SMALL.index("  provenance:"):SMALL.index("device")],
                         "  provenance: []\n")
    _workspace(tmp_path, {"a.yaml": text})
    result = runner.invoke(app, ["rekey", "--adopt", "--why", "pre-lawkit laws"])
    assert result.exit_code == 2, result.output
    assert "laws/a.yaml:11: host.provenance is a flow-style list" in result.stderr
    assert "an empty 'provenance: []' can simply be removed" in result.stderr


def test_rekey_refuses_a_provenance_entry_that_is_a_block_mapping(tmp_path: Path) -> None:
    block = SMALL.replace("    - {fit: {digest:", "    - fit: {digest:").replace(
        f'body: "{BODY}"}}}}', f'body: "{BODY}"}}')
    laws = _workspace(tmp_path, {"a.yaml": block})
    before = files_below(laws)
    result = runner.invoke(app, ["rekey", "--why", "docstring only"])
    assert result.exit_code == 2, result.output
    assert "laws/a.yaml:12: the last provenance entry is not a '- {kind: {...}}' line" in \
        result.stderr
    assert files_below(laws) == before


def test_rekey_refuses_a_body_edited_after_its_fit_and_names_lawkit_fit(tmp_path: Path) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL.replace("0.0021", "0.0025")})
    before = files_below(laws)
    result = runner.invoke(app, ["rekey", "--why", "docstring only"])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "lawkit: error: laws/a.yaml:8: the laws differ from the body the fit entry at line 12 "
        "recorded: edited by hand after it; undo the edit, refit (lawkit fit CAPTURE... "
        "--out laws/a.yaml), or keep it: lawkit rekey --adopt --why \"...\" laws/a.yaml; "
        "nothing was written\n")
    assert files_below(laws) == before


def test_rekey_refuses_a_key_edited_by_hand_without_naming_adopt(tmp_path: Path) -> None:
    _workspace(tmp_path, {"a.yaml": SMALL.replace(f'atom: "{OLD}"', 'atom: "0badc0de"')})
    result = runner.invoke(app, ["rekey", "--why", "docstring only"])
    assert result.exit_code == 2, result.output
    assert "laws/a.yaml:6: the key 0badc0de is not the digest the newest provenance entry" in \
        result.stderr
    assert "--adopt" not in result.stderr


def test_rekey_refuses_laws_without_provenance_and_names_adopt(tmp_path: Path) -> None:
    no_history = SMALL.replace(SMALL[SMALL.index("  provenance:"):SMALL.index("device")], "")
    _workspace(tmp_path, {"a.yaml": no_history})
    result = runner.invoke(app, ["rekey", "--why", "docstring only"])
    assert result.exit_code == 2, result.output
    assert "laws/a.yaml:6: no provenance explains the key 59e9ff5a" in result.stderr
    assert 'lawkit rekey --adopt --why "..."' in result.stderr


def test_rekey_refuses_an_invalid_file_and_writes_no_file_at_all(tmp_path: Path) -> None:
    unquoted = SMALL.replace(f'"{OLD}"  #', f"{OLD}  #")
    laws = _workspace(tmp_path, {"a.yaml": SMALL, "b.yaml": unquoted, "c.yaml": SMALL})
    before = files_below(laws)
    result = runner.invoke(app, ["rekey", "--why", "docstring only"])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("lawkit: error: laws/b.yaml:6: host.key.atom: expected a "
                                    "quoted string")
    assert files_below(laws) == before


def test_rekey_says_how_many_more_files_it_refused(tmp_path: Path) -> None:
    broken = "schema: lawkit/1\n"
    _workspace(tmp_path, {"a.yaml": broken, "b.yaml": broken, "c.yaml": broken})
    result = runner.invoke(app, ["rekey", "--why", "docstring only"])
    assert result.exit_code == 2, result.output
    assert result.stderr.rstrip().endswith(
        "nothing was written (2 more files refused: lawkit check lists them)")


def test_rekey_from_only_touches_laws_naming_that_digest_and_lists_the_others(
        tmp_path: Path) -> None:
    other = "0badc0de"
    laws = _workspace(tmp_path, {"a.yaml": SMALL, "b.yaml": SMALL.replace(OLD, other)})
    result = runner.invoke(app, ["rekey", "--why", "docstring only", "--from", OLD])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        f"rekeyed laws/a.yaml: {OLD} -> {NEW}",
        f"skipped laws/b.yaml: names {other}, not --from {OLD}",
        f"rekeyed 1 law file to atom={NEW} (1 skipped)",
    ]
    assert (laws / "b.yaml").read_text() == SMALL.replace(OLD, other)


def test_rekey_to_moves_the_laws_to_the_digest_named(tmp_path: Path) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL})
    result = runner.invoke(app, ["rekey", "--why", "docstring only", "--to", "0123abcd"])
    assert result.exit_code == 0, result.output
    assert 'atom: "0123abcd"  # the digest' in (laws / "a.yaml").read_text()


@pytest.mark.parametrize("bad", ["0123abc", "0123abcde", "0123ABCD", "0123abcg", ""])
def test_rekey_to_must_be_hex_of_the_configured_length(tmp_path: Path, bad: str) -> None:
    _workspace(tmp_path, {"a.yaml": SMALL})
    result = runner.invoke(app, ["rekey", "--why", "docstring only", "--to", bad])
    assert result.exit_code == 2, result.output
    assert "expected a digest of 8 lowercase hex characters" in result.stderr


@pytest.mark.parametrize("why", ["", "   ", "two\nlines", "bell\a"])
def test_rekey_why_must_be_one_line_of_text(tmp_path: Path, why: str) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL})
    result = runner.invoke(app, ["rekey", "--why", why])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("lawkit: error: --why: ")
    assert (laws / "a.yaml").read_text() == SMALL


def test_rekey_without_why_is_a_usage_error(tmp_path: Path) -> None:
    _workspace(tmp_path, {"a.yaml": SMALL})
    result = runner.invoke(app, ["rekey"])
    assert result.exit_code == 2
    assert "--why" in result.stderr


def test_rekey_writes_a_why_with_quotes_and_unicode_that_reads_back_the_same(
        tmp_path: Path) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL})
    why = 'only "docs" changed: naïve → façade #7 {x: [1]}'
    _rekey(tmp_path, why=why)
    from lawkit.lawfiles.lawfile import load

    entry = load(laws / "a.yaml").host.provenance[-1]
    assert entry.rekey is not None and entry.rekey.why == why


def test_rekey_dry_run_prints_a_unified_diff_that_applies_and_writes_nothing(
        tmp_path: Path) -> None:
    no_newline = SMALL.replace("device: {gpu: a100}\n", "").rstrip("\n")
    laws = _workspace(tmp_path, {"a.yaml": SMALL, "sub/b.yaml": no_newline})
    before = files_below(laws)
    report = _rekey(tmp_path, refs=["#2655"], dry_run=True)
    assert files_below(laws) == before
    diff = report.diff  # type: ignore[attr-defined]
    assert diff.splitlines()[:3] == ["--- a/laws/a.yaml", "+++ b/laws/a.yaml",
                                     "@@ -3,11 +3,12 @@"]
    assert f'-    atom: "{OLD}"  # the digest' in diff.splitlines()
    assert "+" + REKEY_LINE.rstrip("\n") in diff.splitlines()
    assert "\\ No newline at end of file" in diff.splitlines()
    (tmp_path / "change.diff").write_text(diff)
    subprocess.run(["git", "apply", "change.diff"], cwd=tmp_path, check=True)
    applied = files_below(laws)
    for path, data in before.items():
        (laws / path).write_bytes(data)
    _rekey(tmp_path, refs=["#2655"])
    assert files_below(laws) == applied


def test_rekey_dry_run_from_the_command_line_keeps_stdout_for_the_diff(tmp_path: Path) -> None:
    _workspace(tmp_path, {"a.yaml": SMALL})
    result = runner.invoke(app, ["rekey", "--why", "docstring only", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("--- a/laws/a.yaml\n+++ b/laws/a.yaml\n")
    assert result.stderr.splitlines()[-1] == f"would rekey 1 law file to atom={NEW}"


def test_rekey_dry_run_needs_no_why_and_a_real_run_still_does(tmp_path: Path) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL})
    result = runner.invoke(app, ["rekey", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("--- a/laws/a.yaml\n+++ b/laws/a.yaml\n")
    refused = runner.invoke(app, ["rekey"])
    assert refused.exit_code == 2 and "--why TEXT is required" in refused.stderr
    assert (laws / "a.yaml").read_text() == SMALL


def test_rekey_twice_changes_nothing_the_second_time(tmp_path: Path) -> None:
    make_workspace(tmp_path, 3, stale=True)
    assert runner.invoke(app, ["rekey", "--why", "docstring only"]).exit_code == 0
    after_first = files_below(tmp_path / "laws")
    result = runner.invoke(app, ["rekey", "--why", "docstring only"])
    assert result.exit_code == 0, result.output
    assert result.stdout == f"nothing to rekey (3 already at atom={NEW})\n"
    assert files_below(tmp_path / "laws") == after_first


def test_rekey_keeps_the_file_mode(tmp_path: Path) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL})
    os.chmod(laws / "a.yaml", 0o640)
    _rekey(tmp_path)
    assert stat.S_IMODE(os.stat(laws / "a.yaml").st_mode) == 0o640


def test_rekey_removes_temp_files_an_interrupted_run_left(tmp_path: Path) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL, "sub/b.yaml": SMALL})
    (laws / ".lawkit-tmp-a.yaml.0011aabb").write_text("half")
    (laws / "sub" / ".lawkit-tmp-b.yaml.2233ccdd").write_text("half")
    _rekey(tmp_path)
    assert sorted(files_below(laws)) == ["a.yaml", "sub/b.yaml"]


def test_rekey_of_named_files_and_folders_leaves_the_others_alone(tmp_path: Path) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL, "b.yaml": SMALL, "sub/c.yaml": SMALL})
    result = runner.invoke(app, ["rekey", "--why", "docstring only", "laws/a.yaml", "laws/sub"])
    assert result.exit_code == 0, result.output
    assert NEW in (laws / "a.yaml").read_text()
    assert NEW in (laws / "sub" / "c.yaml").read_text()
    assert (laws / "b.yaml").read_text() == SMALL


def test_rekey_refuses_a_path_outside_the_laws_folder_or_missing(tmp_path: Path) -> None:
    _workspace(tmp_path, {"a.yaml": SMALL})
    (tmp_path / "stray.yaml").write_text(SMALL)
    result = runner.invoke(app, ["rekey", "--why", "docstring only", "stray.yaml"])
    assert result.exit_code == 2, result.output
    assert "stray.yaml: not in the laws folder laws" in result.stderr
    result = runner.invoke(app, ["rekey", "--why", "docstring only", "laws/nope.yaml"])
    assert result.exit_code == 2, result.output
    assert "laws/nope.yaml: no such law file" in result.stderr


def test_rekey_waits_for_another_run_then_exits_2_naming_the_lock(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL})
    monkeypatch.setattr("lawkit.keying.rekey.LOCK_WAIT_S", 0.2)
    with fsio.locked(laws):
        result = runner.invoke(app, ["rekey", "--why", "docstring only"])
    assert result.exit_code == 2, result.output
    assert result.stderr == (
        "lawkit: error: laws: another lawkit run is writing these law files (it holds "
        "the folder's lock; waited 0.2 s): let it finish, then run again; nothing was "
        "written\n")
    assert (laws / "a.yaml").read_text() == SMALL


def test_rekey_json_is_one_document(tmp_path: Path) -> None:
    _workspace(tmp_path, {"a.yaml": SMALL, "b.yaml": SMALL.replace(OLD, NEW)})
    result = runner.invoke(app, ["rekey", "--why", "docstring only", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["changed"] == [{"path": "laws/a.yaml", "kind": "rekey", "from": OLD, "to": NEW}]
    assert doc["unchanged"] == ["laws/b.yaml"] and doc["skipped"] == []


def test_rekey_leaves_a_law_already_at_the_target_alone_whatever_its_history(
        tmp_path: Path) -> None:
    no_history = SMALL.replace(SMALL[SMALL.index("  provenance:"):SMALL.index("device")], "")
    laws = _workspace(tmp_path, {"a.yaml": no_history.replace(OLD, NEW)})
    result = runner.invoke(app, ["rekey", "--why", "docstring only"])
    # left alone, but not passed as all good: check reports it unexplained
    assert result.exit_code == 1, result.output
    assert "unexplained: no provenance explains the key" in result.stdout
    assert (laws / "a.yaml").read_text() == no_history.replace(OLD, NEW)


def test_rekey_in_worker_processes_writes_what_one_process_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_workspace(tmp_path / "one", 30, stale=True)
    make_workspace(tmp_path / "many", 30, stale=True)
    rekey(load_workspace(config=tmp_path / "one" / "lawkit.toml"), why="w", at=AT)
    monkeypatch.setattr("lawkit.workers._FILES_PER_WORKER", 4)
    monkeypatch.setattr("lawkit.workers.usable_cpus", lambda: 4)
    report = rekey(load_workspace(config=tmp_path / "many" / "lawkit.toml"), why="w", at=AT)
    assert len(report.changed) == 30
    assert files_below(tmp_path / "many" / "laws") == files_below(tmp_path / "one" / "laws")


def test_rekeyed_bytes_is_the_edit_alone_for_the_python_api() -> None:
    raw = SMALL.encode()
    new = rekeyed_bytes(raw, "a.yaml", key="atom", to=NEW, at="2026-11-10T09:12:44Z",
                        why="docstring only", refs=["#2655"])
    assert new == SMALL.replace(OLD, NEW, 1).replace("device:", REKEY_LINE + "device:").encode()
    assert rekeyed_bytes(new, "a.yaml", key="atom", to=NEW, at="x", why="y") == new
    with pytest.raises(RefusalError):
        rekeyed_bytes(SMALL.replace("0.0021", "0.5").encode(), "a.yaml", key="atom", to=NEW,
                      at="x", why="y")


# --adopt: laws written before lawkit

NO_HISTORY = f"""\
schema: lawkit/1
host:
   key: {{atom: "{NEW}"}}   # three-space indentation, a flow mapping
   laws:
   - name: prefill        # an indentless sequence
     target: host_s
     terms:
       "1": 0.0021
       num_seqs: 0.00012
# a comment after host
device:
  gpu: a100
"""
ADOPT_LINES = (f'   provenance:\n   - {{adopt: {{digest: "{NEW}", at: "2026-11-10T09:12:44Z", '
               f'why: "pre-lawkit laws", body: "{BODY}"}}}}\n')


def test_adopt_adds_provenance_at_the_end_of_host_and_changes_nothing_else(tmp_path: Path,
                                                                          ) -> None:
    laws = _workspace(tmp_path, {"a.yaml": NO_HISTORY})
    report = _rekey(tmp_path, why="pre-lawkit laws", adopt=True)
    assert report.changed[0].kind == "adopt"  # type: ignore[attr-defined]
    assert (laws / "a.yaml").read_text() == NO_HISTORY.replace(
        "# a comment after host", ADOPT_LINES + "# a comment after host")
    assert runner.invoke(app, ["check"]).exit_code == 0


def test_adopt_indents_the_new_item_as_the_laws_are_indented(tmp_path: Path) -> None:
    no_history = SMALL.replace(SMALL[SMALL.index("  provenance:"):SMALL.index("device")], "")
    laws = _workspace(tmp_path, {"a.yaml": no_history})
    _rekey(tmp_path, why="pre-lawkit laws", adopt=True)
    text = (laws / "a.yaml").read_text()
    entry = (f'{{adopt: {{digest: "{OLD}", at: "2026-11-10T09:12:44Z", why: "pre-lawkit laws", '
             f'body: "{BODY}"}}}}')
    assert text == no_history.replace("device:", f"  provenance:\n    - {entry}\ndevice:")


def test_adopt_after_a_block_scalar_at_the_end_of_host(tmp_path: Path) -> None:
    law = {**LAW, "filter": "num_seqs <= 256\n"}
    text = f"""\
schema: lawkit/1
host:
  key:
    atom: "{NEW}"
  laws:
    - name: prefill
      target: host_s
      terms: {{"1": 0.0021, num_seqs: 0.00012}}
      filter: |
        num_seqs <= 256

# the end
"""
    laws = _workspace(tmp_path, {"a.yaml": text})
    _rekey(tmp_path, why="pre-lawkit laws", adopt=True)
    new = (laws / "a.yaml").read_text()
    assert new == text.replace("# the end", f'  provenance:\n    - {{adopt: {{digest: "{NEW}", at: '
                               f'"2026-11-10T09:12:44Z", why: "pre-lawkit laws", body: '
                               f'"{body_of([law])}"}}}}\n# the end')


def test_adopt_skips_laws_that_already_have_provenance(tmp_path: Path) -> None:
    laws = _workspace(tmp_path, {"a.yaml": SMALL, "b.yaml": NO_HISTORY})
    result = runner.invoke(app, ["rekey", "--adopt", "--why", "pre-lawkit laws"])
    # a.yaml is stale: an adoption moves no key, so the run does not end as if all were well
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        f"adopted laws/b.yaml at atom={NEW}",
        "skipped laws/a.yaml: nothing to adopt: its provenance explains its key and its laws",
        f"laws/a.yaml:6: stale: names {OLD}, the engine is at {NEW}",
        "adopted 1 law file (1 skipped, 1 of those with a problem lawkit check reports: see its "
        "line above)",
    ]
    assert (laws / "a.yaml").read_text() == SMALL


def test_adopt_keeps_the_key_a_stale_law_names_and_rekey_then_moves_it(tmp_path: Path) -> None:
    laws = _workspace(tmp_path, {"a.yaml": NO_HISTORY.replace(NEW, OLD)})
    adopted = runner.invoke(app, ["rekey", "--adopt", "--why", "pre-lawkit laws"])
    assert adopted.exit_code == 1 and adopted.stdout.splitlines()[1] == (
        f"laws/a.yaml:3: stale: names {OLD}, the engine is at {NEW}"), adopted.output
    assert f'key: {{atom: "{OLD}"}}' in (laws / "a.yaml").read_text()
    check = runner.invoke(app, ["check"])
    assert check.exit_code == 1 and check.stdout.splitlines()[-1] == (
        'fix: lawkit rekey --why "..." if the engine change cannot move host time, else refit: '
        "lawkit fit CAPTURE... --out laws/a.yaml")
    assert runner.invoke(app, ["rekey", "--why", "docstring only"]).exit_code == 0
    assert runner.invoke(app, ["check"]).exit_code == 0


def test_adopt_with_to_is_refused(tmp_path: Path) -> None:
    _workspace(tmp_path, {"a.yaml": NO_HISTORY})
    result = runner.invoke(app, ["rekey", "--adopt", "--why", "x", "--to", NEW])
    assert result.exit_code == 2, result.output
    assert "--adopt vouches for laws as they are" in result.stderr and "--to" in result.stderr


def test_adopted_bytes_leaves_a_file_with_provenance_as_it_is() -> None:
    assert adopted_bytes(SMALL.encode(), "a.yaml", key="atom", at="x", why="y") == SMALL.encode()


def test_rekey_library_errors_are_lawkit_errors(tmp_path: Path) -> None:
    _workspace(tmp_path, {"a.yaml": SMALL})
    with pytest.raises(LawkitError, match="--from 'xyz'"):
        _rekey(tmp_path, from_="xyz")

