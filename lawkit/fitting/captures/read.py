"""Reading capture files into `Chunk`s: the columns a `ColumnSpec` names, and only those.

`read_chunks` reads a file whole or at most `chunk_rows` rows at a time, so that a capture set
larger than memory streams. Files are read with pyarrow (multi-threaded, floats parsed exactly:
CSV and JSON floats round-trip bit for bit); a file pyarrow cannot type (a number column holding
text) is re-read with that column as text and converted here, so that the error names the row.

Memory: Parquet streams by row batches (and, read whole, fills arrays of the file's length
batch by batch); CSV streams by blocks (small ones, `_STREAM_BLOCK_BYTES`, as pyarrow reads
ahead 32 of them); a JSON Lines file is parsed whole and then cut into
chunks, so keep tall capture sets in Parquet or CSV.

Bounds: a CSV header line is at most `MAX_HEADER_BYTES`, a JSON Lines record at most
`MAX_JSON_LINE_BYTES` (both far above any capture's); a longer one is refused before it costs
seconds and gigabytes of column builders. A number is at most `chunks.MAX_NUMBER` in magnitude
(what a fit can square), so that a value out of range is named by file, column and row.

JSON Lines are parsed line by line with the standard library: pyarrow's reader
crashes (SIGSEGV) on a line that is just `null` (apache/arrow#47409) and on deep nesting, and
keeps the last of two equal keys; here a line nesting deeper than `MAX_JSON_DEPTH` is refused
before it is parsed (json's recursion would be exhausted, or the C stack), and a key twice in
an object is refused, as two CSV columns of one name are.

A torn last line (no line break at the end, and not a whole row: a writer killed mid-row, as
`lawkit.capture` can leave one) is left out, and the file's chunks say so in `Chunk.note`; any
other malformed line is an error. A CSV line is whole when it has every column and, where the
key column is last (as `lawkit.capture` writes it), a whole digest there; a JSON line when it
parses. Compressed files are read as they are.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import re
import zlib
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import IO, Any

import numpy as np

from lawkit.config import digest_problem
from lawkit.errors import CaptureError
from lawkit.fitting.captures.chunks import BoolArray, Chunk, ColumnSpec, clip, csv_records
from lawkit.fitting.captures.files import METADATA_PREFIX, Capture
from lawkit.fitting.captures.trace import TraceRows, read_traces
from lawkit.fitting.captures.tracemap import no_mapping

_BLOCK_BYTES = 16 << 20
"""The block size of a whole-file read (pyarrow parses one block per thread)."""
_STREAM_BLOCK_BYTES = 1 << 20
"""The block size of a streamed CSV read: pyarrow's streaming CSV reader reads up to 32 blocks
ahead of the consumer (a fixed background queue, apache/arrow ARROW-12090) and parses one more
per CPU, so a streamed read holds about 32 x this of raw text plus the parsed blocks: small
blocks keep that bounded whatever the file's length."""
MAX_HEADER_BYTES = 1 << 20
"""The longest CSV header line read: 1 MiB, some 100,000 column names."""
MAX_JSON_LINE_BYTES = 256 << 10
"""The longest JSON Lines record read: 256 KiB, some 20,000 keys (type inference costs seconds
and hundreds of MB past that)."""
MAX_JSON_DEPTH = 64
"""The deepest nesting of a JSON Lines record: a row is one object of values; 20,000 levels
crashed the readers."""
_TAIL_BYTES = 1 << 20
"""How much of a CSV file's end is read to find a torn last line."""


def chunk_from_columns(columns: Any, spec: ColumnSpec, *, shown: str = "<data>",
                       start: int = 0, file_index: int = 0, digest: str | None = None,
                       ) -> Chunk:
    """A Chunk over in-memory data (a pandas DataFrame, e.g. a Dask partition, or a mapping of
    column name to array), validated like a capture file's rows; `shown` names it in errors and
    `start` numbers its rows (row `start + 1` first)."""
    import pyarrow as pa

    names = list(columns.keys())
    missing = [c for c in spec.names() if c not in names and c != spec.digest]
    if missing:
        raise CaptureError(f"no column {missing[0]!r} (the data has: {', '.join(names)})",
                           path=shown)
    capture = Capture(path=Path(shown), shown=shown, format="parquet", compressed=False)
    reader = _Reader(capture, spec, None, file_index)
    reader.rows = start
    reader.metadata_digest = digest
    reader.has_digest_column = spec.digest is not None and spec.digest in names
    arrays = {}
    for name in reader.wanted():
        values = columns[name]
        values = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
        if values.dtype.kind in "iuf":
            arrays[name] = pa.array(values, from_pandas=True)
        else:  # pandas marks a missing text value with NaN
            arrays[name] = _python_array([None if isinstance(v, float) and v != v else v
                                          for v in values.tolist()])
    return reader._chunk(_TableBatch(pa.table(arrays)) if arrays else
                         _EmptyBatch(len(next(iter(columns.values()), []))))

