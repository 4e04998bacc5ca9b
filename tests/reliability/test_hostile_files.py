"""Hostile law and capture files get one clear line, exit 2, in bounded time and memory.

Each attack runs the real `lawkit` in a subprocess under a wall-clock timeout and an address
space limit (RLIMIT_AS), and records the time and peak memory it took (`record_property`: run
pytest with `--junitxml=FILE -o junit_family=xunit1` to collect them). A traceback, a crash, a
hang or a blown limit fails.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.errors import CaptureError, LawFileError
from lawkit.fitting.captures.chunks import ColumnSpec
from lawkit.fitting.captures.files import find_captures
from lawkit.fitting.captures.read import MAX_HEADER_BYTES, MAX_JSON_LINE_BYTES, read_captures
from lawkit.lawfiles import lawbytes, lawfile, yamlsafe
from testing.reliability import Outcome, assert_one_line, run_bounded
from testing.workspaces import OLD, law_text, laws, make_workspace

runner = CliRunner()
LAW_MEMORY_MB = 512  # show/check import no numpy: a law file gets far less than this
CAPTURE_MEMORY_MB = 4096  # fit imports numpy, scipy and pyarrow, whose threads reserve space
GOOD = law_text(key=OLD)


def _measured(record_property: pytest.RecordProperty, outcome: Outcome) -> Outcome:
    record_property("seconds", round(outcome.seconds, 3))
    record_property("max_rss_mb", round(outcome.max_rss_mb, 1))
    return outcome


def _show(tmp_path: Path, name: str, record_property: pytest.RecordProperty, *,
          timeout: float = 20.0) -> str:
    """`lawkit show NAME`: exit 2 and the one error line."""
    outcome = _measured(record_property, run_bounded(["show", name], cwd=tmp_path,
                                                     timeout=timeout, memory_mb=LAW_MEMORY_MB))
    assert outcome.code == 2, (outcome.code, outcome.stdout, outcome.stderr)
    return outcome.error_line()


# -- law files ------------------------------------------------------------------------------


def _billion_laughs() -> str:
    lines = ['lol0: &lol0 "lol"']
    for i in range(1, 10):
        lines.append(f"lol{i}: &lol{i} [" + ", ".join([f"*lol{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("where", ["top", "inside a law"])
def test_an_alias_bomb_is_refused_at_its_first_alias_without_expanding_it(
        tmp_path: Path, record_property: pytest.RecordProperty, where: str) -> None:
    bomb = _billion_laughs()
    if where == "top":
        text = GOOD + bomb
    else:
        indented = "".join(f"      {line}\n" for line in bomb.splitlines())
        text = GOOD.replace('      target: "schedule_s"\n',
                            '      target: "schedule_s"\n      fit:\n' +
                            indented.replace("      lol", "        lol"), 1)
    (tmp_path / "bomb.yaml").write_text(text)
    line = _show(tmp_path, "bomb.yaml", record_property, timeout=10)
    assert "aliases (*name) are not allowed in law files" in line


@pytest.mark.parametrize("tag", [
    '!!python/object/apply:os.system ["touch PWNED"]',
    '!!python/object/new:os.system ["touch PWNED"]',
    "!!python/name:os.system",
    '!!python/module:os',
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!custom x",
])
def test_a_tag_that_would_build_an_object_is_refused_and_runs_nothing(
        tmp_path: Path, record_property: pytest.RecordProperty, tag: str) -> None:
    (tmp_path / "tag.yaml").write_text(GOOD.replace("schema: lawkit/1", f"schema: {tag}"))
    line = _show(tmp_path, "tag.yaml", record_property)
    assert "is not allowed in law files" in line or "not valid YAML" in line, line
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize(("name", "text"), [
    ("flow lists", "[" * 100_000),
    ("flow mappings", "{a: " * 100_000),
    ("block lists", "".join(" " * i + "-\n" for i in range(1200))),
    ("65 levels", "schema: lawkit/1\nhost: " + "[" * 65 + "]" * 65 + "\n"),
])
def test_deep_nesting_is_refused_without_a_recursion_error(
        tmp_path: Path, record_property: pytest.RecordProperty, name: str, text: str) -> None:
    (tmp_path / "deep.yaml").write_text(text)
    line = _show(tmp_path, "deep.yaml", record_property)
    assert "nesting" in line or "not valid YAML" in line, line


def test_a_1_gib_law_file_is_refused_before_it_is_read(
        tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:  # sparse: a gigabyte on the file's side, nothing on the disk's
        f.write(GOOD.encode())
        f.truncate(1 << 30)
    line = _show(tmp_path, "huge.yaml", record_property, timeout=10)
    assert f"huge.yaml: larger than {lawbytes.MAX_BYTES >> 20} MiB" in line
    outcome = run_bounded(["show", "huge.yaml"], cwd=tmp_path, memory_mb=LAW_MEMORY_MB)
    assert outcome.max_rss_mb < 200, outcome.max_rss_mb


def test_a_file_just_over_the_cap_is_refused_and_one_at_the_cap_is_read(tmp_path: Path) -> None:
    at_cap = GOOD.encode() + b"#" * (lawbytes.MAX_BYTES - len(GOOD) - 1) + b"\n"
    assert len(at_cap) == lawbytes.MAX_BYTES
    (tmp_path / "at.yaml").write_bytes(at_cap)
    (tmp_path / "over.yaml").write_bytes(at_cap + b"\n")
    assert lawfile.load(tmp_path / "at.yaml").host.key["atom"] == OLD
    with pytest.raises(LawFileError, match="larger than 1 MiB"):
        lawfile.load(tmp_path / "over.yaml")
    with pytest.raises(LawFileError, match="larger than 1 MiB"):
        lawfile.parse(at_cap + b"\n", "over.yaml")  # bytes from git objects: the same cap


def test_a_file_of_too_many_values_is_refused_before_they_are_built(
        tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    # two bytes a node: the densest YAML, under the byte cap
    (tmp_path / "dense.yaml").write_text(GOOD + "dense: [" + "0," * 500_000 + "0]\n")
    line = _show(tmp_path, "dense.yaml", record_property, timeout=10)
    assert f"more than {yamlsafe.MAX_NODES:,} YAML values" in line


def test_the_largest_file_under_both_caps_still_reads_in_bounded_time(
        tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    nodes = yamlsafe.MAX_NODES - 1000  # under the node cap, the most work a file can ask
    (tmp_path / "dense.yaml").write_text(GOOD + "dense: [" + "0," * nodes + "0]\n")
    outcome = _measured(record_property, run_bounded(["show", "dense.yaml"], cwd=tmp_path,
                                                     timeout=30, memory_mb=LAW_MEMORY_MB))
    assert outcome.code == 0, outcome.stderr
    assert outcome.max_rss_mb < 300, outcome.max_rss_mb


def test_a_law_file_of_fifteen_hundred_laws_reads_back(tmp_path: Path) -> None:
    """The caps leave room for the largest files `lawkit fit --by` writes."""
    text = law_text(key=OLD, law_dicts=laws(1500))
    assert len(text) < lawbytes.MAX_BYTES
    assert len(lawfile.parse(text.encode(), "big.yaml").host.laws) == 1500


@pytest.mark.parametrize("kind", ["symlink to a law file", "symlink to /etc/passwd",
                                  "dangling symlink", "folder", "fifo", "device"])
def test_a_law_file_that_is_not_a_regular_file_is_refused_unread(
        tmp_path: Path, record_property: pytest.RecordProperty, kind: str) -> None:
    (tmp_path / "real.yaml").write_text(GOOD)
    path = tmp_path / "x.yaml"
    if kind == "symlink to a law file":
        path.symlink_to("real.yaml")
    elif kind == "symlink to /etc/passwd":
        path.symlink_to("/etc/passwd")
    elif kind == "dangling symlink":
        path.symlink_to("nowhere.yaml")
    elif kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)  # nobody writes to it: reading it would hang
    name = "/dev/zero" if kind == "device" else "x.yaml"
    line = _show(tmp_path, name, record_property, timeout=10)
    what = {"folder": "a folder", "fifo": "a FIFO", "device": "a special file"}.get(kind,
                                                                                   "a symlink")
    assert line.endswith(f": not a regular file ({what}): law files are plain files"), line


def test_check_and_rekey_refuse_a_symlinked_law_file_and_write_nothing(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1, stale=True)
    laws = tmp_path / "laws"
    outside = tmp_path / "outside.yaml"
    outside.write_text(law_text(key=OLD))
    (laws / "linked.yaml").symlink_to(outside)
    before = {p.name: p.read_bytes() for p in laws.glob("*.yaml")}

    checked = runner.invoke(app, ["check"])
    assert checked.exit_code == 1, checked.output
    assert "laws/linked.yaml: invalid: not a regular file (a symlink)" in checked.output

    rekeyed = runner.invoke(app, ["rekey", "--why", "hostile"])
    assert rekeyed.exit_code == 2, rekeyed.output
    assert_one_line(rekeyed.stderr.removeprefix("lawkit: error: ").rstrip("\n"))
    assert "linked.yaml: not a regular file (a symlink)" in rekeyed.stderr
    assert {p.name: p.read_bytes() for p in laws.glob("*.yaml")} == before
    assert outside.read_text() == law_text(key=OLD)


@pytest.mark.parametrize(("raw", "expected"), [
    (GOOD.replace("deepseek", "deep").encode().replace(b"schedule", b"sch\xffedule", 1),
     "not UTF-8 (byte "),
    (GOOD.encode().replace(b"schema", b"\xef\xbb\xbfschema", 1)[:0] + b"\xff\xfe" +
     GOOD.encode("utf-16-le"), "not UTF-8 (byte 0)"),
    (GOOD.replace("  laws:\n", "  key:\n    atom: \"00000000\"\n  laws:\n", 1).encode(),
     "duplicate key 'key': keep one"),
    (GOOD.replace('name: "prepare"', 'name: "schedule"').encode(),
     "two laws are named 'schedule'"),
    (b"\x00" * 1000, "not valid YAML"),
    (GOOD.replace("schema: lawkit/1", 'schema: "lawkit/1\\n\\e[31mred\\e[0m\\r"').encode(),
     "schema: expected 'lawkit/1', got 'lawkit/1\\n\\x1b[31mred"),
])
def test_malformed_bytes_get_one_line_naming_the_file_and_the_line(
        tmp_path: Path, record_property: pytest.RecordProperty, raw: bytes,
        expected: str) -> None:
    (tmp_path / "bad.yaml").write_bytes(raw)
    line = _show(tmp_path, "bad.yaml", record_property)
    assert line.startswith("lawkit: error: bad.yaml:") or "bad.yaml: " in line, line
    assert expected in line, line


def test_a_bom_is_accepted_and_kept_by_rekey(tmp_path: Path) -> None:
    make_workspace(tmp_path, 1, stale=True)
    path = tmp_path / "laws" / "cell00000.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    assert runner.invoke(app, ["show", str(path)]).exit_code == 0
    result = runner.invoke(app, ["rekey", "--why", "bom"])
    assert result.exit_code == 0, result.output
    assert path.read_bytes().startswith(b"\xef\xbb\xbf# Host laws")
    assert runner.invoke(app, ["check"]).exit_code == 0


def test_a_file_name_with_a_line_break_and_undecodable_bytes_is_shown_on_one_line(
        tmp_path: Path) -> None:
    """Regression: `check` printed the raw name (two lines) and, where stdout is strict UTF-8
    (any locale but C), died of UnicodeEncodeError on the undecodable byte."""
    make_workspace(tmp_path, 1, stale=True)
    os.rename(tmp_path / "laws" / "cell00000.yaml", os.fsencode(tmp_path / "laws") +
              b"/odd\xff\nname.yaml")
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:strict"}
    import subprocess

    for args, code in ((["check"], 1), (["rekey", "--why", "odd"], 0), (["check"], 0)):
        done = subprocess.run([sys.executable, "-m", "lawkit", *args], cwd=tmp_path, env=env,
                              capture_output=True, check=False)
        assert done.returncode == code, done.stderr.decode()
        out = done.stdout.decode()
        assert "Traceback" not in done.stderr.decode()
        if args == ["check"] and code == 1:
            assert out.splitlines()[0].startswith("laws/odd\\udcff\\nname.yaml:"), out


# -- capture files --------------------------------------------------------------------------


SPEC = ColumnSpec(numbers=("host_s", "bs"), labels=("model",), digest="atom",
                  nonnegative=("host_s",))
ROWS = [{"model": "a", "bs": 1.0, "host_s": 0.5}, {"model": "b", "bs": 2.0, "host_s": 0.25}]
CSV = b"model,bs,host_s\na,1,0.5\nb,2,0.25\n"
JSONL = b"".join(json.dumps(row).encode() + b"\n" for row in ROWS)


def _parquet(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return bytes(sink.getvalue().to_pybytes())


PARQUET = _parquet(pa.Table.from_pylist(ROWS))


def _fit(tmp_path: Path, name: str, record_property: pytest.RecordProperty, *,
         timeout: float = 30.0) -> Outcome:
    outcome = run_bounded(["fit", name, "--formula", "host_s ~ 1 + bs", "--captured-on",
                           OLD, "--out", "laws/out.yaml"], cwd=tmp_path, timeout=timeout,
                          memory_mb=CAPTURE_MEMORY_MB)
    return _measured(record_property, outcome)


def _fit_error(tmp_path: Path, name: str, data: bytes,
               record_property: pytest.RecordProperty, *, timeout: float = 30.0) -> str:
    """`lawkit fit` in a subprocess: exit 2, one line, nothing written."""
    (tmp_path / name).write_bytes(data)
    outcome = _fit(tmp_path, name, record_property, timeout=timeout)
    assert outcome.code == 2, (outcome.stdout, outcome.stderr)
    assert not (tmp_path / "laws" / "out.yaml").exists()
    return outcome.error_line()


def _fit_error_here(tmp_path: Path, name: str, data: bytes,
                    record_property: pytest.RecordProperty) -> str:
    """`lawkit fit` in this process (no start-up cost) for files too small to hang or swell:
    exit 2, one line, nothing written, and the time it took."""
    (tmp_path / name).write_bytes(data)
    start = time.perf_counter()
    result = runner.invoke(app, ["fit", name, "--formula", "host_s ~ 1 + bs", "--captured-on",
                                 OLD, "--out", "laws/out.yaml"])
    seconds = time.perf_counter() - start
    record_property("seconds", round(seconds, 3))
    assert result.exit_code == 2, (result.output, result.exception)
    assert not (tmp_path / "laws" / "out.yaml").exists()
    line = result.stderr.rstrip("\n")
    assert line.startswith("lawkit: error: ")
    assert_one_line(line.removeprefix("lawkit: error: "))
    assert seconds < 5, seconds
    return line


def _read_error(path: Path) -> str:
    with pytest.raises(CaptureError) as info:
        for chunk in read_captures(find_captures([path]), SPEC):
            bad = chunk.first_invalid(SPEC.names())
            if bad is not None:
                raise chunk.error(*bad)
    assert_one_line(str(info.value))
    return str(info.value)


# mtime=0: the bytes are the tests' ids, which every pytest-xdist worker must collect alike
@pytest.mark.parametrize(("name", "data", "expected"), [
    ("t.csv.gz", gzip.compress(CSV * 500, mtime=0)[:-30], "truncated gzip file"),
    ("t.jsonl.gz", gzip.compress(JSONL * 500, mtime=0)[:-30], "truncated gzip file"),
    ("t.parquet.gz", gzip.compress(PARQUET, mtime=0)[:-30], "truncated gzip file"),
    ("t.csv.gz", CSV, "not a valid gzip file"),
    ("t.parquet", PARQUET[:-40], "cannot read as Parquet"),
    ("t.parquet", b"PAR1" + b"\x00" * 100 + b"PAR1", "cannot read as Parquet"),
    ("t.csv", b"", "empty file: expected a header line"),
    ("t.csv.gz", gzip.compress(b"", mtime=0), "empty file: expected a header line"),
    ("t.jsonl", b"", "empty file: expected one JSON object per line"),
    ("t.jsonl", b"\n \r\n\t\n", "empty file: expected one JSON object per line"),
    ("t.parquet", b"", "cannot read as Parquet"),
    ("t.jsonl", b"null\n", "row 1 (line 1): expected a JSON object"),
    ("t.jsonl", JSONL + b"null\n", "row 3 (line 3): expected a JSON object"),
    ("t.jsonl", JSONL + b"\r  null", "row 3 (line 4): expected a JSON object"),
    ("t.jsonl", b"[1, 2]\n", "row 1 (line 1): expected a JSON object"),
    ("t.csv", b"\xff\xfe" + "model,bs,host_s\n".encode("utf-16-le"), "not UTF-8 text"),
    ("t.csv", b'model,bs,host_s\n"a,1,0.5\n', "cannot read as CSV"),
])
def test_a_broken_capture_file_gets_one_line_and_nothing_is_written(
        tmp_path: Path, record_property: pytest.RecordProperty, name: str, data: bytes,
        expected: str) -> None:
    line = _fit_error_here(tmp_path, name, data, record_property)
    assert f"{name}: " in line and expected in line, line


def test_a_json_lines_null_line_no_longer_crashes_pyarrow(tmp_path: Path) -> None:
    """Regression: pyarrow 26's JSON reader dies of SIGSEGV on a line that is `null` at the
    start of a block (apache/arrow#47409); the reader now sends such files to its line-by-line
    parser, which names the line. In-process: a crash here takes pytest down with it."""
    for data in (b"null\n", b" null", b'{"model":"a"}\n' * 3 + b"null\n",
                 b'{"bs":1}\rnull\n', b"\xef\xbb\xbfnull\n"):
        path = tmp_path / "n.jsonl"
        path.write_bytes(data)
        assert "expected a JSON object" in _read_error(path)


def test_a_json_lines_bom_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "b.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + JSONL)
    chunks = list(read_captures(find_captures([path]), SPEC))
    assert chunks[0].columns["host_s"].tolist() == [0.5, 0.25]


@pytest.mark.parametrize("target", [["x", "y"], [b"\x00", b"\x01"], [[1.0], [2.0]],
                                    [{"a": 1}, {"a": 2}], [True, False]])
def test_a_parquet_file_whose_target_has_the_wrong_type_names_the_column_and_row(
        tmp_path: Path, record_property: pytest.RecordProperty, target: list[object]) -> None:
    data = _parquet(pa.table({"model": ["a", "b"], "bs": [1.0, 2.0], "host_s": target}))
    line = _fit_error_here(tmp_path, "w.parquet", data, record_property)
    assert "w.parquet: column host_s, row 1: " in line and "not a number" in line, line


def test_a_parquet_text_target_of_numbers_reads_as_numbers_like_csv(tmp_path: Path) -> None:
    """By design (captures.py): text that is a number is read as one, in every format."""
    path = tmp_path / "s.parquet"
    path.write_bytes(_parquet(pa.table({"model": ["a"], "bs": [1.0], "host_s": ["0.5"]})))
    assert next(read_captures(find_captures([path]), SPEC)).columns["host_s"].tolist() == [0.5]


def test_csv_quoted_line_breaks_are_values_and_rows_are_counted_as_records(
        tmp_path: Path) -> None:
    path = tmp_path / "q.csv"
    path.write_bytes(b'model,bs,host_s\n"multi\nline",1,0.5\n"x\r\ny",2,\n')
    message = _read_error(path)
    assert message.endswith("q.csv: column host_s, row 2 (line 4): empty value"), message
    path.write_bytes(b'"mo\ndel",bs,host_s\na,1,0.5\n')
    assert "no column 'model' (the file has: mo\\ndel, bs, host_s)" in _read_error(path)


def test_a_header_of_ten_million_columns_is_refused_in_bounded_time_and_memory(
        tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    """Regression: 10M columns cost 7 s and 1.1 GB, then a misleading message."""
    with (tmp_path / "wide.csv").open("wb") as f:
        f.write(b"c," * 10_000_000 + b"model,bs,host_s\n")
        f.write(b"1," * 10_000_000 + b"a,1,0.5\n")
    outcome = _fit(tmp_path, "wide.csv", record_property, timeout=20)
    assert outcome.code == 2, outcome.stderr
    assert f"the header line is longer than {MAX_HEADER_BYTES >> 20} MiB" in \
        outcome.error_line()
    assert outcome.max_rss_mb < 400, outcome.max_rss_mb


def test_a_header_of_a_hundred_thousand_columns_is_read(tmp_path: Path) -> None:
    path = tmp_path / "wide.csv"
    path.write_bytes(b",".join(b"c%d" % i for i in range(100_000)) + b",model,bs,host_s\n" +
                     b"1," * 100_000 + b"a,1,0.5\n")
    assert next(read_captures(find_captures([path]), SPEC)).size == 1


def test_a_json_lines_record_of_a_million_keys_is_refused_in_bounded_time_and_memory(
        tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    """Regression: pyarrow inferred a million columns: 42 s and 2.9 GB."""
    record = b"{" + b",".join(b'"c%d":1' % i for i in range(1_000_000)) + \
        b',"model":"a","bs":1,"host_s":0.5}\n'
    (tmp_path / "wide.jsonl").write_bytes(record)
    outcome = _fit(tmp_path, "wide.jsonl", record_property, timeout=20)
    assert outcome.code == 2, outcome.stderr
    assert f"a line longer than {MAX_JSON_LINE_BYTES >> 10} KiB" in outcome.error_line()
    assert outcome.max_rss_mb < 400, outcome.max_rss_mb


def test_a_header_only_file_has_no_rows_and_fit_says_so(
        tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    line = _fit_error_here(tmp_path, "h.csv", b"model,bs,host_s\n", record_property)
    assert "no rows" in line or "no row" in line or "0 rows" in line, line


def test_a_gzip_bomb_header_is_read_no_further_than_the_header_cap(
        tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    member = gzip.compress(b"a" * (16 << 20))
    bomb = member * 64  # gzip members one after another: 1 GiB of 'a' on one line, 1 MB stored
    line = _fit_error(tmp_path, "bomb.csv.gz", bomb, record_property, timeout=20)
    assert "bomb.csv.gz: " in line and ("header" in line or "field larger" in line), line


# -- inputs that crashed or passed in silence --------------------------------------


def _score(tmp_path: Path, capture: str) -> Outcome:
    (tmp_path / "law.yaml").write_text(law_text(key=OLD, law_dicts=[{
        "name": "host", "target": "host_s", "terms": {"1": 0.5}}]))
    return run_bounded(["score", "law.yaml", capture], cwd=tmp_path, timeout=30,
                       memory_mb=CAPTURE_MEMORY_MB)


@pytest.mark.parametrize(("opening", "depth"), [(b"[", 20_000), (b"[", 100_000),
                                                (b'{"a":', 20_000)])
def test_a_json_lines_row_nesting_deep_is_one_line_naming_file_and_line_for_fit_and_score(
        tmp_path: Path, record_property: pytest.RecordProperty, depth: int,
        opening: bytes) -> None:
    """Regression: 20,000 levels killed fit and score with SIGSEGV (exit 139, pyarrow's
    reader or the C stack), 100,000 an uncaught RecursionError (exit 3)."""
    closing = b"]" if opening == b"[" else b"}"
    line = _fit_error(tmp_path, "deep.jsonl", opening * depth + b"1" + closing * depth +
                      b"\n" + JSONL, record_property)
    expected = f"deep.jsonl: row 1 (line 1): nests {depth} levels deep, more than 64"
    assert expected in line, line
    scored = _score(tmp_path, "deep.jsonl")
    assert scored.code == 2 and expected in scored.error_line(), scored.stderr


def test_a_key_twice_in_a_json_lines_row_is_refused_as_a_csv_column_twice_is(
        tmp_path: Path, record_property: pytest.RecordProperty) -> None:
    """Regression: the last of the two values was fitted in silence."""
    data = JSONL + b'{"model": "c", "bs": 3, "host_s": 0.1, "host_s": 0.9}\n'
    line = _fit_error_here(tmp_path, "dup.jsonl", data, record_property)
    assert "dup.jsonl: row 3 (line 3): key 'host_s' appears twice in one object" in line, line


@pytest.mark.parametrize(("name", "data"), [
    ("big.csv", b"model,bs,host_s\na,1,0.5\nb,2,1e300\n"),
    ("big.jsonl", JSONL + b'{"model": "c", "bs": 1e160, "host_s": 0.5}\n'),
])
def test_a_value_beyond_what_a_fit_can_square_names_the_file_and_the_row_from_1(
        tmp_path: Path, record_property: pytest.RecordProperty, name: str,
        data: bytes) -> None:
    """Regression: `target is 1e+300 on row 0`, counted from 0 over the fitted rows, no file."""
    line = _fit_error_here(tmp_path, name, data, record_property)
    column = "host_s" if name.endswith(".csv") else "bs"
    row = "2 (line 3)" if name.endswith(".csv") else "3 (line 3)"
    assert f"{name}: column {column}, row {row}: " in line and "beyond ±1e+150" in line, line


def test_score_on_targets_near_the_float64_limit_prints_no_overflow_warning(
        tmp_path: Path) -> None:
    """Regression: numpy's `RuntimeWarning: overflow encountered in square` on stderr."""
    (tmp_path / "big.csv").write_bytes(b"model,bs,host_s\na,1,1e308\nb,2,1.5e308\n")
    scored = _score(tmp_path, "big.csv")
    assert scored.code == 2, scored.stderr
    assert "Warning" not in scored.stderr
    assert "big.csv: column host_s, row 1 (line 2): 1e+308 is beyond" in scored.error_line()


def test_a_feature_of_values_near_1e_minus_200_is_fitted_not_called_zero(
        tmp_path: Path) -> None:
    """Regression: `term bs is zero on every row`: squares of such values underflow to 0 in
    the column norms that scale the design, and the column is not zero."""
    rows = "".join(f"a,{i * 1e-200!r},{1 + 2 * i}\n" for i in range(1, 12))
    (tmp_path / "tiny.csv").write_text("model,bs,host_s\n" + rows)
    (tmp_path / "laws").mkdir(exist_ok=True)
    result = runner.invoke(app, ["fit", "tiny.csv", "--formula", "host_s ~ 1 + bs",
                                 "--captured-on", OLD, "--out", "laws/out.yaml", "--json"])
    assert result.exit_code == 0, result.output
    terms = json.loads(result.stdout)["laws"][0]["terms"]
    assert terms["1"] == pytest.approx(1.0) and terms["bs"] == pytest.approx(2e200)
