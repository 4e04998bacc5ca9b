"""What `lawkit fit` is asked to do: the request (the flags as values, built by
`build_request` for the CLI and the Python API alike) and each law to fit (a `LawSpec`).

A law to fit is a `LawSpec`: name, target, terms, the `where` mapping and `filter` expression
that select its rows, the method and an optional weight column.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lawkit.errors import FitError
from lawkit.fitting.formula import Formula
from lawkit.lawfiles.where import format_where, law_columns

CURRENT = "current"


@dataclass(frozen=True)
class FitRequest:
    """Everything `lawkit fit` is asked to do (the CLI flags, as values)."""

    captures: Sequence[str | Path]
    out: Path
    formulas: Sequence[str] = ()
    by: Sequence[str] = ()
    where: str | None = None
    method: str | None = None
    """None: ols for a new law, a refitted law's own method."""
    holdout: float | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    captured_on: str | None = None
    """A digest, or "current" for the workspace's current digest."""
    allow_negative: bool = False
    allow_mixed_digests: bool = False
    drop_invalid: bool = False
    weight: str | None = None
    chunk_rows: int | None = None
    """Stream the captures in chunks of this many rows; None: in memory unless they are big."""
    seed: int = 0
    now: datetime.datetime | None = None
    dask: str | None = None
    """A Dask scheduler address, or local[:N]: read and fold the rows on that cluster
    (`lawkit.fitting.distributed`); None: in this process."""
    cv: str | None = None
    """Cross-validate every law: a column (leave one of its values out in turn) or a number
    of folds (`lawkit.fitting.crossval`)."""
    quiet: bool = False
    """No progress bar on stderr (a streamed fit draws one per pass when stderr is a
    terminal)."""
    footprint: Path | None = None
    """A footprint of the capture runs (`lawkit footprint record`): refused unless recorded on
    the captures' digest, and named with its sha256 in the `fit` entry (docs/footprints.md)."""
    why: str | None = None
    """Why the laws of `out` that the fit keeps may move to its digest: with it, a fit that
    moves the file's key appends a `rekey` entry for them; without it, it refuses."""
    require: str | None = None
    """The verdict every kept law must have when the fit re-keys them (as `rekey --require`)."""
    trace_map: Path | None = None
    """A TOML file mapping traces to rows (`[trace]`); None: the workspace's `[trace]`."""


@dataclass(frozen=True)
class LawSpec:
    """One law to fit: what it predicts from what, on which rows, how."""

    name: str
    target: str
    terms: tuple[str, ...]
    where: dict[str, Any] | None = None
    filter: str | None = None
    method: str = "ols"
    weight: str | None = None
    bounds: str | None = None
    """Conditions of `--where` on the law's own feature columns: they bound the rows fitted
    (its domain), not the rows it applies to (`fit.bounds`; docs/fitting.md)."""

    @property
    def fitted_filter(self) -> str | None:
        """The filter of the rows fitted: `filter` and `bounds`."""
        if self.bounds is None:
            return self.filter
        return self.bounds if self.filter is None else f"({self.filter}) and ({self.bounds})"

    @property
    def features(self) -> list[str]:
        """The feature columns of the terms, in first-use order."""
        return Formula(self.target, self.terms, "").columns()

    def numbers(self) -> list[str]:
        """The columns fitted: target, features, weight."""
        out = dict.fromkeys([self.target, *self.features])
        if self.weight:
            out[self.weight] = None
        return list(out)

    def selectors(self) -> list[str]:
        """The columns that select its rows (those of its bounds included)."""
        return law_columns(self.where, self.fitted_filter)

    def selection(self) -> str:
        """Its where and filter as one expression, for messages."""
        return format_where(self.where, self.filter)


def build_request(
    captures: str | Path | Sequence[str | Path],
    *,
    out: str | Path,
    formula: str | Sequence[str] = (),
    by: str | Sequence[str] | None = None,
    labels: Mapping[str, str] | Sequence[str] | None = None,
    holdout: float | None = None,
    cv: str | int | None = None,
    footprint: str | Path | None = None,
    where: str | None = None,
    method: str | None = None,
    name: str | None = None,
    captured_on: str | None = None,
    allow_negative: bool = False,
    allow_mixed_digests: bool = False,
    drop_invalid: bool = False,
    weight: str | None = None,
    dask: str | None = None,
    why: str | None = None,
    require: str | None = None,
    trace_map: str | Path | None = None,
) -> FitRequest:
    """The FitRequest of `lawkit fit`'s arguments, as the CLI and `lawkit.fit` take them.

    `formula` and `by` take one value or several, `by` as `COL[,COL]` (whitespace around a
    name ignored); `labels` is a mapping or `KEY=VALUE` items (`--label`).
    """
    return FitRequest(
        captures=[captures] if isinstance(captures, (str, Path)) else list(captures),
        out=Path(out), formulas=[formula] if isinstance(formula, str) else list(formula),
        by=by_columns(by), where=where, method=method, holdout=holdout,
        labels=label_values(labels), name=name, captured_on=captured_on,
        allow_negative=allow_negative, allow_mixed_digests=allow_mixed_digests,
        drop_invalid=drop_invalid, weight=weight, dask=dask,
        cv=None if cv is None else str(cv),
        footprint=Path(footprint) if footprint is not None else None, why=why,
        require=require, trace_map=Path(trace_map) if trace_map is not None else None)


def by_columns(by: str | Sequence[str] | None) -> list[str]:
    """The `--by` columns, once each: "" (or nothing) groups by nothing; an empty name (`a,,b`,
    `a,`) or a column named twice is an error, not a guess at what was meant."""
    items = [by] if isinstance(by, str) else list(by or ())
    if items == [""]:
        return []
    shown = ",".join(items)
    columns: list[str] = []
    for item in items:
        for column in (c.strip() for c in item.split(",")):
            if not column:
                raise FitError(f"--by {shown!r}: an empty column name: expected COL[,COL], "
                               "e.g. --by model,tp")
            if column in columns:
                raise FitError(f"--by {shown!r}: column {column!r} is named twice: name each "
                               "column once")
            columns.append(column)
    return columns


def label_values(labels: Mapping[str, str] | Sequence[str] | None) -> dict[str, str]:
    """The file's labels from a mapping or `KEY=VALUE` items; a key is stripped and not empty."""
    out: dict[str, str] = {}
    for key, value, given in _label_items(labels or ()):
        if not key.strip():
            raise FitError(f"--label {given!r}: expected KEY=VALUE")
        out[key.strip()] = value
    return out


def _label_items(labels: Mapping[str, str] | Sequence[str]) -> Iterator[tuple[str, str, str]]:
    """(key, value, the item as given) of each label; an item without `=` has no key."""
    if isinstance(labels, Mapping):
        for key, value in labels.items():
            yield key, value, f"{key}={value}"
        return
    for item in labels:
        key, sep, value = item.partition("=")
        yield key if sep else "", value, item


__all__ = ["CURRENT", "FitRequest", "LawSpec", "build_request", "by_columns", "label_values"]
