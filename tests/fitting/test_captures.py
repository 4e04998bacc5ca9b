"""Capture files: every format reads the same exact values; bad values name file, column, row."""

from __future__ import annotations

import dataclasses
import gzip
import json
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lawkit.errors import CaptureError
from lawkit.fitting.captures import read as capture_read
from lawkit.fitting.captures.chunks import Chunk, ColumnSpec
from lawkit.fitting.captures.files import Capture, find_captures, sha256_all
from lawkit.fitting.captures.read import MAX_JSON_DEPTH, read_captures, read_chunks

ROWS = [
    {"model": "a", "tp": 1, "bs": 8, "host_s": 0.1 + 0.2, "atom": "0001abcd"},
    {"model": "b", "tp": 2, "bs": 16, "host_s": 1e-7 / 3, "atom": "0001abcd"},
    {"model": "a", "tp": 4, "bs": 24, "host_s": 123456.789e-5, "atom": "0001abcd"},
    {"model": "Qwen/Qwen-72B", "tp": 4, "bs": 32, "host_s": 2.0 / 3.0, "atom": "0001abcd"},
]
SPEC = ColumnSpec(numbers=("host_s", "bs"), labels=("model", "tp"), digest="atom",
                  nonnegative=("host_s",))


def write_csv(path: Path, rows: list[dict[str, object]], *, index: bool = False) -> Path:
    columns = list(rows[0])
    lines = [",".join(([""] if index else []) + columns)]
    for i, row in enumerate(rows):
        cells = [repr(v) if isinstance(v, float) else str(v) for v in row.values()]
        lines.append(",".join(([str(i)] if index else []) + cells))
    data = ("\n".join(lines) + "\n").encode()
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    data = "".join(json.dumps(row) + "\n" for row in rows).encode()
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


def write_parquet(path: Path, rows: list[dict[str, object]], *,
                  metadata: dict[str, str] | None = None, row_group_size: int | None = None,
                  ) -> Path:
    table = pa.Table.from_pylist(rows)
    if metadata:
        table = table.replace_schema_metadata(metadata)
    if path.name.endswith(".gz"):
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        path.write_bytes(gzip.compress(sink.getvalue().to_pybytes()))
    else:
        pq.write_table(table, path, row_group_size=row_group_size)
    return path


def one_chunk(path: Path, spec: ColumnSpec = SPEC) -> Chunk:
    chunks = list(read_captures(find_captures([path]), spec))
    assert len(chunks) == 1
    return chunks[0]


def error_of(path: Path, spec: ColumnSpec = SPEC, columns: list[str] | None = None) -> str:
    with pytest.raises(CaptureError) as info:
        for chunk in read_captures(find_captures([path]), spec):
            bad = chunk.first_invalid(columns or spec.names())
            if bad is not None:
                raise chunk.error(*bad)
    return str(info.value)


# -- formats ---------------------------------------------------------------------------------


WRITERS = {
    "a.csv": write_csv, "a.csv.gz": write_csv, "a.jsonl": write_jsonl, "a.jsonl.gz": write_jsonl,
    "a.ndjson": write_jsonl,
    "a.parquet": write_parquet, "a.parquet.gz": write_parquet, "a.pq": write_parquet,
}


@pytest.mark.parametrize("name", sorted(WRITERS))
def test_every_format_reads_the_same_values_bit_for_bit(tmp_path: Path, name: str) -> None:
    chunk = one_chunk(WRITERS[name](tmp_path / name, ROWS))
    assert chunk.size == 4
    assert chunk.columns["host_s"].tolist() == [r["host_s"] for r in ROWS]
    assert chunk.columns["host_s"].dtype == np.float64
    assert chunk.columns["bs"].tolist() == [8.0, 16.0, 24.0, 32.0]
    assert chunk.columns["tp"].tolist() == [1, 2, 4, 4]
    assert all(type(v) is int for v in chunk.columns["tp"].tolist())
    assert chunk.columns["model"].tolist() == [r["model"] for r in ROWS]
    assert chunk.digests().tolist() == ["0001abcd"] * 4
    assert chunk.valid(SPEC.names()).all()


