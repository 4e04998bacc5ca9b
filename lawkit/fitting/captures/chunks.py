"""The rows read from a capture file (`Chunk`) and what each column must hold (`ColumnSpec`).

Validation is per column and per row, and lazy: `Chunk.valid(columns)` is the rows where every
given column holds what it must (a finite number; >= 0 for a target unless negatives are
allowed; a non-empty value for a label or digest column), and `Chunk.problem(column, row)` says
what is wrong in words. A fit checks only the rows and columns each law uses, so a capture may
carry other columns (an unnamed index column included) and rows other laws select.

Rows are numbered from 1 within each file, counting data records only (a CSV header is not a
row), and a message names the file line beside the row (`row 9 (line 10)`: in a CSV file,
row N is line N + 1; in a JSON Lines file, the line the reader found it on) or, for a trace,
the step the row was made of (`Chunk.places`).

The digest the captures ran on comes from a text column named after the key (`atom`) or, for
Parquet, the file metadata `lawkit.<key>` (`Chunk.digest` / `Chunk.columns[key]`).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from lawkit.capture.rows import MAX_NUMBER  # the writer refuses what the reader refuses
from lawkit.config import digest_problem
from lawkit.errors import CaptureError
from lawkit.fitting.captures.files import Capture
from lawkit.fitting.captures.tracemap import TraceMapping

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


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
    trace: TraceMapping | None = None
    """How a Chrome-format trace becomes rows (`[trace]`); None: traces cannot be read."""

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
    places: Any = None
    """Where each row is in the file, in words (an object array), where the row number alone
    does not say: a JSON Lines line after a blank one, a trace's step; None: from the row."""
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
                return f"{clip(text)!r} is not a number"
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
            return f"{clip(values[row])!r}: {problem}" if problem else \
                f"{clip(values[row])!r} is not a digest"
        return "empty value"

    def empty(self, column: str) -> BoolArray:
        """The rows whose cell in `column` is empty (a CSV "", a JSON null, a Parquet null):
        for a target, a region the step did not enter (docs/captures.md)."""
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
        return CaptureError(f"column {column}, {self.row_name(row)}: "
                            f"{self.problem(column, row)}", path=self.capture.shown)

    def row_name(self, row: int) -> str:
        """How a message names chunk row `row`: its number, and its file line where known."""
        number = self.start + row + 1
        if self.places is not None:
            return f"row {number} ({self.places[row]})"
        line = number if self.capture.format == "jsonl" else \
            csv_record_line(self.capture, number) if self.capture.format == "csv" else None
        return f"row {number}" if line is None else f"row {number} (line {line})"


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


def csv_records(capture: Capture) -> Iterator[tuple[int, int, list[str]]]:
    """A CSV file's records after the header as pyarrow counts them (a quoted field may hold
    line breaks; blank lines are no record): (number from 1, first line, fields). Read with
    the standard library, for messages only: it reads the file up to the record asked for."""
    with (gzip.open(capture.path, "rb") if capture.compressed else capture.path.open("rb")
          ) as raw, io.TextIOWrapper(raw, encoding="utf-8", errors="replace", newline="") as f:
        records = csv.reader(f, strict=True)
        next(records, None)
        number, line = 0, records.line_num
        for fields in records:
            start, line = line + 1, records.line_num
            if fields:
                number += 1
                yield number, start, fields


def csv_record_line(capture: Capture, number: int) -> int | None:
    """The line a CSV file's record `number` begins on (None when it cannot be read)."""
    try:
        return next((line for n, line, _ in csv_records(capture) if n == number), None)
    except (OSError, EOFError, csv.Error, zlib.error):
        return None


def _is_number_text(value: Any) -> bool:
    try:
        float(str(value).strip())
    except ValueError:
        return False
    return "_" not in str(value)


def clip(value: Any) -> str:
    """A value as text short enough to quote in a message."""
    text = str(value)
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["MAX_NUMBER", "BoolArray", "Chunk", "ColumnSpec", "FloatArray", "clip",
           "csv_record_line", "csv_records"]
