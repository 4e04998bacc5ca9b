"""Capture records: finding, reading and validating CSV, JSON Lines and Parquet files.

A capture file is `*.csv`, `*.jsonl` / `*.ndjson` or `*.parquet` / `*.pq`, each optionally
gzip-compressed (`*.csv.gz`, ...). `find_captures` expands paths, folders and globs into
`Capture`s; `read_chunks` reads the columns a `ColumnSpec` names, and only those, as `Chunk`s of
numpy arrays: the whole file at once, or at most `chunk_rows` rows at a time so that a capture set
larger than memory streams. Files are read with pyarrow (multi-threaded, floats parsed exactly:
CSV and JSON floats round-trip bit for bit); a file pyarrow cannot type (a number column holding
text) is re-read with that column as text and converted here, so that the error names the row.

Validation is per column and per row, and lazy: `Chunk.valid(columns)` is the rows where every
given column holds what it must (a finite number; >= 0 for a target unless negatives are
allowed; a non-empty value for a label or digest column), and `Chunk.problem(column, row)` says
what is wrong in words. A fit checks only the rows and columns each law uses, so a capture may
carry other columns (an unnamed index column included) and rows other laws select.

Rows are numbered from 1 within each file, counting data records only (a CSV header is not a
row; in a CSV file without multi-line quoted fields, row N is line N + 1; in a JSON Lines file
without blank lines, row N is line N).

The digest the captures ran on comes from a text column named after the key (`atom`) or, for
Parquet, the file metadata `lawkit.<key>` (`Chunk.digest` / `Chunk.columns[key]`).

Memory: Parquet streams by row batches (and, read whole, fills arrays of the file's length
batch by batch); CSV streams by blocks (small ones, `_STREAM_BLOCK_BYTES`, as pyarrow reads
ahead 32 of them); a JSON Lines file is parsed whole and then cut into
chunks, so keep tall capture sets in Parquet or CSV.

Bounds (issue 7): a CSV header line is at most `MAX_HEADER_BYTES`, a JSON Lines record at most
`MAX_JSON_LINE_BYTES` (both far above any capture's); a longer one is refused before it costs
seconds and gigabytes of column builders. A number is at most `MAX_NUMBER` in magnitude (what a
fit can square), so that a value out of range is named by file, column and row here.

JSON Lines are parsed line by line with the standard library (issue 23): pyarrow's reader
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
import glob
import gzip
import hashlib
import io
import json
import math
import os
import re
import zlib
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
import numpy.typing as npt

from lawkit.config import digest_problem
from lawkit.errors import CaptureError

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
Format = Literal["csv", "jsonl", "parquet"]

SUFFIXES: dict[str, Format] = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
                               ".parquet": "parquet", ".pq": "parquet"}
KNOWN = "*.csv, *.jsonl, *.ndjson, *.parquet, *.pq, each optionally .gz"
METADATA_PREFIX = "lawkit."
_GLOB_CHARS = set("*?[")
_BLOCK_BYTES = 16 << 20
"""The block size of a whole-file read (pyarrow parses one block per thread)."""
_STREAM_BLOCK_BYTES = 1 << 20
"""The block size of a streamed CSV read: pyarrow's streaming CSV reader reads up to 32 blocks
ahead of the consumer (a fixed background queue, apache/arrow ARROW-12090) and parses one more
per CPU, so a streamed read holds about 32 x this of raw text plus the parsed blocks: 1 MiB
blocks bound it near 40 MiB where 16 MiB blocks held up to 600 MiB of a large file (issue 13)."""
MAX_HEADER_BYTES = 1 << 20
"""The longest CSV header line read: 1 MiB, some 100,000 column names."""
MAX_JSON_LINE_BYTES = 256 << 10
"""The longest JSON Lines record read: 256 KiB, some 20,000 keys (type inference costs seconds
and hundreds of MB past that)."""
MAX_JSON_DEPTH = 64
"""The deepest nesting of a JSON Lines record: a row is one object of values; 20,000 levels
crashed the readers (issue 23)."""
MAX_NUMBER = 1e150
"""The largest magnitude of a number read: a fit squares values (`solve.MAX_VALUE`)."""
_TAIL_BYTES = 1 << 20
"""How much of a CSV file's end is read to find a torn last line."""