def test_only_the_columns_asked_for_are_read(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "a.csv", [{**r, "junk": "not a number"} for r in ROWS],
                     index=True)
    chunk = one_chunk(path)
    assert set(chunk.columns) == {"host_s", "bs", "model", "tp", "atom"}


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), min_size=1, max_size=50))
def test_csv_floats_round_trip_exactly(tmp_path_factory: pytest.TempPathFactory,
                                       values: list[float]) -> None:
    folder = tmp_path_factory.mktemp("csv")
    path = folder / "f.csv"
    path.write_text("x\n" + "".join(f"{v!r}\n" for v in values))
    chunk = one_chunk(path, ColumnSpec(numbers=("x",)))
    assert chunk.columns["x"].tobytes() == np.array(values, dtype=np.float64).tobytes()


@pytest.mark.parametrize("name", ["a.csv", "a.jsonl", "a.parquet"])
def test_chunks_of_any_size_hold_the_same_rows(tmp_path: Path, name: str) -> None:
    rows = [{**ROWS[i % 4], "bs": i} for i in range(23)]
    path = WRITERS[name](tmp_path / name, rows)
    whole = one_chunk(path)
    for size in (1, 5, 7, 23, 100):
        chunks = list(read_captures(find_captures([path]), SPEC, chunk_rows=size))
        assert [c.start for c in chunks] == list(range(0, 23, size))
        for column in SPEC.names():
            joined = np.concatenate([c.columns[column] for c in chunks])
            assert joined.tolist() == whole.columns[column].tolist()


def test_parquet_row_groups_stream_as_chunks(tmp_path: Path) -> None:
    rows = [{**ROWS[i % 4], "bs": i} for i in range(50)]
    path = write_parquet(tmp_path / "a.parquet", rows, row_group_size=8)
    sizes = [c.size for c in read_captures(find_captures([path]), SPEC, chunk_rows=6)]
    assert sum(sizes) == 50 and max(sizes) <= 6
    assert one_chunk(path).columns["bs"].tolist() == list(range(50))


def test_the_digest_comes_from_parquet_metadata(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "atom"} for r in ROWS]
    path = write_parquet(tmp_path / "a.parquet", rows, metadata={"lawkit.atom": "68ad8fc6"})
    chunk = one_chunk(path)
    assert chunk.digest == "68ad8fc6"
    assert chunk.digests().tolist() == ["68ad8fc6"] * 4


def test_a_digest_column_that_disagrees_with_the_metadata_is_an_error(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "a.parquet", ROWS, metadata={"lawkit.atom": "68ad8fc6"})
    with pytest.raises(CaptureError, match=r"a.parquet: column atom, row 1: '0001abcd' differs "
                       r"from the file's metadata lawkit.atom = '68ad8fc6'"):
        one_chunk(path)


def test_a_digest_is_text_even_when_it_looks_like_a_number(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "a.csv", [{**r, "atom": "00001234"} for r in ROWS])
    assert one_chunk(path).digests().tolist() == ["00001234"] * 4
    path = write_parquet(tmp_path / "n.parquet", [{**r, "atom": 1234} for r in ROWS])
    with pytest.raises(CaptureError, match="column atom holds int64 values: a digest is text"):
        one_chunk(path)


def test_a_file_without_a_digest_has_none(tmp_path: Path) -> None:
    rows = [{k: v for k, v in r.items() if k != "atom"} for r in ROWS]
    chunk = one_chunk(write_csv(tmp_path / "a.csv", rows))
    assert chunk.digests() is None
    assert chunk.valid(SPEC.names()).all()


def test_integer_labels_with_gaps_stay_integers(tmp_path: Path) -> None:
    rows = [dict(r) for r in ROWS]
    rows[1]["tp"] = None
    chunk = one_chunk(write_jsonl(tmp_path / "a.jsonl", rows))
    assert chunk.columns["tp"].tolist() == [1, None, 4, 4]
    assert chunk.valid(["tp"]).tolist() == [True, False, True, True]
    assert str(chunk.error("tp", 1)).endswith("a.jsonl: column tp, row 2 (line 2): empty value")


# -- finding files ---------------------------------------------------------------------------


def test_find_captures_expands_globs_and_folders_once_each(tmp_path: Path) -> None:
    (tmp_path / "runs" / "b").mkdir(parents=True)
    for name in ("runs/a.csv", "runs/b/c.jsonl.gz", "runs/b/d.parquet"):
        (tmp_path / name).write_text("x\n")
    (tmp_path / "runs" / "notes.txt").write_text("")
    found = find_captures(["runs/*.csv", "runs", "runs/b/*"], cwd=tmp_path)
    assert [c.path.relative_to(tmp_path).as_posix() for c in found] == [
        "runs/a.csv", "runs/b/c.jsonl.gz", "runs/b/d.parquet"]
    assert [(c.format, c.compressed) for c in found] == [("csv", False), ("jsonl", True),
                                                         ("parquet", False)]


