"""Hostile and careless input, second round: every verdict one a reviewer can rely
on, in bounded time and memory.

- rekey applies the law-file cap to what it would write, not only to what it reads.
- check's cache: a FIFO at its path cannot hang check.
- review applies the law-file cap to blobs before reading them (sizes from `git cat-file
  --batch-check`): a 2 GiB blob under laws/ costs bounded memory and well under 2 s.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner, Result

from lawkit.cli import app
from lawkit.lawfiles import lawbytes
from testing.reliability import one_line_exit_2
from testing.workspaces import OLD, law_text, make_workspace

runner = CliRunner()


@pytest.mark.usefixtures("stale_workspace")
def test_rekey_refuses_to_write_a_file_over_the_cap_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "laws" / "big.yaml"
    text = law_text(key=OLD)
    path.write_text(text + "#" * (lawbytes.MAX_BYTES - len(text) - 200) + "\n")
    assert runner.invoke(app, ["check"]).stdout.count("stale") == 3
    before = {p: p.read_bytes() for p in (tmp_path / "laws").iterdir()}
    one_line_exit_2(runner.invoke(app, ["rekey", "--why", "x" * 400]),
                    "laws/big.yaml", "over the 1 MiB", "nothing was written")
    assert {p: p.read_bytes() for p in (tmp_path / "laws").iterdir()} == before


def test_a_fifo_at_the_cache_path_cannot_hang_check(tmp_path: Path) -> None:
    import os

    from lawkit.keying.checkcache import CheckCache
    from testing.reliability import run_bounded

    ws = make_workspace(tmp_path, 3)
    path = CheckCache(ws.laws, folder=tmp_path / "cache").path
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    outcome = run_bounded(["check"], cwd=tmp_path, timeout=20,
                          env={"LAWKIT_CACHE_DIR": str(tmp_path / "cache")})
    assert outcome.code == 0, outcome.stderr
    assert outcome.stdout == "3 law files name atom=8927e824\n"
    assert outcome.seconds < 10


HUGE_BLOB = 300 << 20  # streamed into git (bigFileThreshold) from a sparse file: no 300 MB in RAM


@pytest.mark.usefixtures("workspace")
def test_review_refuses_a_huge_law_blob_by_its_size_without_reading_it(tmp_path: Path) -> None:
    import subprocess

    from testing.reliability import run_bounded


    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "core.bigFileThreshold=1m", *args], cwd=tmp_path,
                              check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("add", "-A")
    git("commit", "-qm", "base")
    sparse = tmp_path / "sparse"
    with sparse.open("wb") as f:
        f.truncate(HUGE_BLOB)
    oid = git("hash-object", "-w", str(sparse))
    sparse.unlink()
    git("update-index", "--add", "--cacheinfo", f"100644,{oid},laws/huge.yaml")
    git("commit", "-qm", "a huge law file")
    outcome = run_bounded(["review", "--base", "HEAD~1"], cwd=tmp_path, timeout=30,
                          memory_mb=1024)
    assert outcome.code == 1, outcome.stderr
    assert "laws/huge.yaml" in outcome.stdout
    assert "larger than 1 MiB" in outcome.stdout, outcome.stdout
    assert outcome.max_rss_mb < 150, outcome.max_rss_mb  # 300 MB never read: no timing needed


# -- text lawkit writes reads back -----------------------------------------

UNREADABLE = "\x7f\x80\x85\x9f\u2028\u2029\ufeff\uffff\U0010ffff\x00\x1b\t\r\n\"\\ a"


@settings(max_examples=300, deadline=None)
@given(st.text(), st.text(), st.text(min_size=1), st.text())
def test_every_text_lawkit_writes_reads_back_the_same(label: str, key: str, name: str,
                                                      value: str) -> None:
    import yaml

    from lawkit.lawfiles import lawfile, lawwrite

    law = {"name": name, "target": "host_s", "where": {key or "k": value},
           "terms": {"1": 1.0}}
    rekey = {"from": "59e9ff5a", "to": "8927e824", "at": "2026-11-10T09:12:44Z", "why": value,
             "refs": [value]}
    text = lawwrite.law_file_text(labels={key or "k": label}, key_name="atom", key="8927e824",
                                  laws=[law], provenance=[("rekey", rekey)])
    read = lawfile.parse(text.encode("utf-8"), "x.yaml")
    assert read.labels == {key or "k": label}
    assert read.host.laws[0].name == name
    assert read.host.laws[0].where == {key or "k": value}
    assert read.host.provenance[0].model_dump()["rekey"]["why"] == value
    for loader in (yaml.SafeLoader, getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        data = yaml.load(text, Loader=loader)
        assert data["labels"] == {key or "k": label}
        assert data["host"]["provenance"][0]["rekey"]["why"] == value


def test_fit_writes_control_characters_of_a_label_name_and_by_value_that_check_reads(
        tmp_path: Path) -> None:
    import yaml

    make_workspace(tmp_path, 0)
    odd = "a\x7fb\x85c\ufffe\x9b"
    rows = "".join(f"{n},{0.5 + 0.1 * n},{g}\n" for n in range(1, 9) for g in (odd, "plain"))
    (tmp_path / "run.csv").write_text("n,host_s,group\n" + rows, encoding="utf-8")
    out = tmp_path / "laws" / "odd.yaml"
    result = runner.invoke(app, ["fit", "run.csv", "--formula", "host_s ~ 1 + n",
                                 "--label", f"cell={odd}", "--captured-on", "current",
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(app, ["fit", "run.csv", "--formula", "host_s ~ 1 + n", "--by",
                                 "group", "--captured-on", "current", "--out",
                                 str(tmp_path / "laws" / "by.yaml")])
    assert result.exit_code == 0, result.output
    data = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert data["labels"] == {"cell": odd}
    by = yaml.safe_load((tmp_path / "laws" / "by.yaml").read_text(encoding="utf-8"))
    assert [law["where"] for law in by["host"]["laws"]] == [{"group": odd}, {"group": "plain"}]
    assert runner.invoke(app, ["check"]).exit_code == 0, runner.invoke(app, ["check"]).output


def test_the_writer_escapes_every_character_yaml_cannot_read_raw() -> None:
    from lawkit.lawfiles.lawwrite import quote

    text = quote(UNREADABLE)
    assert text == ('"\\x7f\\x80\\x85\\x9f\\u2028\\u2029\\ufeff\\uffff\U0010ffff\\0\\e\\t\\r\\n'
                    '\\"\\\\ a"')


def test_a_lone_surrogate_is_refused_in_one_line_not_written() -> None:
    from lawkit.errors import LawkitError
    from lawkit.lawfiles.lawwrite import quote

    with pytest.raises(LawkitError, match="lone surrogate"):
        quote("bad \udcff byte")



# -- a law's filter is validated when the file is read ---------------------


def _bad_filter_workspace(tmp_path: Path) -> Path:
    from testing.workspaces import laws

    make_workspace(tmp_path, 1)
    law_dicts = laws(2)
    law_dicts[1]["filter"] = "num_seqs <= 256"
    path = tmp_path / "laws" / "bad.yaml"
    text = law_text(key=OLD, law_dicts=law_dicts)
    path.write_text(text.replace('"num_seqs <= 256"', '"num_seqs <=="'))
    return path


def test_check_reports_a_law_whose_filter_does_not_parse_as_invalid_at_its_line(
        tmp_path: Path) -> None:
    path = _bad_filter_workspace(tmp_path)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1) if "<==" in text)
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 1, result.output
    assert f"laws/bad.yaml:{line}: invalid: host.laws[1].filter: where 'num_seqs <=='" \
        in result.stdout, result.stdout


def test_show_and_rekey_refuse_a_law_whose_filter_does_not_parse(tmp_path: Path) -> None:
    path = _bad_filter_workspace(tmp_path)
    before = path.read_bytes()
    one_line_exit_2(runner.invoke(app, ["show", "laws/bad.yaml"]),
                    "laws/bad.yaml:", "host.laws[1].filter")
    one_line_exit_2(runner.invoke(app, ["rekey", "--why", "x"]),
                    "laws/bad.yaml:", "host.laws[1].filter")
    assert path.read_bytes() == before



# -- one validation for every digest lawkit writes -------------------------


def _captures(tmp_path: Path, atom: str | None = None) -> Path:
    rows = "".join(f"{n},{0.5 + 0.1 * n}" + (f",{atom}" if atom is not None else "") + "\n"
                   for n in range(1, 9))
    path = tmp_path / "run.csv"
    path.write_text("n,host_s" + (",atom" if atom is not None else "") + "\n" + rows)
    return path


def _fit(*args: str) -> Result:
    return runner.invoke(app, ["fit", "run.csv", "--formula", "host_s ~ 1 + n", "--out",
                               "laws/new.yaml", *args])


@pytest.mark.parametrize("value", ["DEADBEEF", "dead", "8927e8245", "8927e82g"])
def test_fit_refuses_a_captured_on_digest_rekey_to_would_refuse(tmp_path: Path,
                                                                value: str) -> None:
    make_workspace(tmp_path, 1)
    _captures(tmp_path)
    one_line_exit_2(_fit("--captured-on", value), f"--captured-on {value!r}: expected a digest "
                    "of 8 lowercase hex characters")
    one_line_exit_2(runner.invoke(app, ["rekey", "--why", "x", "--to", value]),
                    f"--to {value!r}: expected a digest of 8 lowercase hex characters")
    assert not (tmp_path / "laws" / "new.yaml").exists()


@pytest.mark.parametrize("value", ["DEADBEEF", "dead"])
def test_fit_refuses_an_atom_column_value_that_is_not_a_digest_naming_file_column_row(
        tmp_path: Path, value: str) -> None:
    make_workspace(tmp_path, 1)
    _captures(tmp_path, value)
    one_line_exit_2(_fit(), f"run.csv: column atom, row 1 (line 2): {value!r}: expected a "
                    "digest of 8 lowercase hex characters")
    assert not (tmp_path / "laws" / "new.yaml").exists()


def test_fit_refuses_parquet_metadata_that_is_not_a_digest_naming_the_file(
        tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    make_workspace(tmp_path, 1)
    table = pa.table({"n": [float(n) for n in range(1, 9)],
                      "host_s": [0.5 + 0.1 * n for n in range(1, 9)]})
    pq.write_table(table.replace_schema_metadata({"lawkit.atom": "DEADBEEF"}),
                   tmp_path / "run.parquet")
    result = runner.invoke(app, ["fit", "run.parquet", "--formula", "host_s ~ 1 + n",
                                 "--out", "laws/new.yaml"])
    one_line_exit_2(result, "run.parquet: metadata lawkit.atom 'DEADBEEF': expected a digest of "
                    "8 lowercase hex characters")


# -- fraction flags: 0.1 or 10%, never 10 for 10% --------------------------


def _score_workspace(tmp_path: Path) -> None:
    from lawkit.lawfiles.lawwrite import law_file_text

    law = {"name": "line", "target": "host_s", "terms": {"1": 0.5, "n": 0.1}}
    (tmp_path / "laws.yaml").write_text(law_file_text(
        labels=None, key_name="atom", key="1234abcd", laws=[law],
        provenance=[("adopt", {"digest": "1234abcd", "at": "2026-01-01T00:00:00Z", "why": "t",
                               "body": "x"})]))
    rows = "".join(f"{n},{(0.5 + 0.1 * n) * 1.05}\n" for n in range(1, 9))
    (tmp_path / "caps.csv").write_text("n,host_s\n" + rows)


@pytest.mark.parametrize("flag", ["--max-mape", "--holdout"])
def test_a_fraction_flag_above_1_is_refused_naming_the_fraction_form(tmp_path: Path,
                                                                     flag: str) -> None:
    make_workspace(tmp_path, 1)
    _score_workspace(tmp_path)
    args = ["score", "laws.yaml", "caps.csv"] if flag == "--max-mape" else \
        ["fit", "caps.csv", "--formula", "host_s ~ 1 + n", "--captured-on", "current",
         "--out", "laws/new.yaml"]
    one_line_exit_2(runner.invoke(app, [*args, flag, "10"]),
                    f"{flag} 10: a fraction, where 0.1 is 10%: write 0.1 or 10%")
    for bad in ("-0.1", "nan", "ten", "inf%"):
        one_line_exit_2(runner.invoke(app, [*args, flag, bad]), f"{flag} {bad!r}: expected a "
                        "fraction (0.1) or a percentage (10%)")


def test_a_percentage_is_a_fraction_flag_value(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    _score_workspace(tmp_path)
    fails = runner.invoke(app, ["score", "laws.yaml", "caps.csv", "--max-mape", "4%"])
    assert fails.exit_code == 1, fails.output
    passes = runner.invoke(app, ["score", "laws.yaml", "caps.csv", "--max-mape", "10%"])
    assert passes.exit_code == 0, passes.output
    assert passes.stdout == runner.invoke(app, ["score", "laws.yaml", "caps.csv", "--max-mape",
                                                "0.1"]).stdout
    held = runner.invoke(app, ["fit", "caps.csv", "--formula", "host_s ~ 1 + n", "--captured-on",
                               "current", "--out", "laws/new.yaml", "--holdout", "25%"])
    assert held.exit_code == 0, held.output


# -- outside any workspace, errors say no config was found and how to write one -------------


@pytest.mark.parametrize("args", [["check"], ["digest"], ["rekey", "--why", "x"],
                                  ["digest", "--manifest"]])
def test_outside_a_workspace_an_error_says_no_config_was_found_where_and_how_to_write_one(
        tmp_path: Path, args: list[str]) -> None:
    line = one_line_exit_2(runner.invoke(app, args),
                           "no lawkit.toml, nor a pyproject.toml with [tool.lawkit], was found",
                           f"looked in {tmp_path}, {tmp_path.parent}, ",
                           f"run lawkit init --package YOURENGINE in {tmp_path} to write one")
    assert "[tool.lawkit.digest]" not in line and "[tool.lawkit] laws" not in line, line


def test_in_a_workspace_an_error_still_names_the_config_keys(tmp_path: Path) -> None:
    (tmp_path / "lawkit.toml").write_text('laws = "laws"\n')
    line = one_line_exit_2(runner.invoke(app, ["digest"]), "root and packages", "lawkit.toml")
    assert "no lawkit.toml" not in line


# -- rekey says what check says of a law it has nothing to do for ----------


@pytest.mark.usefixtures("workspace")
def test_rekey_reports_a_body_edited_law_at_the_target_and_exits_as_check_does(
        tmp_path: Path) -> None:
    path = tmp_path / "laws" / "cell00001.yaml"
    path.write_text(path.read_text().replace('name: "schedule"', 'name: "sched"', 1))
    check = runner.invoke(app, ["check"])
    assert check.exit_code == 1 and "body-edited" in check.stdout, check.output
    before = path.read_bytes()
    for args in (["rekey", "--why", "x"], ["rekey", "--why", "x", "--dry-run"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, result.output
        out = result.stdout + result.stderr
        assert "laws/cell00001.yaml:" in out and ": body-edited: the laws differ" in out, out
        assert "nothing to rekey (2 already at atom=8927e824, 1 of those with a problem lawkit " \
            "check reports: see its line above)" in out, out
    assert path.read_bytes() == before
    doc = runner.invoke(app, ["rekey", "--why", "x", "--json"])
    assert doc.exit_code == 1
    import json

    assert [p["kind"] for p in json.loads(doc.stdout)["problems"]] == ["body-edited"]


@pytest.mark.usefixtures("workspace")
def test_checks_fix_line_names_the_commands_or_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "laws" / "cell00001.yaml"
    path.write_text(path.read_text().replace('name: "schedule"', 'name: "sched"', 1))
    lines = runner.invoke(app, ["check"]).stdout.splitlines()
    assert lines[-1] == ("fix: lawkit fit CAPTURE... --out laws/cell00001.yaml, or to keep the "
                         'edit: lawkit rekey --adopt --why "..." laws/cell00001.yaml'), lines
    (tmp_path / "laws" / "cell00000.yaml").write_text("schema: lawkit/1\nhost: [\n")
    path.write_bytes((tmp_path / "laws" / "cell00000.yaml").read_bytes())
    lines = runner.invoke(app, ["check"]).stdout.splitlines()
    assert len(lines) == 2 and all(": invalid: " in line for line in lines), lines


# -- a newcomer's words ----------------------------------------------------


def test_score_counts_one_invalid_row_dropped_in_the_singular(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1)
    _score_workspace(tmp_path)
    caps = tmp_path / "caps.csv"
    caps.write_text(caps.read_text() + "9,abc\n")  # an empty cell is a region not entered
    result = runner.invoke(app, ["score", "laws.yaml", "caps.csv", "--drop-invalid"])
    assert result.exit_code == 0, result.output
    assert "note: line: 1 invalid row dropped" in result.output, result.output
