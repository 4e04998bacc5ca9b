"""Which rows of a chunk a law fits: its selection, the rows held out (`Split`), validation,
and its design matrix over those rows.

Rows and validation (docs/captures.md): the selection columns (`where`, `filter`, `--by`
and the digest column) are checked on every row; the fitted columns (target, features,
weight) on the rows each law selects. A bad value is a CaptureError naming file, column and
row, unless `drop_invalid`, which drops the row from the laws that read that column and counts
it in the law's `fit.dropped`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from lawkit.fitting.captures.chunks import Chunk
from lawkit.fitting.formula import design_matrix
from lawkit.fitting.request import FitRequest, LawSpec
from lawkit.lawfiles.where import law_mask

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Split:
    """Which rows are held out: whole files when there are several, else rows at random."""

    fraction: float
    seed: int
    files: frozenset[int] | None

    @classmethod
    def of(cls, request: FitRequest, nfiles: int) -> Split | None:
        """The split of a request's --holdout, None without one."""
        return cls.make(request.holdout, request.seed, nfiles) if request.holdout else None

    @classmethod
    def make(cls, fraction: float, seed: int, nfiles: int) -> Split:
        if nfiles > 1:
            count = min(max(1, round(fraction * nfiles)), nfiles - 1)
            order = np.random.default_rng(seed).permutation(nfiles)
            return cls(fraction, seed, frozenset(int(i) for i in order[:count]))
        return cls(fraction, seed, None)

    def held(self, chunk: Chunk) -> BoolArray:
        if self.files is not None:
            return np.full(chunk.size, chunk.file_index in self.files, dtype=bool)
        held: BoolArray = row_uniform(self.seed, chunk) < self.fraction
        return held

    def describe(self, found: Sequence[str]) -> dict[str, Any]:
        if self.files is not None:
            return {"split": "files", "files": [found[i] for i in sorted(self.files)],
                    "fraction": self.fraction}
        return {"split": "random", "seed": self.seed, "fraction": self.fraction}


def row_uniform(seed: int, chunk: Chunk) -> FloatArray:
    """A number in [0, 1) per row from a hash of (seed, file, row): the same rows whatever the
    chunking (splitmix64)."""
    rows = np.arange(chunk.start, chunk.start + chunk.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = rows + np.uint64((seed * 0x9E3779B97F4A7C15 + chunk.file_index)
                             & 0xFFFFFFFFFFFFFFFF)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return np.asarray((z >> np.uint64(11)).astype(np.float64) * 2.0**-53, dtype=np.float64)


@dataclass
class RowsSeen:
    """Per law: the rows dropped and the domain of the rows fitted, filled while reading."""

    dropped: int = 0
    low: dict[str, float] = field(default_factory=dict)
    high: dict[str, float] = field(default_factory=dict)

    def see(self, chunk: Chunk, features: Sequence[str], rows: BoolArray) -> None:
        if not rows.any():
            return
        everything = bool(rows.all())
        for name in features:
            values = chunk.columns[name] if everything else chunk.columns[name][rows]
            lo, hi = float(values.min()), float(values.max())
            self.low[name] = min(self.low.get(name, lo), lo)
            self.high[name] = max(self.high.get(name, hi), hi)

    def merge(self, other: RowsSeen) -> RowsSeen:
        """Both, as if one had seen the rows of the other too."""
        low, high = dict(self.low), dict(self.high)
        for name, lo in other.low.items():
            low[name] = min(low.get(name, lo), lo)
        for name, hi in other.high.items():
            high[name] = max(high.get(name, hi), hi)
        return RowsSeen(self.dropped + other.dropped, low, high)


def law_rows(law: LawSpec, chunk: Chunk, *, drop_invalid: bool = False,
             held: BoolArray | None = None, holdout: bool = False) -> tuple[BoolArray, int]:
    """The rows of `chunk` a law fits and how many of its rows it dropped as invalid.

    Its `where` and `filter` select; `held` (rows held out) removes rows, or, with `holdout`,
    keeps only those. Without `drop_invalid`, an invalid value in a column the law reads is a
    CaptureError naming file, column and row.
    """
    selectors = selector_columns(law, ())
    digest = chunk.spec.digest
    if digest is not None and chunk.has_digest_column:
        selectors.append(digest)
    ok = valid_or_raise(chunk, selectors, None, drop_invalid)
    rows = law_mask(law.where, law.fitted_filter, selection_data(chunk, ok), size=chunk.size)
    if not ok.all():
        rows &= ok
    if held is not None:
        rows &= held if holdout else ~held
    unmeasured = rows & chunk.empty(law.target)  # a region the step did not enter: left out
    rows &= ~unmeasured
    good = valid_or_raise(chunk, law.numbers(), rows, drop_invalid)
    if good.all():
        return rows, int(np.count_nonzero(unmeasured))
    dropped = int(np.count_nonzero(rows & ~good) + np.count_nonzero(unmeasured))
    return rows & good, dropped


def law_design(law: LawSpec, chunk: Chunk, rows: BoolArray,
               ) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    """(design matrix, target, weights or None) of a law over the given rows of `chunk`."""
    everything = bool(rows.all())
    x = design_matrix(chunk.columns, law.terms, None if everything else rows)
    y = chunk.columns[law.target] if everything else chunk.columns[law.target][rows]
    w = None
    if law.weight:
        w = chunk.columns[law.weight] if everything else chunk.columns[law.weight][rows]
    return x, y, w


def selector_columns(spec: LawSpec, by: Sequence[str]) -> list[str]:
    """The columns that select a law's rows, then the `--by` columns, once each."""
    return list(dict.fromkeys([*spec.selectors(), *by]))


def selection_data(chunk: Chunk, ok: BoolArray) -> Mapping[str, Any]:
    """The chunk's columns for where/filter, invalid entries replaced by a valid value of the
    same column, so that comparisons never meet None (the rows are masked out anyway)."""
    if bool(ok.all()):
        return chunk.columns
    data = dict(chunk.columns)
    for name, values in chunk.columns.items():
        if values.dtype.kind == "O":
            good = chunk.valid([name])
            if not good.all() and good.any():
                fixed = values.copy()
                fixed[~good] = values[int(np.flatnonzero(good)[0])]
                data[name] = fixed
    return data


def valid_or_raise(chunk: Chunk, columns: Sequence[str], rows: BoolArray | None,
                   drop: bool) -> BoolArray:
    """The rows (of `rows`) valid in `columns`; without `drop`, an error at the first bad one."""
    ok = chunk.valid(columns)
    if not drop and not (ok.all() if rows is None else ok[rows].all()):
        first = chunk.first_invalid(list(columns), rows)
        if first is not None:
            raise chunk.error(*first)
    return ok


__all__ = ["BoolArray", "FloatArray", "RowsSeen", "Split", "law_design", "law_rows",
           "row_uniform", "selection_data", "selector_columns", "valid_or_raise"]
