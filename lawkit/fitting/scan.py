"""The scan: the first pass over the captures, before any law is fitted. It checks the
selection and digest columns of every row, finds the `--by` groups, the digests the captures
name and the rows each law selects (`Scan`); streamed, it also writes the spill every later
pass reads (`lawkit.fitting.source`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from lawkit.fitting.captures.chunks import Chunk, ColumnSpec
from lawkit.fitting.request import FitRequest, LawSpec
from lawkit.fitting.rows import BoolArray, Split, selection_data, selector_columns, valid_or_raise
from lawkit.fitting.source import Source
from lawkit.lawfiles.where import law_mask


@dataclass
class Scan:
    """What one pass over the selection columns found; scans of consecutive rows merge."""

    records: int = 0
    fitted: int = 0
    """Rows selected by at least one law and not held out: the rows the fit uses."""
    groups: dict[int, list[tuple[Any, ...]]] = field(default_factory=dict)
    selected: dict[int, int] = field(default_factory=dict)
    digests: dict[str, list[str]] = field(default_factory=dict)
    undigested: list[str] = field(default_factory=list)
    dropped: int = 0
    """Rows dropped (with drop_invalid) for an invalid selection or digest value."""
    notes: list[str] = field(default_factory=list)
    """What the reader left out of the files (`Chunk.note`: a torn last line)."""

    def add(self, chunk: Chunk, specs: Sequence[LawSpec], by: Sequence[str], *,
            drop_invalid: bool = False, split: Split | None = None) -> None:
        """Scan a chunk: label validity, `by` groups, digests and row counts of every spec."""
        self.records += chunk.size
        named = chunk.has_digest_column or chunk.digest is not None
        if not named and chunk.start == 0:
            self.undigested.append(chunk.capture.shown)
        if chunk.note is not None and chunk.start == 0:
            self.notes.append(chunk.note)
        used = np.zeros(chunk.size, dtype=bool)
        selection_ok = np.ones(chunk.size, dtype=bool)
        for i, law in enumerate(specs):
            columns = selector_columns(law, by)
            if chunk.has_digest_column and chunk.spec.digest is not None:
                columns.append(chunk.spec.digest)
            ok = valid_or_raise(chunk, columns, None, drop_invalid)
            selection_ok &= ok
            rows = law_mask(law.where, law.fitted_filter, selection_data(chunk, ok),
                            size=chunk.size)
            if not ok.all():
                rows &= ok
            self.selected[i] = self.selected.get(i, 0) + int(np.count_nonzero(rows))
            used |= rows
            if by:
                seen = self.groups.setdefault(i, [])
                seen.extend(_group_keys(chunk, by, rows))
        self.dropped += int(chunk.size - np.count_nonzero(selection_ok))
        fitted = used if split is None else used & ~split.held(chunk)
        self.fitted += int(np.count_nonzero(fitted))
        for value in chunk.digests_of(used):
            files = self.digests.setdefault(value, [])
            if chunk.capture.shown not in files:
                files.append(chunk.capture.shown)

    def merge(self, after: Scan) -> Scan:
        """This scan and `after`, a scan of the rows that follow, as one (first-seen order
        kept, so a tree of merges gives what one pass in order gives)."""
        digests = {value: list(files) for value, files in self.digests.items()}
        for value, files in after.digests.items():
            known = digests.setdefault(value, [])
            known.extend(f for f in files if f not in known)
        keys = sorted({*self.groups, *after.groups})
        counted = sorted({*self.selected, *after.selected})
        return Scan(
            records=self.records + after.records, fitted=self.fitted + after.fitted,
            groups={i: list(dict.fromkeys([*self.groups.get(i, []), *after.groups.get(i, [])]))
                    for i in keys},
            selected={i: self.selected.get(i, 0) + after.selected.get(i, 0) for i in counted},
            digests=digests, undigested=[*self.undigested, *after.undigested],
            dropped=self.dropped + after.dropped, notes=[*self.notes, *after.notes])

    def sort_groups(self) -> Scan:
        """The scan with each spec's groups distinct and in order (numbers, then text)."""
        for i in self.groups:
            self.groups[i] = _sorted_keys(self.groups[i])
        return self


def scan_columns(spec: ColumnSpec, specs: Sequence[LawSpec], by: Sequence[str],
                 ) -> ColumnSpec:
    """The columns a streamed scan reads: the selection and digest columns, nothing else (a
    selection column that is also fitted is read, and validated, as a number)."""
    labels = tuple(c for c in spec.names()
                   if c != spec.digest and any(c in selector_columns(s, by) for s in specs))
    numbers = tuple(c for c in spec.numbers if c in labels)
    return ColumnSpec(
        numbers=numbers, labels=tuple(c for c in labels if c not in spec.numbers),
        digest=spec.digest, digest_length=spec.digest_length,
        nonnegative=tuple(c for c in spec.nonnegative if c in numbers),
        weights=tuple(c for c in spec.weights if c in numbers))


def scan_rows(source: Source, specs: Sequence[LawSpec], request: FitRequest) -> Scan:
    """The first pass: label validity, groups, digests, row counts (and, streamed, the
    spill of every column the laws read)."""
    scan = Scan()
    for chunk in source.first_pass():
        scan.add(chunk, specs, request.by, drop_invalid=request.drop_invalid,
                 split=Split.of(request, len(source.found)))
    return scan.sort_groups()


def _group_keys(chunk: Chunk, by: Sequence[str], rows: BoolArray) -> list[tuple[Any, ...]]:
    """The distinct tuples of `by` values among `rows`."""
    if not rows.any():
        return []
    coded = [_factorize(chunk.columns[c][rows]) for c in by]
    combined = np.zeros(int(np.count_nonzero(rows)), dtype=np.int64)
    for uniques, codes in coded:
        combined = combined * len(uniques) + codes
    keys = []
    for value in np.unique(combined).tolist():
        key = []
        for uniques, _codes in reversed(coded):
            value, at = divmod(value, len(uniques))
            key.append(uniques[at])
        keys.append(tuple(reversed(key)))
    return keys


def _factorize(values: Any) -> tuple[list[Any], npt.NDArray[np.int64]]:
    """(distinct values as Python values, the code of every row)."""
    if values.dtype.kind in "iufb":
        uniques, codes = np.unique(values, return_inverse=True)
        return [_python(v) for v in uniques], codes.astype(np.int64).reshape(-1)
    if len(values) > 100_000:  # pandas' C hash table; its import costs more on small inputs
        import pandas as pd

        codes, uniques = pd.factorize(values)
        return [_python(v) for v in uniques], np.asarray(codes, dtype=np.int64)
    index: dict[Any, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values.tolist()),
                        dtype=np.int64, count=len(values))
    return list(index), codes


def _python(value: Any) -> Any:
    """A numpy scalar as the Python value it stands for (int stays int)."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def _sorted_keys(keys: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    def order(key: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple((0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool)
                     else (1, 0, str(v)) for v in key)

    return sorted(dict.fromkeys(keys), key=order)


__all__ = ["Scan", "scan_columns", "scan_rows"]