def read_chunks(capture: Capture, spec: ColumnSpec, *, chunk_rows: int | None = None,
                file_index: int = 0) -> Iterator[Chunk]:
    """The rows of one capture file: one Chunk (chunk_rows None) or chunks of at most
    `chunk_rows` rows. A CaptureError names the file for anything unreadable or missing."""
    if chunk_rows is not None and chunk_rows < 1:
        raise ValueError("chunk_rows must be at least 1")
    if capture.format == "trace":
        yield from _TraceReader(capture, spec, chunk_rows, file_index,
                                _trace_rows([capture], spec)[0]).chunks()
        return
    reader = {"csv": _CsvReader, "jsonl": _JsonReader, "parquet": _ParquetReader}[capture.format]
    yield from reader(capture, spec, chunk_rows, file_index).chunks()


def read_captures(captures: Sequence[Capture], spec: ColumnSpec, *,
                  chunk_rows: int | None = None) -> Iterator[Chunk]:
    """The rows of every capture file in order (see `read_chunks`); traces are read together,
    as one set of ranks (`lawkit.fitting.captures.trace`)."""
    traces: dict[int, TraceRows] | None = None
    for index, capture in enumerate(captures):
        if capture.format != "trace":
            yield from read_chunks(capture, spec, chunk_rows=chunk_rows, file_index=index)
            continue
        if traces is None:
            indexes = [i for i, c in enumerate(captures) if c.format == "trace"]
            traces = dict(zip(indexes, _trace_rows([captures[i] for i in indexes], spec),
                              strict=True))
        yield from _TraceReader(capture, spec, chunk_rows, index, traces[index]).chunks()


def _trace_rows(captures: Sequence[Capture], spec: ColumnSpec) -> list[TraceRows]:
    if spec.trace is None:
        raise no_mapping(captures[0].shown)
    return read_traces(captures, spec.trace, digest_length=spec.digest_length)


# -- readers --------------------------------------------------------------------------------


