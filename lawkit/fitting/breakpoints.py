"""`K = auto`: the breakpoint search of `step(COL,auto)` and `hinge(COL,auto)`
(docs/fitting.md).

K is chosen among the midpoints between consecutive distinct values of COL in the law's fitted
rows, keeping at least two distinct values on each side, to minimise the method's own
objective: the sum of squares for ols and nnls (weighted with --weight), the Huber loss for
huber (at the MAD scale of the fit without the auto factors, fixed for every candidate so that
the losses compare), the biweight M-scale of the residuals for robust. At most `MAX_CANDIDATES`
candidates per factor: with more, the midpoints after evenly spaced quantiles of the distinct
values. At most two `auto` factors per formula: searched jointly (every pair) when the pairs
number at most `MAX_CANDIDATES`, else one after the other (the first with the terms holding the
second left out, then the second with the first fixed).

Every candidate is a full fit by the law's method: in memory, over the law's rows gathered
once; streamed, a full streamed fit each; on a Dask cluster, a fit over its tasks and a pass
that sums each task's objective (`Rows`: the same candidates and the same `objective`).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from lawkit.errors import FitError
from lawkit.lawfiles.terms import parse_term

FloatArray = npt.NDArray[np.float64]

MAX_CANDIDATES = 256
MAX_AUTO = 2
_ROBUST_SAMPLE = 20_000  # residuals the M-scale of a streamed candidate is computed on


class Rows(Protocol):
    """A law's fitted rows, as the search needs them."""

    def distinct(self, column: str) -> FloatArray:
        """The distinct values of `column`, sorted."""

    def fit(self, terms: tuple[str, ...]) -> tuple[float | None, FloatArray]:
        """Fit `terms` by the law's method: (its robust scale or None, the coefficients);
        no terms: (None, no coefficients); FitError when they cannot be fitted."""

    def loss(self, terms: tuple[str, ...], coef: FloatArray, scale: float | None) -> float:
        """The law method's `objective` of the residuals at `coef` (no terms: the target)."""


@dataclass(frozen=True)
class Choice:
    """The K chosen for one auto factor and what it bought."""

    factor: str
    """As written in the formula: `step(batch_size,auto)`."""
    knot: float
    without: float
    """The objective of the fit without the terms holding this factor."""
    objective: float
    """The objective with the factor at `knot`."""
    candidates: int

    def describe(self, method: str) -> str:
        """`step(batch_size,auto) -> K=60 (sum of squares 0.0012 without, 4.1e-05 with; 9
        candidates)`."""
        placed = parse_term(self.factor, allow_auto=True).factors[0].with_knot(self.knot).text
        return (f"{self.factor} -> {placed} ({OBJECTIVES[method]} {self.without:.6g} without, "
                f"{self.objective:.6g} with; {self.candidates} candidates)")


@dataclass(frozen=True)
class Search:
    """A finished search: the terms with every K placed, where each came from, the choices."""

    terms: tuple[str, ...]
    origin: dict[str, str]
    """Stored term -> formula term, for the terms that held an auto factor (`fit.breakpoints`)."""
    choices: tuple[Choice, ...]
    joint: bool


OBJECTIVES = {"ols": "sum of squares", "nnls": "sum of squares", "huber": "Huber loss",
              "robust": "M-scale"}


def auto_factors(terms: Sequence[str]) -> tuple[str, ...]:
    """The `auto` factors of `terms`, once each, in first-use order."""
    out: dict[str, None] = {}
    for term in terms:
        if term != "1":
            out.update(dict.fromkeys(f.text for f in parse_term(term, allow_auto=True).factors
                                     if f.auto))
    return tuple(out)


def candidates(values: FloatArray) -> FloatArray:
    """The candidate K of sorted distinct `values`: midpoints with at least two distinct values
    on each side, at most `MAX_CANDIDATES` (after evenly spaced quantiles when more)."""
    m = len(values)
    if m < 4:
        return np.zeros(0)
    index = np.arange(1, m - 2)
    if len(index) > MAX_CANDIDATES:
        index = np.unique(np.round(np.linspace(1, m - 3, MAX_CANDIDATES)).astype(np.int64))
    low, high = values[index], values[index + 1]
    mid = low + (high - low) / 2.0
    # K must split low (step 0: COL <= K) from high; rounding may land on high (or overflow).
    return np.asarray(np.where((mid < high) & np.isfinite(mid), mid, low), dtype=np.float64)