@dataclass(frozen=True)
class Capture:
    """One capture file: where it is, how messages name it, and how it is stored."""

    path: Path
    shown: str
    format: Format
    compressed: bool

    def sha256(self) -> str:
        """The sha256 of the file's bytes as stored."""
        try:
            with self.path.open("rb") as f:
                return hashlib.file_digest(f, "sha256").hexdigest()
        except OSError as exc:
            raise CaptureError(f"cannot read: {exc.strerror}", path=self.shown) from None


@dataclass(frozen=True)
class ColumnSpec:
    """The columns a fit reads and what each must hold."""

    numbers: tuple[str, ...] = ()
    """Finite numbers: targets, features, weights (read as float64)."""
    labels: tuple[str, ...] = ()
    """Any non-empty value, kept as typed in the file: `--by` and `--where` columns."""
    digest: str | None = None
    """The digest column's name (the key, `atom`): optional in a file, text when present."""
    digest_length: int | None = None
    """The workspace's digest length: a digest (column or metadata) must be lowercase hex of
    exactly this many characters (`config.digest_problem`); None checks only that it is text."""
    nonnegative: tuple[str, ...] = ()
    """Numbers that must also be >= 0 (targets are durations)."""
    weights: tuple[str, ...] = ()
    """Numbers that must be >= 0 because they weight rows."""

    def names(self) -> list[str]:
        """Every column named, in order, once."""
        out = dict.fromkeys(self.numbers)
        out.update(dict.fromkeys(self.labels))
        if self.digest is not None:
            out[self.digest] = None
        return list(out)