class _Reader:
    """Read one file into Chunks; subclasses give the arrow batches."""

    def __init__(self, capture: Capture, spec: ColumnSpec, chunk_rows: int | None,
                 file_index: int) -> None:
        self.capture = capture
        self.spec = spec
        self.chunk_rows = chunk_rows
        self.file_index = file_index
        self.rows = 0
        self.metadata_digest: str | None = None
        self.note: str | None = None
        self.has_digest_column = False
        self.row_places: list[str] | None = None
        """Where each row is, in words, where its number does not say it (a JSON Lines file
        with blank lines; a trace's steps)."""
        self.total_rows: int | None = None
        """Set by a reader that knows the file's row count before reading: the whole file is
        then read batch by batch into arrays of that length (peak memory: the arrays and one
        batch, not the file twice)."""

    def fail(self, message: str) -> CaptureError:
        return CaptureError(message, path=self.capture.shown)

    def batches(self) -> Iterator[Any]:
        raise NotImplementedError

    def chunks(self) -> Iterator[Chunk]:
        try:
            whole: _Whole | None = None
            for batch in self.batches():
                if self.chunk_rows is None and self.total_rows is not None:
                    whole = whole or _Whole(self.total_rows)
                    whole.add(self._chunk(batch))
                    continue
                for piece in self._pieces(batch):
                    yield self._chunk(piece)
            if self.total_rows is not None and self.chunk_rows is None:
                if whole is None:
                    yield Chunk(capture=self.capture, file_index=self.file_index, start=0,
                                size=0, columns={c: np.zeros(0) for c in self.wanted()},
                                digest=self.metadata_digest, spec=self.spec, note=self.note)
                else:
                    yield whole.chunk()
        except CaptureError:
            raise
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile, UnicodeDecodeError) as exc:
            raise self.fail(_read_problem(exc, self.capture)) from None
        except Exception as exc:
            import pyarrow as pa

            if isinstance(exc, (pa.ArrowException, ValueError)):
                raise self.fail(_read_problem(exc, self.capture)) from None
            raise

    def _pieces(self, batch: Any) -> Iterator[Any]:
        if self.chunk_rows is None or batch.num_rows <= self.chunk_rows:
            yield batch
            return
        for offset in range(0, batch.num_rows, self.chunk_rows):
            yield batch.slice(offset, self.chunk_rows)

    def check_columns(self, names: Sequence[str]) -> None:
        present = set(names)
        if len(present) < len(names):
            # Two columns of one name: which one a reader picks is arbitrary.
            for column in self.spec.names():
                if names.count(column) > 1:
                    raise self.fail(f"two columns are named {column!r}: rename one, so that "
                                    "lawkit reads the one you mean")
        for column in self.spec.names():
            if column not in present and column != self.spec.digest:
                listing = ", ".join(n if n else '""' for n in names[:30])
                more = ", ..." if len(names) > 30 else ""
                raise self.fail(f"no column {column!r} (the file has: {listing}{more})")
        self.has_digest_column = self.spec.digest is not None and self.spec.digest in present

    def wanted(self) -> list[str]:
        return [c for c in self.spec.names() if c != self.spec.digest or self.has_digest_column]

    def _chunk(self, batch: Any) -> Chunk:
        size = batch.num_rows
        chunk = Chunk(capture=self.capture, file_index=self.file_index, start=self.rows,
                      size=size, columns={}, digest=self.metadata_digest, spec=self.spec,
                      note=self.note)
        if self.row_places is not None:
            chunk.places = np.array(self.row_places[self.rows:self.rows + size], dtype=object)
        names = batch.schema.names
        for column in self.wanted():
            array = batch.column(names.index(column))
            if column in self.spec.numbers:
                self._number_column(chunk, column, array)
            elif column == self.spec.digest:
                self._digest_column(chunk, column, array)
            else:
                _check_scalar(array.type, column, self)
                chunk.columns[column] = _label_values(array)
        if self.metadata_digest is not None and self.has_digest_column:
            values = chunk.columns[self.spec.digest or ""]
            clash = np.flatnonzero(chunk.valid([self.spec.digest or ""]) &
                                   (values != self.metadata_digest))
            if clash.size:
                row = int(clash[0])
                raise self.fail(f"column {self.spec.digest}, {chunk.row_name(row)}: "
                                f"{values[row]!r} differs from the file's metadata "
                                f"{METADATA_PREFIX}{self.spec.digest} = "
                                f"{self.metadata_digest!r}")
        self.rows += size
        return chunk

    def _number_column(self, chunk: Chunk, column: str, array: Any) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        kind = array.type
        if pa.types.is_dictionary(kind):
            array = array.cast(kind.value_type)
            kind = array.type
        empty = _nulls(array) if array.null_count else None
        if pa.types.is_floating(kind) or pa.types.is_integer(kind) or pa.types.is_decimal(kind):
            if not pa.types.is_float64(kind):
                array = pc.cast(array, pa.float64(), safe=False)
            values = _numbers(array)
            if empty is not None:
                values = np.array(values, dtype=np.float64)  # a writable copy
                values[empty] = np.nan
        else:
            raw = _objects(array)
            values = np.fromiter((_parse_number(v) for v in raw), dtype=np.float64,
                                 count=len(raw))
            chunk._raw[column] = raw
        chunk.columns[column] = values
        if empty is not None:
            chunk._empty[column] = empty

    def _digest_column(self, chunk: Chunk, column: str, array: Any) -> None:
        import pyarrow as pa

        kind = array.type
        if pa.types.is_dictionary(kind):
            array = array.cast(kind.value_type)
            kind = array.type
        if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or
                pa.types.is_string_view(kind) or pa.types.is_null(kind)):
            raise self.fail(f"column {column} holds {kind} values: a digest is text (write it "
                            "quoted, e.g. \"68ad8fc6\")")
        chunk.columns[column] = _objects(array)