@pytest.mark.parametrize(("given", "message"), [
    ("missing.csv", "missing.csv: cannot read: no such file"),
    ("notes.txt", "notes.txt: unknown capture format: expected *.csv, *.jsonl, *.ndjson, "
                  "*.parquet, *.pq, a *.json trace, each optionally .gz"),
    ("nothing/*.csv", "no capture file matches 'nothing/*.csv'"),
    ("empty", "empty: no capture file (*.csv"),
])
def test_find_captures_names_what_it_cannot_find(tmp_path: Path, given: str,
                                                 message: str) -> None:
    (tmp_path / "notes.txt").write_text("")
    (tmp_path / "empty").mkdir()
    with pytest.raises(CaptureError) as info:
        find_captures([given], cwd=tmp_path, shown=lambda p: Path(p).relative_to(tmp_path)
                      .as_posix())
    assert message in str(info.value)


def test_capture_sha256_is_of_the_bytes_as_stored(tmp_path: Path) -> None:
    import hashlib

    path = write_csv(tmp_path / "a.csv.gz", ROWS)
    found = find_captures([path])
    assert sha256_all(found * 1) == [hashlib.sha256(path.read_bytes()).hexdigest()]


# -- validation ------------------------------------------------------------------------------


BAD_CSV = "host_s,bs,model,tp\n0.5,8,a,1\n{value},16,b,2\n"


@pytest.mark.parametrize(("value", "problem"), [
    ("abc", "'abc' is not a number"),
    ("", "empty value"),
    ("nan", "NaN is not a number"),
    ("NaN", "NaN is not a number"),
    ("inf", "infinity is not a finite number"),
    ("-Infinity", "-infinity is not a finite number"),
    ("1e400", "infinity is not a finite number"),
    ("-0.25", "-0.25 is negative: a target is a duration (pass --allow-negative"),
    ("1_000", "'1_000' is not a number"),
    ("true", "'true' is not a number"),
])
def test_a_bad_number_names_file_column_row_and_what_is_wrong(tmp_path: Path, value: str,
                                                              problem: str) -> None:
    path = tmp_path / "a.csv"
    path.write_text(BAD_CSV.format(value=value))
    message = error_of(path, ColumnSpec(numbers=("host_s", "bs"), labels=("model", "tp"),
                                        nonnegative=("host_s",)))
    assert message.endswith(f"a.csv: column host_s, row 2 (line 3): {problem}") or \
        f"a.csv: column host_s, row 2 (line 3): {problem}" in message