@dataclass
class Chunk:
    """Consecutive rows of one capture file: the columns read, and their validity."""

    capture: Capture
    file_index: int
    start: int
    """How many rows of the file precede this chunk (its first row is `start + 1`)."""
    size: int
    columns: dict[str, Any]
    """numbers as float64 arrays (NaN where not a number), labels as typed arrays, the digest
    column (when the file has one) as an object array of str."""
    digest: str | None = None
    """The digest from the file's metadata, when the file has no digest column."""
    spec: ColumnSpec = field(default_factory=ColumnSpec)
    note: str | None = None
    """What the reader left out of the file, for the report: a torn last line."""
    _raw: dict[str, Any] = field(default_factory=dict)
    _empty: dict[str, BoolArray] = field(default_factory=dict)
    _valid: dict[str, BoolArray] = field(default_factory=dict)

    def valid(self, columns: Iterable[str]) -> BoolArray:
        """The rows where every column given holds a valid value (see the module docstring)."""
        mask = np.ones(self.size, dtype=bool)
        for column in columns:
            mask &= self._column_valid(column)
        return mask

    def problem(self, column: str, row: int) -> str:
        """What is wrong with `column` at chunk row `row`, in words."""
        raw = self._raw.get(column)
        empty = self._empty.get(column)
        if empty is not None and empty[row]:
            return "empty value"
        if raw is not None:
            text = raw[row]
            if isinstance(text, bool):
                return f"{'true' if text else 'false'} is not a number"
            if text is None or (isinstance(text, str) and not text.strip()):
                return "empty value"
            if not isinstance(text, (int, float)) and not _is_number_text(text):
                return f"{_clip(text)!r} is not a number"
        values = self.columns[column]
        if column in self.spec.numbers:
            value = float(values[row])
            if math.isnan(value):
                return "NaN is not a number"
            if math.isinf(value):
                return f"{'-' if value < 0 else ''}infinity is not a finite number"
            if abs(value) > MAX_NUMBER:
                return (f"{value!r} is beyond ±{MAX_NUMBER:g}, more than a fit can square: "
                        "rescale the column (other units)")
            if value < 0 and column in self.spec.weights:
                return f"{value!r} is negative: a weight is >= 0 (or pass --drop-invalid)"
            if value < 0 and column in self.spec.nonnegative:
                return (f"{value!r} is negative: a target is a duration (pass --allow-negative "
                        "if negative values are meant, or --drop-invalid to drop such rows)")
        if column == self.spec.digest:
            problem = None if self.spec.digest_length is None else \
                digest_problem(values[row], self.spec.digest_length)
            return f"{_clip(values[row])!r}: {problem}" if problem else \
                f"{_clip(values[row])!r} is not a digest"
        return "empty value"

    def empty(self, column: str) -> BoolArray:
        """The rows whose cell in `column` is empty (a CSV "", a JSON null, a Parquet null):
        for a target, a region the step did not enter (DESIGN.md section 12)."""
        empty = self._empty.get(column)
        return empty if empty is not None else np.zeros(self.size, dtype=bool)

    def first_invalid(self, columns: Sequence[str], rows: BoolArray | None = None,
                      ) -> tuple[str, int] | None:
        """The first (column, chunk row) among `rows` (default all) with an invalid value."""
        best: tuple[int, int] | None = None
        for order, column in enumerate(columns):
            bad = ~self._column_valid(column)
            if rows is not None:
                bad &= rows
            hits = np.flatnonzero(bad)
            if hits.size and (best is None or hits[0] < best[1]):
                best = (order, int(hits[0]))
        if best is None:
            return None
        return columns[best[0]], best[1]

    def error(self, column: str, row: int) -> CaptureError:
        """The CaptureError for an invalid value: file, column, row and what is wrong."""
        return CaptureError(f"column {column}, row {self.start + row + 1}: "
                            f"{self.problem(column, row)}", path=self.capture.shown)

    @property
    def has_digest_column(self) -> bool:
        """Whether the file has a digest column (rather than metadata, or nothing)."""
        return self.spec.digest is not None and self.spec.digest in self.columns

    def digests_of(self, rows: BoolArray) -> list[str]:
        """The distinct digests of the given rows, in first-seen order ([] when none named)."""
        if not rows.any():
            return []
        if self.has_digest_column:
            values = self.columns[self.spec.digest or ""]
            return [str(v) for v in dict.fromkeys(values[rows].tolist())]
        return [self.digest] if self.digest is not None else []

    def digests(self) -> Any:
        """The digest of every row (an object array), or None when the file names none."""
        if self.spec.digest is not None and self.spec.digest in self.columns:
            return self.columns[self.spec.digest]
        if self.digest is not None:
            return np.full(self.size, self.digest, dtype=object)
        return None

    def _column_valid(self, column: str) -> BoolArray:
        cached = self._valid.get(column)
        if cached is not None:
            return cached
        if column not in self.columns and column == self.spec.digest:
            return np.ones(self.size, dtype=bool)  # an optional column the file does not have
        values = self.columns[column]
        ok: BoolArray
        if column in self.spec.numbers:
            ok = np.abs(values) <= MAX_NUMBER  # False for NaN and infinity too
            if column in self.spec.nonnegative or column in self.spec.weights:
                ok &= ~(values < 0)
        elif values.dtype.kind == "f":
            ok = ~np.isnan(values)
        elif values.dtype.kind == "O":
            ok = np.fromiter((v is not None and v == v and v != "" for v in values), dtype=bool,
                             count=len(values))
        else:
            ok = np.ones(len(values), dtype=bool)
        if column == self.spec.digest and self.spec.digest_length is not None and \
                values.dtype.kind == "O":
            length = self.spec.digest_length
            # Each distinct value once: a digest column holds a handful over millions of rows.
            bad = {v for v in set(values.tolist()) if v is not None and v == v and v != ""
                   and digest_problem(v, length) is not None}
            if bad:
                ok &= np.fromiter((v not in bad for v in values), dtype=bool, count=len(values))
        empty = self._empty.get(column)
        if empty is not None:
            ok &= ~empty
        self._valid[column] = ok
        return ok


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


def capture_format(path: Path | str) -> tuple[Format, bool] | None:
    """The format and compression a file name says, or None for an unknown extension."""
    name = Path(path).name.lower()
    compressed = name.endswith(".gz")
    if compressed:
        name = name[:-3]
    for suffix, fmt in SUFFIXES.items():
        if name.endswith(suffix):
            return fmt, compressed
    return None