class _ParquetReader(_Reader):
    def batches(self) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        source: Any = str(self.capture.path)
        if self.capture.compressed:
            source = pa.BufferReader(_gunzip(self.capture))
        # Without pre-buffering, pyarrow holds one page of each column, not whole row groups.
        parquet = pq.ParquetFile(source, pre_buffer=False, buffer_size=1 << 20)
        schema = parquet.schema_arrow
        if self.spec.digest is not None and schema.metadata:
            raw = schema.metadata.get(f"{METADATA_PREFIX}{self.spec.digest}".encode())
            if raw is not None:
                self.metadata_digest = raw.decode("utf-8", "replace")
                problem = None if self.spec.digest_length is None else \
                    digest_problem(self.metadata_digest, self.spec.digest_length)
                if problem is not None:
                    raise self.fail(f"metadata {METADATA_PREFIX}{self.spec.digest} "
                                    f"{clip(self.metadata_digest)!r}: {problem}")
        self.check_columns(schema.names)
        columns = self.wanted()
        if self.chunk_rows is None:
            self.total_rows = int(parquet.metadata.num_rows)
        yield from parquet.iter_batches(batch_size=self.chunk_rows or _FILL_ROWS,
                                        columns=columns)


class _TraceReader(_Reader):
    """A trace's rows, made by its mapping (`lawkit.fitting.captures.trace`)."""

    def __init__(self, capture: Capture, spec: ColumnSpec, chunk_rows: int | None,
                 file_index: int, trace: TraceRows) -> None:
        super().__init__(capture, spec, chunk_rows, file_index)
        self.trace = trace

    def batches(self) -> Iterator[Any]:
        import pyarrow as pa

        self.metadata_digest = self.trace.digest
        self.note = self.trace.note
        self.row_places = self.trace.places
        self.check_columns(list(self.trace.columns))
        arrays = {c: _python_array(self.trace.columns[c]) for c in self.wanted()}
        table = pa.table(arrays) if arrays else pa.table({"": pa.nulls(len(self.row_places))})
        if self.chunk_rows is None:
            yield _single_batch(table)
        else:
            yield from table.to_batches(max_chunksize=self.chunk_rows)


