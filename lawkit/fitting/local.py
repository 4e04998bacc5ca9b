"""Fit each law in this process (`LocalRunner`): every law's passes over the rows of a
`Source` (in memory, or streamed from the spill), its breakpoint search, its held-out score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from lawkit.errors import FitError
from lawkit.fitting import breakpoints, methods, runner
from lawkit.fitting.breakpoints import Search, auto_factors
from lawkit.fitting.captures.chunks import Chunk, ColumnSpec
from lawkit.fitting.captures.files import Capture
from lawkit.fitting.formula import design_matrix
from lawkit.fitting.progress import PassBar
from lawkit.fitting.report import FittedLaw
from lawkit.fitting.request import FitRequest, LawSpec
from lawkit.fitting.rows import BoolArray, FloatArray, RowsSeen, Split, law_design, law_rows
from lawkit.fitting.scan import Scan, scan_rows
from lawkit.fitting.solve import workers_for
from lawkit.fitting.source import Source, chunk_rows_for, start_hashing
from lawkit.fitting.spill import DesignSpill
from lawkit.fitting.stats import law_entry


class LocalRunner:
    """The rows read in this process: kept in memory, or streamed (the spill removed when
    the runner closes: use it as a context manager)."""

    def __init__(self, found: Sequence[Capture], spec: ColumnSpec,
                 request: FitRequest) -> None:
        self._hashes = start_hashing(found)
        chunk_rows = chunk_rows_for(request, found, spec)
        self.bar = PassBar(quiet=request.quiet or chunk_rows is None)  # in memory: seconds
        self.source = Source(found, spec, chunk_rows, self.bar)
        self.passes: dict[str, int] = {}

    def scan(self, specs: Sequence[LawSpec], request: FitRequest) -> Scan:
        before = self.source.passes
        scan = scan_rows(self.source, specs, request)
        self._count("scan", before)
        return scan

    def fit(self, laws: Sequence[LawSpec], request: FitRequest, split: Split | None,
            ) -> list[FittedLaw]:
        out = []
        for i, law in enumerate(laws):
            self.bar.law(f"law {i + 1} of {len(laws)}, {law.name}", law.method,
                         methods.METHODS[law.method].typical_passes)
            before = self.source.passes
            out.append(fit_one(law, self.source, request, split))
            self._count(law.name, before)
        return out

    def _count(self, name: str, before: int) -> None:
        self.passes[name] = self.passes.get(name, 0) + self.source.passes - before

    def hashes(self) -> list[str]:
        return self._hashes()

    def __enter__(self) -> LocalRunner:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__()
        self.source.close()


def fit_one(law: LawSpec, source: Source, request: FitRequest, split: Split | None,
            ) -> FittedLaw:
    """One law fitted by its method over its rows of `source`."""
    seen = RowsSeen()
    features = law.features
    search: Search | None = None

    passes = 0
    designs: DesignSpill | None = None

    def first_pass() -> Iterator[tuple[FloatArray, FloatArray, FloatArray | None]]:
        # Every pass reads the same rows: the first counts the drops and the domain and, when
        # streamed, spills the design every later pass reads.
        for chunk in source.chunks():
            rows, dropped = law_rows(law, chunk, drop_invalid=request.drop_invalid,
                                     held=split.held(chunk) if split else None)
            seen.dropped += dropped
            seen.see(chunk, features, rows)
            if rows.any():
                piece = law_design(law, chunk, rows)
                if designs is not None:
                    designs.write(*piece)
                yield piece

    def each(fn: Callable[[FloatArray, FloatArray, FloatArray | None], Any]) -> Iterator[Any]:
        nonlocal passes
        passes += 1
        if designs is None or passes == 1:
            yield from runner.in_turn(first_pass)(fn)
            return
        source.record_pass(designs.rows)
        for reply, rows in designs.each(lambda x, y, w: (fn(x, y, w), len(y)),
                                        workers_for(designs.rows)):
            yield reply
            source.bar.advance(rows)

    try:
        if auto_factors(law.terms):
            rows: breakpoints.Rows = _StreamRows(law, source, request, split) \
                if source.streaming else _MemoryRows(law, source, request, split)
            search = breakpoints.search(law.terms, law.method, rows)
            law = replace(law, terms=search.terms)
        steps = methods.passes(law.method, law.terms)
        if source.streaming:
            with DesignSpill.create() as designs:
                result = runner.run(steps, each)
        else:
            parts = list(first_pass())
            if not parts:
                raise FitError("no rows to fit")
            x, y, w = _stack(parts)
            parts.clear()
            result = runner.run_arrays(steps, x, y, w)
            del x, y, w
    except FitError as exc:
        if seen.dropped and exc.detail == "no rows to fit":
            exc = FitError("every row it selects was dropped: invalid, or with an empty target "
                           "cell (a region no step entered)")
        selection = law.selection()
        where = f" (where {selection})" if selection else ""
        raise FitError(f"law {law.name}{where}: {exc.detail}") from None
    holdout = None
    if split is not None:
        holdout = _score_holdout(law, result.coef, source, request, split)
    domain = {name: [seen.low[name], seen.high[name]] for name in features if name in seen.low}
    mapping = law_entry(law, result, domain=domain, dropped=seen.dropped, holdout=holdout,
                        split=split.describe([c.shown for c in source.found]) if split else None,
                        origin=search.origin if search else None)
    return FittedLaw(spec=law, law=mapping, n=result.n, dropped=seen.dropped, search=search)


class _MemoryRows:
    """A law's fitted rows gathered once, for a breakpoint search in memory."""

    def __init__(self, law: LawSpec, source: Source, request: FitRequest,
                 split: Split | None) -> None:
        self.law = law
        parts: dict[str, list[Any]] = {c: [] for c in law.numbers()}
        for chunk in source.chunks():
            rows, _dropped = law_rows(law, chunk, drop_invalid=request.drop_invalid,
                                      held=split.held(chunk) if split else None)
            if rows.any():
                for name, values in parts.items():
                    values.append(chunk.columns[name][rows])
        self.columns = {name: np.asarray(np.concatenate(values) if values else [],
                                         dtype=np.float64) for name, values in parts.items()}
        self._last: tuple[tuple[str, ...], FloatArray] | None = None
        if not len(self.columns[law.target]):
            raise FitError("no rows to fit")

    def distinct(self, column: str) -> FloatArray:
        return np.unique(self.columns[column])

    def _design(self, terms: tuple[str, ...]) -> FloatArray:
        # the design of the candidate just fitted is the one its loss needs next
        if self._last is None or self._last[0] != terms:
            self._last = (terms, design_matrix(self.columns, terms))
        return self._last[1]

    def fit(self, terms: tuple[str, ...]) -> tuple[float | None, FloatArray]:
        if not terms:
            return None, np.zeros(0)
        y = self.columns[self.law.target]
        w = self.columns[self.law.weight] if self.law.weight else None
        result = runner.run_arrays(methods.passes(self.law.method, terms), self._design(terms),
                                   y, w)
        return result.scale, np.asarray(result.coef, dtype=np.float64)

    def loss(self, terms: tuple[str, ...], coef: FloatArray, scale: float | None) -> float:
        y = self.columns[self.law.target]
        w = self.columns[self.law.weight] if self.law.weight else None
        r = y - methods.matvec(self._design(terms), coef) if terms else y
        return breakpoints.objective(self.law.method, iter([(r, w)]), scale)


