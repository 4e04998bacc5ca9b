"""What `lawkit fit` is asked to do: the request (the flags as values) and each law to fit (a
`LawSpec`).

A law to fit is a `LawSpec`: name, target, terms, the `where` mapping and `filter` expression
that select its rows, the method and an optional weight column.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
    the captures' digest, and named with its sha256 in the `fit` entry (DESIGN section 11)."""


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
    (its domain), not the rows it applies to (DESIGN.md section 8: `fit.bounds`)."""

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


__all__ = ["CURRENT", "FitRequest", "LawSpec"]