class _CsvReader(_Reader):
    keep: int | None = None
    """The bytes to read when a torn last line is left out (None: the whole file)."""

    def batches(self) -> Iterator[Any]:
        import pyarrow as pa

        names = self._header()
        self.check_columns(names)
        self.keep = self._without_torn_line(names)
        try:
            yield from self._arrow_batches(as_text=False)
        except pa.ArrowInvalid as exc:
            if "columns, got" not in str(exc):
                raise
            raise self.fail(self._row_of_another_width(len(names))) from None

    def _row_of_another_width(self, width: int) -> str:
        """Which record has another number of fields than the header (pyarrow's message names
        none), found with the standard library: an error path only."""
        try:
            for row, line, fields in csv_records(self.capture):
                if len(fields) != width:
                    count = f"{len(fields)} field{'s' if len(fields) != 1 else ''}"
                    return (f"row {row} (line {line}): {count} where the header names {width} "
                            "columns: give every row one value per column (an empty one is an "
                            "empty field, as in 1,,3)")
        except csv.Error:  # the only error of a strict reader here: a quote never closed
            return ("cannot read as CSV: a quoted field is never closed (its closing \" is "
                    "missing, so it runs to the end of the file): close it")
        return f"a row does not have the header's {width} columns"

    def _without_torn_line(self, names: Sequence[str]) -> int | None:
        """The length of the file before a torn last line, or None when its last line is whole
        (see the module docstring); an uncompressed file's last `_TAIL_BYTES` are read."""
        if self.capture.compressed:
            return None
        with self.capture.path.open("rb") as f:
            start = max(0, f.seek(0, os.SEEK_END) - _TAIL_BYTES)
            f.seek(start)
            tail = f.read()
        cut = max(tail.rfind(b"\n"), tail.rfind(b"\r")) + 1
        if cut == 0 or cut == len(tail):  # one line (the header), or a final line break
            return None
        last = tail[cut:].decode("utf-8", "replace")
        try:
            fields = next(csv.reader([last], strict=True))
        except csv.Error:
            fields = []
        whole = len(fields) >= len(names)
        key = self.spec.digest
        if whole and key is not None and names[-1] == key and self.spec.digest_length:
            whole = digest_problem(fields[len(names) - 1], self.spec.digest_length) is None
        if whole:
            return None
        self.note = (f"{self.capture.shown}: the last line has no line break and ends mid-row "
                     "(a writer killed mid-row?): left out")
        return start + cut

    def _header(self) -> list[str]:
        with _open_text(self.capture) as f:
            head = f.read(MAX_HEADER_BYTES + 1)
        text = io.StringIO(head, newline="")
        try:
            first = next(csv.reader(text))
        except StopIteration:
            raise self.fail("empty file: expected a header line naming the columns") from None
        except csv.Error as exc:
            raise self.fail(f"cannot read the header: {exc}") from None
        if len(head) > MAX_HEADER_BYTES and text.tell() == len(head):
            raise self.fail(f"the header line is longer than {MAX_HEADER_BYTES >> 20} MiB: a "
                            "capture file names its columns on its first line (is this a CSV "
                            "capture file?)")
        if first and first[0].startswith("\ufeff"):
            first[0] = first[0][1:]
        return first

    def _arrow_batches(self, *, as_text: bool, skip: int = 0, block: int | None = None,
                       ) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.csv as pcsv

        types = {c: (pa.string() if as_text else pa.float64()) for c in self.spec.numbers}
        if self.has_digest_column and self.spec.digest is not None:
            types[self.spec.digest] = pa.string()
        convert = pcsv.ConvertOptions(include_columns=self.wanted(), column_types=types,
                                      null_values=[""], strings_can_be_null=True,
                                      quoted_strings_can_be_null=False)
        if block is None:
            block = _BLOCK_BYTES if self.chunk_rows is None else _STREAM_BLOCK_BYTES
        read = pcsv.ReadOptions(block_size=block, skip_rows_after_names=skip)
        source = self._source()
        if self.chunk_rows is None:
            try:
                table = pcsv.read_csv(source, read_options=read, convert_options=convert)
            except pa.ArrowInvalid as exc:
                if as_text or not _is_conversion_error(exc):
                    raise
                yield from self._arrow_batches(as_text=True)
                return
            yield _single_batch(table)
            return
        done = 0
        try:
            with pcsv.open_csv(source, read_options=read, convert_options=convert) as stream:
                for batch in stream:
                    yield batch
                    done += batch.num_rows
        except pa.ArrowInvalid as exc:
            if block < _BLOCK_BYTES and _is_block_too_small(exc):
                # A line (the header, or a row) longer than a streamed block: the rest in
                # blocks as large as a whole-file read's.
                yield from self._arrow_batches(as_text=as_text, skip=skip + done,
                                               block=_BLOCK_BYTES)
                return
            if as_text or not _is_conversion_error(exc):
                raise
            # A later block holds text in a number column: read the rest as text (the rows
            # already read stay read) so that the error or --drop-invalid can name the row.
            yield from self._arrow_batches(as_text=True, skip=skip + done, block=block)

    def _source(self) -> Any:
        import pyarrow as pa

        if self.capture.compressed:
            return pa.input_stream(str(self.capture.path), compression="gzip")
        if self.keep is not None:
            return pa.BufferReader(pa.memory_map(str(self.capture.path)).read_buffer(self.keep))
        return str(self.capture.path)