class _StreamRows:
    """A law's fitted rows read again from the captures: every candidate a full streamed
    fit, then one more pass for its objective."""

    def __init__(self, law: LawSpec, source: Source, request: FitRequest,
                 split: Split | None) -> None:
        self.law, self.source, self.request, self.split = law, source, request, split

    def _rows(self, law: LawSpec) -> Iterator[tuple[Chunk, BoolArray]]:
        for chunk in self.source.chunks():
            rows, _dropped = law_rows(law, chunk, drop_invalid=self.request.drop_invalid,
                                      held=self.split.held(chunk) if self.split else None)
            if rows.any():
                yield chunk, rows

    def distinct(self, column: str) -> FloatArray:
        found = [np.unique(chunk.columns[column][rows]) for chunk, rows in self._rows(self.law)]
        return np.unique(np.concatenate(found)) if found else np.zeros(0)

    def fit(self, terms: tuple[str, ...]) -> tuple[float | None, FloatArray]:
        if not terms:
            return None, np.zeros(0)
        law = replace(self.law, terms=terms)
        result = runner.run(methods.passes(law.method, terms), runner.in_turn(
            lambda: (law_design(law, c, r) for c, r in self._rows(law))))
        return result.scale, np.asarray(result.coef, dtype=np.float64)

    def loss(self, terms: tuple[str, ...], coef: FloatArray, scale: float | None) -> float:
        law = replace(self.law, terms=terms or ("1",))

        def chunks() -> Iterator[tuple[FloatArray, FloatArray | None]]:
            for chunk, rows in self._rows(self.law):
                x, y, w = law_design(law, chunk, rows)
                # a copy of y: the objective may keep residuals past the next block, and a
                # spilled chunk's arrays are views of the buffer that block overwrites
                yield (y - methods.matvec(x, coef) if terms else np.array(y)), w

        return breakpoints.objective(self.law.method, chunks(), scale)


def _stack(parts: list[tuple[FloatArray, FloatArray, FloatArray | None]],
           ) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    if len(parts) == 1:
        return parts[0]
    x = np.asfortranarray(np.concatenate([p[0] for p in parts]))
    y = np.concatenate([p[1] for p in parts])
    w = None if parts[0][2] is None else np.concatenate([p[2] for p in parts
                                                         if p[2] is not None])
    return x, y, w


def _score_holdout(law: LawSpec, coef: Sequence[float], source: Source, request: FitRequest,
                   split: Split) -> dict[str, Any]:
    b = np.asarray(coef, dtype=np.float64)
    sums = methods.Summary()
    for chunk in source.chunks():
        rows, _dropped = law_rows(law, chunk, drop_invalid=request.drop_invalid,
                                  held=split.held(chunk), holdout=True)
        if not rows.any():
            continue
        x = design_matrix(chunk.columns, law.terms, rows)
        y = chunk.columns[law.target][rows]
        sums = sums.merge(methods.Summary.of(y, y - x @ b))
    return sums.scores()


__all__ = ["LocalRunner", "fit_one"]