def test_negative_values_are_fine_where_allowed(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text(BAD_CSV.format(value="-0.25"))
    chunk = one_chunk(path, ColumnSpec(numbers=("host_s", "bs")))
    assert chunk.valid(["host_s"]).all()
    assert chunk.columns["host_s"].tolist() == [0.5, -0.25]


def test_the_first_bad_row_is_named_whichever_column_it_is_in(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text("host_s,bs\n1,1\n2,x\n,3\n")
    spec = ColumnSpec(numbers=("host_s", "bs"))
    chunk = one_chunk(path, spec)
    assert chunk.first_invalid(["host_s", "bs"]) == ("bs", 1)
    assert chunk.first_invalid(["host_s"]) == ("host_s", 2)
    assert chunk.first_invalid(["host_s", "bs"], np.array([True, False, False])) is None
    assert chunk.valid(["host_s", "bs"]).tolist() == [True, False, False]


def test_an_empty_label_is_invalid(tmp_path: Path) -> None:
    path = tmp_path / "a.csv"
    path.write_text('host_s,bs,model,tp\n1,1,a,1\n2,2,"",2\n3,3,,3\n')
    chunk = one_chunk(path, ColumnSpec(numbers=("host_s", "bs"), labels=("model", "tp")))
    assert chunk.valid(["model"]).tolist() == [True, False, False]
    assert str(chunk.error("model", 1)).endswith("column model, row 2 (line 3): empty value")


def test_rows_in_later_chunks_are_numbered_within_their_file(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             ) -> None:
    # Small CSV blocks: the text turns up in a later block, after typed blocks were read.
    monkeypatch.setattr(capture_read, "_STREAM_BLOCK_BYTES", 256)
    lines = ["host_s,bs"] + [f"{i}.5,{i}" for i in range(200)]
    lines[151] = "oops,150"
    path = tmp_path / "a.csv"
    path.write_text("\n".join(lines) + "\n")
    spec = ColumnSpec(numbers=("host_s", "bs"))
    chunks = list(read_captures(find_captures([path]), spec, chunk_rows=16))
    assert sum(c.size for c in chunks) == 200
    bad = [(c, c.first_invalid(["host_s"])) for c in chunks]
    found = [(c, b) for c, b in bad if b is not None]
    assert len(found) == 1
    chunk, (column, row) = found[0]
    assert str(chunk.error(column, row)).endswith(
        "a.csv: column host_s, row 151 (line 152): 'oops' is not a number")
    joined = np.concatenate([c.columns["bs"] for c in chunks])
    assert joined.tolist() == list(range(200))


def test_a_bad_value_names_the_file_line_beside_the_row(tmp_path: Path) -> None:
    """Regression (issue 40): `row 9` was file line 10, and a JSON Lines row after a blank
    line was not on the line its number says."""
    csv_path = tmp_path / "a.csv"
    csv_path.write_text("host_s,bs\n" + "".join(f"0.{i},{i}\n" for i in range(8)) + "x,8\n")
    assert error_of(csv_path, ColumnSpec(numbers=("host_s", "bs"))).endswith(
        "a.csv: column host_s, row 9 (line 10): 'x' is not a number")
    quoted = tmp_path / "q.csv"  # a quoted value may hold line breaks; a blank line is no row
    quoted.write_bytes(b'model,bs,host_s\n"multi\nline",1,0.5\n\n"x\r\ny",2,\n')
    assert error_of(quoted, ColumnSpec(numbers=("bs", "host_s"), labels=("model",))).endswith(
        "q.csv: column host_s, row 2 (line 5): empty value")
    jsonl = tmp_path / "a.jsonl"
    jsonl.write_text('{"host_s": 1, "bs": 1}\n\n{"host_s": "x", "bs": 2}\n')
    assert error_of(jsonl, ColumnSpec(numbers=("host_s", "bs"))).endswith(
        "a.jsonl: column host_s, row 2 (line 3): 'x' is not a number")


@pytest.mark.parametrize("chunk_rows", [None, 2])
def test_a_short_csv_row_names_its_line_not_pyarrows_message(tmp_path: Path,
                                                              chunk_rows: int | None) -> None:
    """Regression (issue 40): pyarrow's `Expected 2 columns, got 1: 3` named no line."""
    path = tmp_path / "short.csv"
    path.write_text("bs,host_s\n1,0.1\n\n2,0.2\n3\n4,0.4\n")
    with pytest.raises(CaptureError) as caught:
        list(read_chunks(find_captures([path])[0], ColumnSpec(numbers=("bs", "host_s")),
                         chunk_rows=chunk_rows))
    assert str(caught.value).endswith(
        "short.csv: row 3 (line 5): 1 field where the header names 2 columns: give every row "
        "one value per column (an empty one is an empty field, as in 1,,3)")


def test_json_lines_with_mixed_types_name_the_row(tmp_path: Path) -> None:
    rows = [dict(r) for r in ROWS]
    rows[2]["host_s"] = "slow"
    path = write_jsonl(tmp_path / "a.jsonl", rows)
    assert error_of(path).endswith("a.jsonl: column host_s, row 3 (line 3): 'slow' is not a number")


def test_json_lines_that_do_not_parse_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(ROWS[0]) + "\n\n" + '{"host_s": 1,\n')
    with pytest.raises(CaptureError, match=r"a.jsonl: row 2 \(line 3\): not valid JSON"):
        one_chunk(path)


@pytest.mark.parametrize("name", ["a.csv", "a.jsonl", "a.parquet"])
def test_a_missing_column_is_named_with_the_columns_there_are(tmp_path: Path, name: str) -> None:
    rows = [{k: v for k, v in r.items() if k != "bs"} for r in ROWS]
    path = WRITERS[name](tmp_path / name, rows)
    with pytest.raises(CaptureError, match=rf"{name}: no column 'bs' \(the file has: ") as info:
        one_chunk(path)
    listed = str(info.value).split("the file has: ")[1].rstrip(")").split(", ")
    assert sorted(listed) == ["atom", "host_s", "model", "tp"]


@pytest.mark.parametrize("name", ["a.csv.gz", "a.jsonl.gz", "a.parquet.gz"])
def test_a_truncated_gzip_file_is_named(tmp_path: Path, name: str) -> None:
    rows = [{**ROWS[i % 4], "bs": i} for i in range(2000)]
    path = WRITERS[name](tmp_path / name, rows)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(CaptureError, match=rf"{name}: truncated gzip file"):
        list(read_captures(find_captures([path]), SPEC))


def test_a_file_named_gz_that_is_not_gzip_is_named(tmp_path: Path) -> None:
    path = tmp_path / "a.csv.gz"
    path.write_text("host_s\n1\n")
    with pytest.raises(CaptureError, match=r"a\.csv\.gz: not a valid gzip file"):
        list(read_captures(find_captures([path]), ColumnSpec(numbers=("host_s",))))


@pytest.mark.parametrize(("name", "data", "message"), [
    ("a.parquet", b"PAR1 not really parquet", "cannot read as Parquet"),
    ("a.csv", b"host_s\n\xff\xfe\n", "not UTF-8"),
    ("a.csv", b"", "empty file: expected a header line"),
])
def test_an_unreadable_file_is_named(tmp_path: Path, name: str, data: bytes,
                                     message: str) -> None:
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(CaptureError, match=rf"{name}: {message}"):
        list(read_captures(find_captures([path]), ColumnSpec(numbers=("host_s",))))


def test_read_chunks_refuses_a_zero_chunk_size(tmp_path: Path) -> None:
    capture = Capture(tmp_path / "a.csv", "a.csv", "csv", False)
    with pytest.raises(ValueError, match="at least 1"):
        list(read_chunks(capture, SPEC, chunk_rows=0))


def test_nan_in_parquet_and_nulls_are_told_apart(tmp_path: Path) -> None:
    rows = [dict(r) for r in ROWS]
    rows[1]["host_s"] = math.nan
    rows[2]["host_s"] = None
    chunk = one_chunk(write_parquet(tmp_path / "a.parquet", rows))
    assert chunk.valid(["host_s"]).tolist() == [True, False, False, True]
    assert chunk.problem("host_s", 1) == "NaN is not a number"
    assert chunk.problem("host_s", 2) == "empty value"


# -- a torn last line (a writer killed mid-row) and empty cells -------------------


@pytest.mark.parametrize(("name", "torn"), [
    ("a.csv", b"a,8,8,0.1,00"),           # the key column cut short
    ("a.csv", b"a,8,8"),                   # columns missing
    ("a.csv", b'"Qwen/Qw'),                # a quoted value open
    ("a.jsonl", b'{"model": "a", "tp": 1, "bs": 8, "host_s": 0.1, "atom": "00'),
])
def test_a_torn_last_line_is_left_out_and_the_chunks_say_so(
        tmp_path: Path, name: str, torn: bytes) -> None:
    path = WRITERS[name](tmp_path / name, ROWS)
    path.write_bytes(path.read_bytes() + torn)
    chunk = one_chunk(path, dataclasses.replace(SPEC, digest_length=8))
    assert chunk.size == len(ROWS)
    assert chunk.columns["bs"].tolist() == [8.0, 16.0, 24.0, 32.0]
    assert chunk.note is not None and chunk.note.startswith(f"{path}: ")
    assert "left out" in chunk.note


@pytest.mark.parametrize(("name", "last"), [
    ("a.csv", b"a,1,40,0.5,0001abcd"),     # whole, only its line break missing
    ("a.jsonl", b'{"model": "a", "tp": 1, "bs": 40, "host_s": 0.5, "atom": "0001abcd"}'),
])
def test_a_whole_last_line_without_a_line_break_is_read(
        tmp_path: Path, name: str, last: bytes) -> None:
    path = WRITERS[name](tmp_path / name, ROWS)
    path.write_bytes(path.read_bytes() + last)
    chunk = one_chunk(path)
    assert chunk.size == len(ROWS) + 1 and chunk.note is None


def test_a_malformed_line_that_is_not_the_last_is_still_an_error(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"model": "a", "bs": 1, "host_s": 0.5, "tp": 1\n' +
                     json.dumps(ROWS[0]).encode())
    with pytest.raises(CaptureError, match=r"a.jsonl: row 1 \(line 1\): not valid JSON"):
        one_chunk(path)


@pytest.mark.parametrize("name", ["a.csv", "a.jsonl", "a.parquet"])
def test_an_empty_target_cell_is_marked_empty_for_the_laws_to_leave_out(
        tmp_path: Path, name: str) -> None:
    rows = [dict(r) for r in ROWS]
    rows[1]["host_s"] = None
    if name == "a.csv":
        path = tmp_path / name
        write_csv(path, ROWS)
        lines = path.read_text().splitlines()
        lines[2] = lines[2].replace(repr(ROWS[1]["host_s"]), "")
        path.write_text("\n".join(lines) + "\n")
    else:
        path = WRITERS[name](tmp_path / name, rows)
    assert one_chunk(path).empty("host_s").tolist() == [False, True, False, False]
    assert one_chunk(path).empty("bs").tolist() == [False] * 4


def test_json_lines_nest_no_deeper_than_the_bound_and_equal_keys_are_refused(
        tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    nested = {"tags": [[[[1]]]], **ROWS[0]}
    path.write_bytes(json.dumps(nested).encode() + b"\n")
    assert one_chunk(path).size == 1  # nesting within MAX_JSON_DEPTH is read
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    strings = '"' + "[" * 1000 + '"'  # brackets inside a string are not nesting
    path.write_text(json.dumps(ROWS[0])[:-1] + f', "s": {strings}}}\n')
    assert one_chunk(path).size == 1
    path.write_text(json.dumps(ROWS[0])[:-1] + f', "deep": {deep}}}\n')
    with pytest.raises(CaptureError, match=r"row 1 \(line 1\): nests 66 levels deep"):
        one_chunk(path)
    path.write_text('{"bs": 1, "host_s": 0.5, "model": "a", "tp": 1, "atom": "0001abcd", '
                    '"m": {"x": 1, "x": 2}}\n')
    with pytest.raises(CaptureError, match="key 'x' appears twice"):
        one_chunk(path)
    for twice in ('"bs" : 1, "bs" : 2', '"bs":1,"b\\u0073":2', '"bs":\t1, "bs"\t:2'):
        path.write_text(f'{{"host_s": 0.5, "model": "a", "tp": 1, {twice}}}\n')
        with pytest.raises(CaptureError, match="key 'bs' appears twice"):
            one_chunk(path)


_KEYS = st.sampled_from(["bs", "host_s", "b\\u0073", "x"])
_VALUES = st.one_of(st.integers(-5, 5), st.floats(0, 1), st.sampled_from(['"a\\":"', '" :"']))


@settings(max_examples=40, deadline=None)
@given(pairs=st.lists(st.tuples(_KEYS, _VALUES), min_size=1, max_size=5),
       colons=st.lists(st.sampled_from([":", ": ", ":", " :", "\t:\t"]), min_size=5,
                       max_size=5),
       nested=st.booleans())
@example(pairs=[("bs", 1), ("bs", 2)], colons=[":"] * 5, nested=False)
@example(pairs=[("bs", 1), ("b\\u0073", 2)], colons=[": "] * 5, nested=True)
@example(pairs=[("x", '"a\\":"'), ("bs", 2)], colons=[":"] * 5, nested=False)
def test_a_json_lines_row_is_refused_exactly_when_an_object_holds_a_key_twice(
        pairs: list[tuple[str, object]], colons: list[str], nested: bool) -> None:
    import tempfile

    items = [f'"{key}"{colon}{json.dumps(value) if not isinstance(value, str) else value}'
             for (key, value), colon in zip(pairs, colons, strict=False)]
    body = "{" + ", ".join(items) + "}"
    line = '{"model": "a", "tp": 1, "m": ' + body + "}" if nested else body
    names = [json.loads(f'"{key}"') for key, _ in pairs]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "a.jsonl"
        path.write_text(line + "\n")
        spec = ColumnSpec(labels=("model",) if nested else ())
        if len(set(names)) < len(names):
            with pytest.raises(CaptureError, match="appears twice in one object"):
                one_chunk(path, spec)
        else:
            assert one_chunk(path, spec).size == 1