class _JsonReader(_Reader):
    """JSON Lines, line by line with the standard library (see the module docstring)."""

    def batches(self) -> Iterator[Any]:
        table = self._python_table()
        self.check_columns(table.schema.names)
        table = table.select(self.wanted())
        if self.chunk_rows is None:
            yield _single_batch(table)
        else:
            yield from table.to_batches(max_chunksize=self.chunk_rows)

    def _python_table(self) -> Any:
        """Parse line by line (exact floats), naming the line of anything wrong."""
        import pyarrow as pa

        wanted = self.spec.names()
        values: dict[str, list[Any]] = {c: [] for c in wanted}
        seen: set[str] = set()
        batch: list[dict[str, Any]] = []

        def take() -> None:  # a batch's records into the columns, at C speed
            seen.update(*batch)
            for column in wanted:
                values[column] += [record.get(column) for record in batch]
            batch.clear()

        row = line_no = 0
        lines: list[int] = []
        with _open_text(self.capture) as f:
            while line := f.readline(MAX_JSON_LINE_BYTES + 1):
                line_no += 1
                if line_no == 1:
                    line = line.removeprefix("\ufeff")
                if len(line) > MAX_JSON_LINE_BYTES:
                    raise self.fail(f"line {line_no}: a line longer than "
                                    f"{MAX_JSON_LINE_BYTES >> 10} KiB: a JSON Lines capture "
                                    "holds one record per line (is this a capture file?)")
                if not line.strip():
                    continue
                record = self._record(line, row + 1, line_no)
                if record is None:
                    break
                row += 1
                lines.append(line_no)
                batch.append(record)
                if len(batch) >= _JSON_BATCH:
                    take()
        take()
        if lines and lines[-1] != len(lines):  # blank lines: row N is no longer line N
            self.row_places = [f"line {n}" for n in lines]
        if not row:
            raise self.fail("empty file: expected one JSON object per line" if self.note is None
                            else "no whole row: its only line is torn (a writer killed "
                            "mid-row?)")
        arrays = {}
        for column in wanted:
            if column in seen:
                arrays[column] = _python_array(values[column])
        return pa.table(arrays) if arrays else pa.table({"": pa.nulls(row)})

    def _record(self, line: str, row: int, line_no: int) -> dict[str, Any] | None:
        """The object on a line; None for a torn last line (noted), else a CaptureError."""
        where = f"row {row} (line {line_no})"
        depth = _json_depth(line)
        if depth > MAX_JSON_DEPTH:
            raise self.fail(f"{where}: nests {depth} levels deep, more than {MAX_JSON_DEPTH}: "
                            "a capture row is one JSON object of values")
        try:
            record = json.loads(line)
            if not _keys_once(line, record):
                record = _UNIQUE_KEYS.decode(line)
        except _DuplicateKey as exc:
            raise self.fail(f"{where}: key {exc.key!r} appears twice in one object: rename "
                            "one, so that lawkit reads the one you mean") from None
        except json.JSONDecodeError as exc:
            if not line.endswith(("\n", "\r")):
                self.note = (f"{self.capture.shown}: line {line_no}, the last, has no line "
                             "break and is not whole JSON (a writer killed mid-row?): left out")
                return None
            raise self.fail(f"{where}: not valid JSON: {exc.msg}") from None
        if not isinstance(record, dict):
            raise self.fail(f"{where}: expected a JSON object {{\"column\": value, ...}}")
        return record


_JSON_BATCH = 4096


def _keys_once(line: str, record: Any) -> bool:
    """Whether a parsed line can hold no key twice, from two counts (json keeps the last of
    two equal keys in silence): with no whitespace before a colon, every key is followed by
    `":`, so as many `":` as the object has keys means no key twice and none nested. Anything
    else (a nested object, `"a" : 1`, `":` inside a string) is parsed again, key by key."""
    return isinstance(record, dict) and line.count('":') == len(record) and \
        " :" not in line and "\t:" not in line


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object as a dict; `_DuplicateKey` when a key appears twice (json keeps the last)."""
    record = dict(pairs)
    if len(record) < len(pairs):
        seen: set[str] = set()
        for key, _value in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return record


_UNIQUE_KEYS = json.JSONDecoder(object_pairs_hook=_unique_keys)


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _json_depth(line: str) -> int:
    """How deep brackets nest on a JSON line outside strings (when that can exceed
    MAX_JSON_DEPTH; else the count of opening brackets, a bound), without parsing it."""
    opening = line.count("{") + line.count("[")
    if opening <= MAX_JSON_DEPTH:
        return opening
    brackets = _NOT_BRACKET.sub("", _JSON_STRING.sub("", line)).encode("ascii")
    codes = np.frombuffer(brackets, dtype=np.uint8)
    steps = np.isin(codes, (ord("{"), ord("["))).astype(np.int64) - \
        np.isin(codes, (ord("}"), ord("]")))
    return int(np.cumsum(steps).max()) if steps.size else 0


# -- helpers --------------------------------------------------------------------------------


_FILL_ROWS = 1 << 16


class _Whole:
    """A whole file's Chunk, filled batch by batch into arrays of the file's length."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.first: Chunk | None = None
        self.at = 0

    def add(self, part: Chunk) -> None:
        if self.first is None:
            self.first = Chunk(capture=part.capture, file_index=part.file_index, start=0,
                               size=self.total, columns={}, digest=part.digest, spec=part.spec,
                               note=part.note)
        whole = self.first
        end = self.at + part.size
        for name, values in part.columns.items():
            target = whole.columns.get(name)
            if target is None:
                target = whole.columns[name] = np.empty(self.total, dtype=values.dtype)
            elif target.dtype != values.dtype and target.dtype != object:
                # a label that is int in one batch and has gaps (objects) in another
                target = whole.columns[name] = target.astype(object)
            target[self.at:end] = values
        for store, fill, parts in ((whole._raw, None, part._raw),
                                   (whole._empty, False, part._empty)):
            for name, values in parts.items():
                if name not in store:
                    store[name] = np.full(self.total, fill,
                                          dtype=object if fill is None else bool)
                store[name][self.at:end] = values
        self.at = end

    def chunk(self) -> Chunk:
        assert self.first is not None
        if self.at != self.total:
            raise CaptureError(f"read {self.at} rows where the metadata says {self.total}",
                               path=self.first.capture.shown)
        return self.first