def place(terms: Sequence[str], knots: dict[str, float]) -> tuple[str, ...]:
    """`terms` with each auto factor named in `knots` at its K."""
    out = []
    for term in terms:
        if term == "1":
            out.append(term)
            continue
        factors = [f.with_knot(knots[f.text]) if f.auto and f.text in knots else f
                   for f in parse_term(term, allow_auto=True).factors]
        out.append(":".join(f.text for f in factors))
    return tuple(out)


def without(terms: Sequence[str], factors: Sequence[str]) -> tuple[str, ...]:
    """`terms` less those holding any of `factors`."""
    drop = set(factors)
    return tuple(t for t in terms if t == "1" or not any(
        f.text in drop for f in parse_term(t, allow_auto=True).factors))


def search(terms: Sequence[str], method: str, rows: Rows) -> Search:
    """Choose K for every auto factor of `terms` by `method`'s objective over `rows`."""
    autos = auto_factors(terms)
    if len(autos) > MAX_AUTO:
        raise FitError(f"{len(autos)} auto breakpoints ({', '.join(autos)}): at most "
                       f"{MAX_AUTO} per formula; give the others a number")
    grids = {}
    for factor in autos:
        column = parse_term(factor, allow_auto=True).factors[0].column
        values = rows.distinct(column)
        grid = candidates(values)
        if not len(grid):
            raise FitError(f"{factor}: {len(values)} distinct values of {column} in the fitted "
                           "rows; auto needs at least 4 (two on each side of K): give K as a "
                           "number")
        grids[factor] = grid
    base = without(terms, autos)
    base_scale, _coef = rows.fit(base)
    score = _objective(base_scale, rows)
    best: dict[str, float]
    joint = len(autos) == 1 or math.prod(len(g) for g in grids.values()) <= MAX_CANDIDATES
    if joint:
        best = _best(terms, [dict(zip(autos, combo, strict=True)) for combo in
                             itertools.product(*(grids[f].tolist() for f in autos))], score)
    else:
        first, second = autos
        best = _best(without(terms, [second]), [{first: k} for k in grids[first].tolist()],
                     score)
        best.update(_best(terms, [{**best, second: k} for k in grids[second].tolist()], score))
    placed = place(terms, best)
    final = score(placed)
    choices = []
    for factor in autos:
        others = {f: k for f, k in best.items() if f != factor}
        reduced = place(without(terms, [factor]), others)
        before = score(reduced)
        choices.append(Choice(factor, best[factor], before, final, len(grids[factor])))
    origin = {p: t for p, t in zip(placed, terms, strict=True) if p != t}
    return Search(terms=placed, origin=origin, choices=tuple(choices), joint=joint)


def _objective(base_scale: float | None, rows: Rows) -> Callable[[tuple[str, ...]], float]:
    def score(terms: tuple[str, ...]) -> float:
        scale, coef = rows.fit(terms)
        return rows.loss(terms, coef, base_scale if base_scale else scale)

    return score


def objective(method: str, chunks: Iterator[tuple[FloatArray, FloatArray | None]],
              scale: float | None) -> float:
    """The method's objective over residual chunks (r, w)."""
    if method == "robust":
        parts = [r if w is None else r[w > 0.0] for r, w in chunks]
        r = np.concatenate(parts) if parts else np.zeros(0)
        if len(r) > _ROBUST_SAMPLE:
            r = r[:: math.ceil(len(r) / _ROBUST_SAMPLE)]
        from lawkit.fitting.robust import m_scale

        return m_scale(r)
    total = 0.0
    for r, w in chunks:
        if method == "huber" and scale:
            from lawkit.fitting.robust import HUBER_C

            u = np.abs(r) / scale
            loss = np.where(u <= HUBER_C, 0.5 * u * u, HUBER_C * u - 0.5 * HUBER_C**2) * scale**2
        else:
            loss = r * r
        total += float(np.sum(loss if w is None else w * loss))
    return total


def _best(terms: Sequence[str], trials: list[dict[str, float]],
          score: Callable[[tuple[str, ...]], float]) -> dict[str, float]:
    found: tuple[float, dict[str, float]] | None = None
    last: FitError | None = None
    for knots in trials:
        try:
            value = score(place(terms, knots))
        except FitError as exc:  # a candidate the method cannot fit (rank, rows) is skipped
            last = exc
            continue
        if math.isfinite(value) and (found is None or value < found[0]):
            found = (value, dict(knots))
    if found is None:
        raise FitError(f"no candidate breakpoint could be fitted ({last.detail if last else ''})")
    return found[1]


__all__ = ["MAX_AUTO", "MAX_CANDIDATES", "Choice", "Rows", "Search", "auto_factors",
           "candidates", "objective", "place", "search", "without"]