def find_captures(paths: Sequence[str | Path], *, cwd: Path | None = None,
                  shown: Any = None) -> list[Capture]:
    """Capture files from paths, folders (every capture file below) and globs, each once.

    `shown(path) -> str` names a file in messages (default: the path as found).
    """
    here = (cwd or Path.cwd()).absolute()
    name = shown or (lambda p: str(p))
    out: dict[Path, Capture] = {}
    if not paths:
        raise CaptureError("no capture files given: name CSV, JSON Lines or Parquet files, "
                           "folders or globs")
    for given in paths:
        text = str(given)
        if _GLOB_CHARS & set(text):
            hits = sorted(glob.glob(text if os.path.isabs(text) else str(here / text),
                                    recursive=True))
            files = [Path(h) for h in hits if Path(h).is_file()]
            if not files:
                raise CaptureError(f"no capture file matches {text!r}")
            for file in files:
                if capture_format(file) is None:
                    continue  # a glob may match other files; a named file may not
                _add(out, file, name)
            if not any(capture_format(f) for f in files):
                raise CaptureError(f"{text!r} matches no capture file ({KNOWN})")
            continue
        path = Path(text) if os.path.isabs(text) else here / text
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and capture_format(p))
            if not found:
                raise CaptureError(f"no capture file ({KNOWN}) in the folder", path=name(path))
            for file in found:
                _add(out, file, name)
            continue
        if not path.exists():
            raise CaptureError("cannot read: no such file", path=name(path))
        if capture_format(path) is None:
            raise CaptureError(f"unknown capture format: expected {KNOWN}", path=name(path))
        _add(out, path, name)
    return list(out.values())


def _add(out: dict[Path, Capture], path: Path, name: Any) -> None:
    absolute = Path(os.path.abspath(path))
    key = absolute.resolve()
    if key in out:
        return
    found = capture_format(absolute)
    assert found is not None
    out[key] = Capture(path=absolute, shown=name(absolute), format=found[0],
                       compressed=found[1])


def sha256_all(captures: Sequence[Capture], *, threads: int = 4) -> list[str]:
    """The sha256 of every capture file, hashed in parallel (hashlib releases the GIL)."""
    if len(captures) <= 1:
        return [c.sha256() for c in captures]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(Capture.sha256, captures))


def read_chunks(capture: Capture, spec: ColumnSpec, *, chunk_rows: int | None = None,
                file_index: int = 0) -> Iterator[Chunk]:
    """The rows of one capture file: one Chunk (chunk_rows None) or chunks of at most
    `chunk_rows` rows. A CaptureError names the file for anything unreadable or missing."""
    if chunk_rows is not None and chunk_rows < 1:
        raise ValueError("chunk_rows must be at least 1")
    reader = {"csv": _CsvReader, "jsonl": _JsonReader, "parquet": _ParquetReader}[capture.format]
    yield from reader(capture, spec, chunk_rows, file_index).chunks()


def read_captures(captures: Sequence[Capture], spec: ColumnSpec, *,
                  chunk_rows: int | None = None) -> Iterator[Chunk]:
    """The rows of every capture file in order (see `read_chunks`)."""
    for index, capture in enumerate(captures):
        yield from read_chunks(capture, spec, chunk_rows=chunk_rows, file_index=index)


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
            # Two columns of one name: which one a reader picks is arbitrary (issue 14 item 13).
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
                raise self.fail(f"column {self.spec.digest}, row {self.rows + row + 1}: "
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
                                    f"{_clip(self.metadata_digest)!r}: {problem}")
        self.check_columns(schema.names)
        columns = self.wanted()
        if self.chunk_rows is None:
            self.total_rows = int(parquet.metadata.num_rows)
        yield from parquet.iter_batches(batch_size=self.chunk_rows or _FILL_ROWS,
                                        columns=columns)


class _CsvReader(_Reader):
    keep: int | None = None
    """The bytes to read when a torn last line is left out (None: the whole file)."""

    def batches(self) -> Iterator[Any]:
        names = self._header()
        self.check_columns(names)
        self.keep = self._without_torn_line(names)
        yield from self._arrow_batches(as_text=False)

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
                batch.append(record)
                if len(batch) >= _JSON_BATCH:
                    take()
        take()
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


def _is_number_text(value: Any) -> bool:
    try:
        float(str(value).strip())
    except ValueError:
        return False
    return "_" not in str(value)


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


def _clip(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


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
    what = {"csv": "CSV", "jsonl": "JSON Lines", "parquet": "Parquet"}[capture.format]
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return f"cannot read as {what}: {first}"