def _check_scalar(kind: Any, column: str, reader: _Reader) -> None:
    """A --by or --where column holds scalars: a list, struct or map column cannot be grouped
    or compared (pyarrow would fail with a traceback, or group by object identity)."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    if pa.types.is_nested(kind):
        raise reader.fail(f"column {column} holds {kind} values: a --by or --where column "
                          "holds text or numbers, one a row")


def _label_values(array: Any) -> Any:
    """A label column as typed: ints as int64, floats as float64, anything else (text, or
    ints with gaps, which stay ints) as an object array."""
    import pyarrow as pa

    kind = array.type
    if pa.types.is_dictionary(kind) and not pa.types.is_string(kind.value_type):
        array = array.cast(kind.value_type)
        kind = array.type
    if not array.null_count and (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
        return _numbers(array)
    if pa.types.is_floating(kind):
        values = np.array(_numbers(array), dtype=np.float64)
        values[_nulls(array)] = np.nan
        return values
    return _objects(array)


# pyarrow's own to_numpy imports pandas (half a second) on first use: these read the buffers.


def _chunks(array: Any) -> list[Any]:
    return list(array.chunks) if hasattr(array, "chunks") else [array]


def _numbers(array: Any) -> Any:
    """A numeric arrow array (or chunked array) as numpy, zero-copy for one chunk (read-only);
    null slots hold whatever the buffer holds (see `_nulls`)."""
    import pyarrow as pa

    kind = array.type
    if pa.types.is_boolean(kind) or not (pa.types.is_integer(kind) or
                                         pa.types.is_floating(kind)):
        return _objects(array)
    letter = "f" if pa.types.is_floating(kind) else \
        "i" if pa.types.is_signed_integer(kind) else "u"
    dtype = np.dtype(f"{letter}{kind.bit_width // 8}")
    parts = []
    for chunk in _chunks(array):
        data = chunk.buffers()[1]
        if data is None or len(chunk) == 0:
            parts.append(np.zeros(len(chunk), dtype=dtype))
            continue
        parts.append(np.frombuffer(data, dtype=dtype, count=len(chunk),
                                   offset=chunk.offset * dtype.itemsize))
    if not parts:
        return np.zeros(0, dtype=dtype)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _nulls(array: Any) -> BoolArray:
    """Where the arrow array is null."""
    parts = []
    for chunk in _chunks(array):
        validity = chunk.buffers()[0]
        if chunk.null_count == 0 or validity is None:
            null = np.zeros(len(chunk), dtype=bool)
            if chunk.null_count == len(chunk) and len(chunk):
                null[:] = True  # the null type has no buffers
            parts.append(null)
            continue
        bits = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), bitorder="little")
        parts.append(bits[chunk.offset:chunk.offset + len(chunk)] == 0)
    if not parts:
        return np.zeros(0, dtype=bool)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _objects(array: Any) -> Any:
    """Any arrow array as an object array of Python values (None for null); text goes through
    a dictionary, so that a million rows of a few model names share a few str objects."""
    import pyarrow as pa

    parts = []
    for chunk in _chunks(array):
        kind = chunk.type
        text = pa.types.is_string(kind) or pa.types.is_large_string(kind) or \
            pa.types.is_string_view(kind)
        if pa.types.is_dictionary(kind) or (text and len(chunk) > 64):
            encoded = chunk if pa.types.is_dictionary(kind) else chunk.dictionary_encode()
            dictionary = np.empty(len(encoded.dictionary), dtype=object)
            dictionary[:] = encoded.dictionary.to_pylist()
            nulls = _nulls(encoded)
            if not len(dictionary):
                parts.append(np.full(len(chunk), None, dtype=object))
                continue
            index = _numbers(encoded.indices).astype(np.intp)
            if nulls.any():
                index = np.where(nulls, 0, index)
            values = dictionary[index]
            values[nulls] = None
            parts.append(values)
            continue
        values = np.empty(len(chunk), dtype=object)
        values[:] = chunk.to_pylist()
        parts.append(values)
    if not parts:
        return np.empty(0, dtype=object)
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _single_batch(table: Any) -> Any:
    """One RecordBatch-like view of a whole table (columns as ChunkedArrays)."""
    return _TableBatch(table)


class _TableBatch:
    """A Table seen through the RecordBatch methods the readers use."""

    def __init__(self, table: Any) -> None:
        self.table = table
        self.num_rows = int(table.num_rows)
        self.schema = table.schema

    def column(self, i: int) -> Any:
        return self.table.column(i)

    def slice(self, offset: int, length: int) -> _TableBatch:
        return _TableBatch(self.table.slice(offset, length))




class _EmptyBatch:
    """No column asked for: only a row count."""

    def __init__(self, rows: int) -> None:
        import pyarrow as pa

        self.num_rows = rows
        self.schema = pa.schema([])


def _parse_number(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value).strip()) if "_" not in str(value) else math.nan
    except ValueError:
        return math.nan


def _python_array(values: list[Any]) -> Any:
    """An arrow array of JSON values: typed when they agree (ints with floats are numbers),
    else their JSON text, so that a bad value can be quoted in the message."""
    import pyarrow as pa

    kinds = {type(v) for v in values if v is not None}
    if kinds <= {int, float} or kinds == {str} or kinds == {bool}:
        try:
            return pa.array(values)
        except (pa.ArrowException, OverflowError):
            pass
    return pa.array([None if v is None else _json_text(v) for v in values], type=pa.string())


def _json_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value)




def _is_conversion_error(exc: Exception) -> bool:
    return "conversion error" in str(exc).lower()


def _is_block_too_small(exc: Exception) -> bool:
    """Whether pyarrow's CSV reader failed on a line longer than its block."""
    text = str(exc).lower()
    return "straddles two block boundaries" in text or "cannot infer number of columns" in text


def _open_text(capture: Capture) -> IO[str]:
    try:
        if capture.compressed:
            return io.TextIOWrapper(gzip.open(capture.path, "rb"), encoding="utf-8",
                                    newline="")
        return capture.path.open("r", encoding="utf-8", newline="")
    except OSError as exc:
        raise CaptureError(f"cannot read: {exc.strerror}", path=capture.shown) from None


def _open_binary(capture: Capture) -> IO[bytes]:
    try:
        if capture.compressed:
            return gzip.GzipFile(capture.path, "rb")  # type: ignore[return-value]
        return capture.path.open("rb")
    except OSError as exc:
        raise CaptureError(f"cannot read: {exc.strerror}", path=capture.shown) from None



def _gunzip(capture: Capture) -> bytes:
    try:
        with gzip.open(capture.path, "rb") as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as exc:
        raise CaptureError(_read_problem(exc, capture), path=capture.shown) from None


def _read_problem(exc: BaseException, capture: Capture) -> str:
    text = str(exc)
    lowered = text.lower()
    if capture.compressed and (isinstance(exc, EOFError) or "truncated" in lowered or
                               "end-of-stream" in lowered or "compressed file ended" in lowered):
        return "truncated gzip file (it ends before the end of its compressed data): copy it " \
               "again"
    if capture.compressed and (isinstance(exc, gzip.BadGzipFile) or "not a gzipped" in lowered
                               or "incorrect header" in lowered or "inflate" in lowered):
        return "not a valid gzip file (named .gz): decompress it or fix its name"
    if isinstance(exc, UnicodeDecodeError):
        return "not UTF-8 text"
    if isinstance(exc, OSError) and exc.strerror:
        return f"cannot read: {exc.strerror}"
    what = {"csv": "CSV", "jsonl": "JSON Lines", "parquet": "Parquet",
            "trace": "a trace"}[capture.format]
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"cannot read as {what}: {first}"


__all__ = ["MAX_HEADER_BYTES", "MAX_JSON_DEPTH", "MAX_JSON_LINE_BYTES", "chunk_from_columns",
           "read_captures", "read_chunks"]
