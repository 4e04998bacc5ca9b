"""The fitting methods, each written once as passes over chunks of rows.

A method is a generator (`passes`): it yields a *request* (what it needs of every row), is sent
the *reply* (the merged answer over all rows) and finally returns a `solve.FitResult`. A runner
answers a request by folding every chunk ``(x, y, w)`` of the law's rows into a reply with
`answer` and combining the replies of disjoint rows with `merge`; the local runner
(`lawkit.fitting.runner`) does it over chunks in this process, the Dask runner
(`lawkit.fitting.distributed`) over the partitions of a cluster. A reply is a small,
serialisable value (docs/fitting.md): an R factor, sums, histograms, a bounded sample.

Requests:

- `Fold`: the R factor of the rows (`solve.fold_chunk`), or of the rows under robust weights
  (an IRLS step: `solve.refold_chunk`) → `Folded`;
- `Residuals`: the refinement pass at given coefficients (`solve.residual_pass`) →
  `solve.ResidualPass`;
- `Select`: counts of |r| by their bits, for the exact median by radix selection, or the
  values near the previous median and the count below them → `Selected`;
- `Sample`: a bounded sample of the rows (the rows of the `SAMPLE_ROWS` smallest hashes of their
  values, so it does not depend on how the rows are cut into chunks) → `Sampled`;
- `Stats`: unweighted sums of the residuals at the final coefficients → `Summary`.

Methods (`METHODS`, the one registry):

- ``ols``: fold, then iterative refinement to the float64 limit (`solve.refine`);
- ``huber``: Huber M-estimate (c = 1.345) by IRLS, each step one weighted fold that also
  gathers the |r| its weights come from near the previous median and counts those below them
  (the next step's MAD scale, exact); where the median is not among them, and for the
  least-squares start, radix selection passes (20 bits, then the bucket gathered); the final
  step refined;
- ``robust``: MM-estimate: the high-breakdown start (FAST-LTS and the biweight M-scale of its
  residuals, `lawkit.fitting.robust`) is computed on a bounded sample of at most
  `SAMPLE_ROWS` (20,000) rows, all rows when there are fewer, taken by the first fold; then
  Tukey biweight IRLS (c = 4.685) with that scale fixed, every step a weighted fold over *all*
  rows (the check that ends the last one a light pass when the steps shrink steadily);
- ``nnls``: every coefficient >= 0: Lawson-Hanson on the folded R factor (min ‖R b - Q'y‖
  subject to b >= 0 is the rows' problem up to a constant), then the free coefficients refitted
  by one more fold and refined.

Statistics (docs/fitting.md): ``n``, ``r2``, ``rmse``, ``mape`` and ``resid_sd`` describe the
law as it predicts: unweighted over every fitted row (a final `Stats` pass when the fit was
weighted, by the user or by the method), so `fit` prints what `score` prints on the same rows.
Huber and robust add ``scale`` (their own robust scale) and ``downweighted`` (rows of final
robust weight < 0.5); their standard errors are those of the final weighted step.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from lawkit.errors import FitError
from lawkit.fitting import robust, solve

Array = solve.Array

SAMPLE_ROWS = 20_000
"""At most this many rows (a sample, chosen by a hash of their values) feed the high-breakdown
start of ``robust``; its reweighting passes use every row."""
_DIGIT = 12  # bits of |r| a selection pass resolves: histograms of 4096 counts
# The first pass resolves more: sign, exponent and 8 bits of mantissa (2^20 counts, 8 MiB),
# after which the median's bucket (values within 0.4% of it) is few enough to gather at
# tens of millions of rows: two passes per median where 12 bits took three.
_FIRST_DIGIT = 20
_GATHER = 1 << 16  # candidates for the median few enough to send as values
# The first pass of a huber step after the first gathers the values in the first-digit buckets
# around the previous step's median (as many as the last counts put there, up to this) and
# counts the values below them: when a middle rank falls among them the median is exact after
# one pass with no histogram, else radix selection follows.
_NEAR = 1 << 19
_HEAD = 4096  # rows of the design huber keeps from its first fold, to tell a step moved
_MOVED = 1e-10  # an IRLS step that moves no fitted value by more than this x scale has converged


def matvec(x: Array, b: Array) -> Array:
    """X b on a Fortran-ordered design: the same order of operations, so the same residuals
    bit for bit, whatever the chunking."""
    return np.asarray(np.asfortranarray(x) @ b, dtype=np.float64)


def _peak(x: Array, step: Array) -> float:
    """max |X step| over rows ``x`` (at least one): how far a step moved the fitted values."""
    moved = matvec(x, step)
    return max(float(moved.max()), -float(moved.min()))


# -- requests -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Weights:
    """Robust weights, recomputed from each chunk's rows at ``coef``: ``huber``
    min(1, c·scale/|r|), ``biweight`` (1 - (r/(c·scale))²)² inside c·scale, ``exact`` 1 where
    the row lies on the fit (|r| <= 4 eps |y|)."""

    kind: str
    coef: Array
    scale: float
    c: float = 0.0

    def of(self, x: Array, y: Array, seen: Callable[[Array], None] | None = None) -> Array:
        """The weights of rows ``x``, ``y`` (computed in one array, in place); ``seen`` is
        given |r| first (``huber`` only), before the array becomes the weights."""
        out = matvec(x, self.coef)
        np.subtract(y, out, out=out)  # the residuals
        if self.kind == "huber":
            np.abs(out, out=out)
            if seen is not None:
                seen(out)
            np.maximum(out, np.finfo(np.float64).tiny, out=out)
            np.divide(self.c * self.scale, out, out=out)
            return np.minimum(out, 1.0, out=out)
        if self.kind == "biweight":
            np.divide(out, self.c * self.scale, out=out)
            np.multiply(out, out, out=out)
            # u² < 1 exactly where |u| < 1, and 1 - u² <= 0 elsewhere: (1 - u²)² inside, 0 out
            np.subtract(1.0, out, out=out)
            np.maximum(out, 0.0, out=out)
            return np.multiply(out, out, out=out)
        return (np.abs(out) <= solve.EPS * np.abs(y) * 4).astype(np.float64)


@dataclass(frozen=True)
class Fold:
    """Fold the rows (only `columns` of the design, if given, named `terms`; times robust
    weights, if given); with `step`, also max |X step| (whether the previous IRLS step still
    moved); with `near` (``huber`` weights only), also gather the |r| the weights are computed
    from in those first-digit buckets, and count those below them, as `Select.near` does."""

    terms: tuple[str, ...]
    columns: tuple[int, ...] | None = None
    robust: Weights | None = None
    step: Array | None = None
    near: tuple[int, int] | None = None
    sample: Sample | None = None
    """Also the rows `Sample` takes (a first fold: the same sample whatever the pass)."""
    head: int = 0
    """Also keep the design of the first `head` rows (a first fold)."""


@dataclass(frozen=True)
class Residuals:
    """The residual pass at `coef` (`solve.residual_pass`), with the fold's columns and weights."""

    coef: Array
    columns: tuple[int, ...] | None = None
    robust: Weights | None = None


@dataclass(frozen=True)
class Select:
    """Counts of |y - X coef| (rows of weight > 0) by their next bits in each bucket
    (prefix, shift: the values whose bits >> shift equal prefix; shift 64 is every value),
    or, for a bucket to gather, its values; and max |X step| when `step` is given."""

    coef: Array
    buckets: tuple[tuple[int, int, bool], ...]
    step: Array | None = None
    near: tuple[int, int] | None = None
    """First-digit buckets (lowest, highest) whose values to gather (at most `_NEAR` of them:
    past that, none), and below which to count the values."""


@dataclass(frozen=True)
class Sample:
    """At most `size` rows of weight > 0: those of the smallest hashes of their values."""

    size: int
    seed: int = 0


@dataclass(frozen=True)
class Stats:
    """Unweighted residual sums at `coef`; with `robust`, the rows it weighs below 0.5."""

    coef: Array
    robust: Weights | None = None


Request = Fold | Residuals | Select | Sample | Stats


# -- replies (mergeable: ``a.merge(b)`` is a's rows then b's) -----------------------------------


@dataclass
class Folded:
    """A fold over some rows: its R factor (None before any row), max |X step|; max |y|, the
    rows of weight > 0 and whether any row carried a user weight, which only a fold without
    robust weights takes (an IRLS step's has them from the first fold)."""

    state: solve.PartialFit | None = None
    ymax: float = 0.0
    kept: int = 0
    moved: float = 0.0
    weighted: bool = False
    near: Any = None
    """As `Selected.near` and `Selected.below`, for a `Fold` with `near`."""
    below: int = 0
    sample: Sampled | None = None
    """For a `Fold` with `sample`: the rows taken."""
    head: Array | None = None
    """For a `Fold` with `head`: the design of the first rows."""

    def merge(self, other: Folded) -> Folded:
        """Both folds, ``self``'s rows first."""
        out = replace(self)
        out.absorb(other)
        return out

    def absorb(self, other: Folded) -> None:
        """Merge ``other`` (rows after these) into this fold."""
        if self.state is None or other.state is None:
            self.state = self.state if other.state is None else other.state
        else:
            self.state = solve.merge(self.state, other.state)
        self.ymax = max(self.ymax, other.ymax)
        self.kept += other.kept
        self.moved = max(self.moved, other.moved)
        self.weighted = self.weighted or other.weighted
        self.near = _joined(self.near, other.near)
        self.below += other.below
        if other.sample is not None:
            self.sample = other.sample if self.sample is None else self.sample.merge(other.sample)
        if self.head is None:
            self.head = other.head


@dataclass
class Selected:
    """Per bucket of a `Select`: the counts by next bits, or the values; max |X step|; the
    bits of the values in the `near` buckets (None when there were more than `_NEAR`), and
    the count of values below those buckets."""

    found: list[Any]
    moved: float = 0.0
    near: Any = None
    below: int = 0

    def merge(self, other: Selected) -> Selected:
        out = Selected([a.copy() for a in self.found], self.moved, self.near, self.below)
        out.absorb(other)
        return out

    def absorb(self, other: Selected) -> None:
        """Merge ``other`` (rows after these) into this reply, the counts added in place."""
        for k, (a, b) in enumerate(zip(self.found, other.found, strict=True)):
            if a.dtype.kind == "i":
                a += b
            else:
                self.found[k] = np.concatenate([a, b])
        self.moved = max(self.moved, other.moved)
        self.near = _joined(self.near, other.near)
        self.below += other.below


def _joined(a: Any, b: Any) -> Any:
    """Two gathers of near values as one: None (too many) when either is, or when together they
    pass `_NEAR`."""
    if a is None or b is None or a.size + b.size > _NEAR:
        return None
    return np.concatenate([a, b])


@dataclass
class Sampled:
    """A bounded sample: rows ``x``, ``y`` in the order they came, and their hash keys."""

    size: int
    x: Array
    y: Array
    keys: Any

    def merge(self, other: Sampled) -> Sampled:
        x = np.concatenate([self.x, other.x])
        y = np.concatenate([self.y, other.y])
        keys = np.concatenate([self.keys, other.keys])
        if keys.shape[0] > self.size:
            # The rows of the `size` smallest keys, kept in arrival order.
            pick = np.sort(np.argsort(keys, kind="stable")[: self.size])
            x, y, keys = x[pick], y[pick], keys[pick]
        return Sampled(self.size, x, y, keys)


@dataclass
class Summary:
    """Unweighted over some rows: n, mean and M2 of y, SSR, the MAPE sums; downweighted rows."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    ssr: float = 0.0
    ape: float = 0.0
    nonzero: int = 0
    down: int = 0

    @classmethod
    def of(cls, y: Array, r: Array) -> Summary:
        """The sums of rows with targets ``y`` and residuals ``r``."""
        if not y.size:
            return cls()
        mean = float(np.mean(y))
        nz = y != 0.0
        return cls(n=y.shape[0], mean=mean, m2=float(np.sum((y - mean) ** 2)),
                   ssr=float(np.dot(r, r)), ape=float(np.sum(np.abs(r[nz]) / np.abs(y[nz]))),
                   nonzero=int(np.count_nonzero(nz)))

    def scores(self) -> dict[str, Any]:
        """``n``, and where there are rows ``r2``, ``rmse`` and ``mape``, as a score prints them."""
        out: dict[str, Any] = {"n": self.n}
        if self.n:
            out["r2"] = 1.0 - self.ssr / self.m2 if self.m2 > 0.0 else math.nan
            out["rmse"] = math.sqrt(self.ssr / self.n)
            out["mape"] = self.ape / self.nonzero if self.nonzero else math.nan
        return out

    def merge(self, other: Summary) -> Summary:
        out = replace(self)
        if other.n:
            # Chan, Golub & LeVeque's pairwise update of mean and M2.
            delta = other.mean - out.mean
            total = out.n + other.n
            out.mean += delta * other.n / total
            out.m2 += other.m2 + delta * delta * out.n * other.n / total
            out.n = total
        out.ssr += other.ssr
        out.ape += other.ape
        out.nonzero += other.nonzero
        out.down += other.down
        return out


Reply = Folded | solve.ResidualPass | Selected | Sampled | Summary | None


def merge(a: Any, b: Any) -> Any:
    """Two replies over disjoint rows as one, ``a``'s rows first (None is no rows)."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, solve.ResidualPass):
        return solve.merge(a, b)
    return a.merge(b)


def absorb(a: Any, b: Any) -> Any:
    """`merge`, where ``a`` is the caller's own and may be updated in place (a fold's R factor,
    a selection's counts: no copy of them per chunk)."""
    if isinstance(a, Folded | Selected):
        a.absorb(b)
        return a
    return merge(a, b)


# -- answering a request from one chunk ---------------------------------------------------------


def answer(request: Request, reply: Any, x: Array, y: Array, w: Array | None) -> Any:
    """``reply`` with the chunk's rows folded in (a reply is the caller's own value, so it may
    be updated in place); ``reply`` None starts one."""
    if isinstance(request, Fold):
        return _fold(request, reply, x, y, w)
    if isinstance(request, Residuals):
        weights = _weights(request.robust, x, y, w)[0]
        if request.columns is not None:
            x = x[:, request.columns]
        return solve.residual_pass(reply, request.coef, x, y, weights)
    if isinstance(request, Select):
        return _select(request, reply, x, y, w)
    if isinstance(request, Sample):
        return _sample(request, reply, x, y, w)
    return _stats(request, reply, x, y, w)


def _weights(robust_weights: Weights | None, x: Array, y: Array, w: Array | None,
             ) -> tuple[Array | None, Array | None]:
    """(user weights times robust weights, robust weights) of the rows."""
    if robust_weights is None:
        return w, None
    rw = robust_weights.of(x, y)
    return (rw if w is None else w * rw), rw


def _fold(request: Fold, reply: Folded | None, x: Array, y: Array, w: Array | None) -> Folded:
    out = reply if reply is not None else Folded(
        near=np.zeros(0, dtype=np.uint64) if request.near is not None else None)
    weights: Array | None
    rw: Array | None
    if request.near is not None and request.robust is not None:
        near = request.near

        def seen(size: Array) -> None:
            _gather_near(out, size if w is None else size[w > 0.0], near)

        found = request.robust.of(x, y, seen)
        weights, rw = (found if w is None else w * found), found
    else:
        weights, rw = _weights(request.robust, x, y, w)
    design = x if request.columns is None else x[:, request.columns]
    if rw is None:
        out.state = solve.fold_chunk(out.state, design, y, weights, terms=request.terms)
        if y.size:
            out.ymax = max(out.ymax, float(y.max()), -float(y.min()))
        out.kept += len(y) if w is None else int(np.count_nonzero(w > 0.0))
        out.weighted = out.weighted or w is not None
    else:  # an IRLS step: the rows the first fold checked and counted, under new weights
        out.state = solve.refold_chunk(out.state, design, y, weights, terms=request.terms)
    if request.step is not None and y.size:
        out.moved = max(out.moved, _peak(x, request.step))
    if request.sample is not None:
        out.sample = _sample(request.sample, out.sample, x, y, w)
    if request.head and out.head is None and y.size:
        out.head = np.array(x[: request.head], dtype=np.float64, order="F")
    return out


def _width(shift: int) -> int:
    """The bits a selection pass resolves below the first `64 - shift` of the bucket."""
    return _FIRST_DIGIT if shift == 64 else min(_DIGIT, shift)


def _gather_near(out: Selected | Folded, size: Array, near: tuple[int, int]) -> None:
    """Into ``out``: the bits of the values |r| ``size`` in first-digit buckets ``near`` (lowest,
    highest), and the count of those below them."""
    bits = size.view(np.uint64)
    low, high = near
    start = np.uint64(low << (64 - _FIRST_DIGIT))  # the lowest bits in the buckets
    out.below += int(np.count_nonzero(bits < start))
    if out.near is not None:
        # one comparison: bits - start wraps around to a huge number below start
        span = np.uint64(((high - low + 1) << (64 - _FIRST_DIGIT)) - 1)
        out.near = _joined(out.near, bits[(bits - start) <= span])


def _select(request: Select, reply: Selected | None, x: Array, y: Array, w: Array | None,
            ) -> Selected:
    out = reply if reply is not None else Selected(
        [None if not gather else np.zeros(0) for _prefix, _shift, gather in request.buckets],
        near=np.zeros(0, dtype=np.uint64) if request.near is not None else None)
    if request.step is not None and y.size:
        out.moved = max(out.moved, _peak(x, request.step))
    if not request.buckets and request.near is None:
        return out  # only the check of a step
    size = matvec(x, request.coef)
    np.subtract(y, size, out=size)
    np.abs(size, out=size)  # |r|
    kept = size if w is None else size[w > 0.0]
    bits = kept.view(np.uint64)
    if request.near is not None:
        _gather_near(out, kept, request.near)
    for k, (prefix, shift, gather) in enumerate(request.buckets):
        inside = bits if shift == 64 else bits[(bits >> np.uint64(shift)) == np.uint64(prefix)]
        if gather:
            out.found[k] = np.concatenate([out.found[k], inside.view(np.float64)])
            continue
        width = _width(shift)
        digits = ((inside >> np.uint64(shift - width)) & np.uint64((1 << width) - 1)
                  ).astype(np.intp)
        counts = np.bincount(digits, minlength=1 << width)
        if out.found[k] is None:
            out.found[k] = counts
        else:
            out.found[k] += counts
    return out


def _row_keys(x: Array, y: Array, seed: int) -> Any:
    """A 64-bit hash of every row's values (splitmix64 over the bits of each column), computed
    in two arrays, in place."""
    h = np.full(y.shape[0], np.uint64((seed * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF))
    shifted = np.empty_like(h)
    with np.errstate(over="ignore"):
        for col in (*(x[:, j] for j in range(x.shape[1])), y):
            np.bitwise_xor(h, np.ascontiguousarray(col, dtype=np.float64).view(np.uint64), out=h)
            h += np.uint64(0x9E3779B97F4A7C15)
            for shift, factor in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
                np.right_shift(h, np.uint64(shift), out=shifted)
                h ^= shifted
                h *= np.uint64(factor)
            np.right_shift(h, np.uint64(31), out=shifted)
            h ^= shifted
    return h


def _sample(request: Sample, reply: Sampled | None, x: Array, y: Array, w: Array | None,
            ) -> Sampled:
    if w is not None:
        kept = w > 0.0
        x, y = x[kept], y[kept]
    keys = _row_keys(x, y, request.seed)
    if keys.shape[0] > request.size:
        # Only the chunk's `size` smallest keys (ties kept) can enter the sample.
        smallest = keys <= np.partition(keys, request.size - 1)[request.size - 1]
        x, y, keys = x[smallest], y[smallest], keys[smallest]
    if reply is not None and reply.keys.shape[0] >= request.size:
        # Only rows that beat the current sample's largest key can enter it.
        below = keys < reply.keys.max()
        x, y, keys = x[below], y[below], keys[below]
    chunk = Sampled(request.size, np.array(x, dtype=np.float64, order="F"),
                    np.array(y, dtype=np.float64), keys)
    if reply is None:
        return chunk.merge(Sampled(request.size, x[:0], y[:0], keys[:0]))
    return reply.merge(chunk)


def _stats(request: Stats, reply: Summary | None, x: Array, y: Array, w: Array | None,
           ) -> Summary:
    out = reply if reply is not None else Summary()
    if not y.size:
        return out
    part = Summary.of(y, y - matvec(x, request.coef))
    if request.robust is not None:
        low = request.robust.of(x, y) < 0.5
        part.down = int(np.count_nonzero(low if w is None else low & (w > 0.0)))
    return out.merge(part)


# -- the methods, pass by pass ------------------------------------------------------------------


Steps = Generator[Request, Any, solve.FitResult]


def _first_fold(terms: tuple[str, ...], sample: Sample | None = None, head: int = 0,
                ) -> Generator[Request, Any, Folded]:
    folded: Folded | None = yield Fold(terms, sample=sample, head=head)
    if folded is None or folded.state is None:
        raise FitError("no rows to fit")
    return folded


def _refine(state: solve.PartialFit, method: str, columns: tuple[int, ...] | None = None,
            robust_weights: Weights | None = None) -> Steps:
    steps = solve.refine(state, method)
    coef = next(steps)
    while True:
        acc = yield Residuals(coef, columns, robust_weights)
        try:
            coef = steps.send(acc)
        except StopIteration as done:
            result: solve.FitResult = done.value
            return result


def _honest(result: solve.FitResult, first: Folded, robust_weights: Weights | None,
            free: int | None = None) -> Steps:
    """The result with n, r2, rmse, mape and resid_sd unweighted over every fitted row (one
    more pass), and ``downweighted`` at the final robust weights."""
    summary: Summary = (yield Stats(np.asarray(result.coef, dtype=np.float64), robust_weights))
    assert first.state is not None and summary is not None
    n = summary.n
    state = first.state
    intercept = bool(np.any((state.col_min == state.col_max) & (state.col_max != 0.0)))
    tss = summary.m2 if intercept else summary.m2 + n * summary.mean**2
    dof = n - (result.p if free is None else free)
    out = replace(
        result, n=n, r2=1.0 - summary.ssr / tss if tss > 0.0 else math.nan,
        rmse=math.sqrt(summary.ssr / n), resid_sd=math.sqrt(summary.ssr / dof) if dof > 0
        else math.nan, mape=summary.ape / summary.nonzero if summary.nonzero else math.nan)
    if robust_weights is not None or result.downweighted is not None:
        out = replace(out, downweighted=summary.down if robust_weights is not None else 0)
    return out


def _after_downweighting(err: FitError) -> FitError:
    return FitError(f"after downweighting outliers, {err.detail}")


def ols_passes(terms: Sequence[str]) -> Steps:
    """Least squares: one fold, then refinement passes; honest statistics when weighted."""
    first = yield from _first_fold(tuple(terms))
    assert first.state is not None
    result = yield from _refine(first.state, "ols")
    if first.weighted:
        result = yield from _honest(result, first, None)
    return result


class _Median:
    """The exact median of |r| over `n` values. After the first IRLS step the first pass
    gathers the values near the previous step's median (`window`) and counts those below
    them: a middle rank among them is found at once. Otherwise radix selection on the values'
    bits (non-negative floats order as their bit patterns): each pass counts the values of the
    bucket holding a middle rank by their next bits (20, then 12), until the bucket is few
    enough to gather."""

    def __init__(self, n: int, previous: _Median | None = None) -> None:
        ranks = [n // 2] if n % 2 else [n // 2 - 1, n // 2]
        # per middle rank: [prefix, shift, rank within the bucket, values in the bucket]
        self.targets = [[0, 64, rank, n] for rank in ranks]
        self.values: list[float | None] = [None] * len(ranks)
        self.near = previous.window() if previous is not None else None
        """The first-digit buckets whose values the first pass gathers (`Select.near`), None
        once they missed."""
        # the latest counts by first digit (this step's, else an earlier one's): the next
        # window's size
        self._counts: Array | None = previous._counts if previous is not None else None
        self._digits: list[int] = []  # the first digits of the middle ranks

    def window(self) -> tuple[int, int] | None:
        """The first-digit buckets around this median worth gathering in the next step's first
        pass: the median's, widened on both sides while the latest counts put at most half of
        `_NEAR` values in them (the scale moves little from one IRLS step to the next)."""
        counts = self._counts
        if counts is None or not self._digits:
            return None
        low, high = min(self._digits), max(self._digits)
        total = int(counts[low : high + 1].sum())
        while low > 0 and high < counts.size - 1 and high - low < 64:
            wider = total + int(counts[low - 1]) + int(counts[high + 1])
            if wider > _NEAR // 2:
                break
            low, high, total = low - 1, high + 1, wider
        return (low, high) if total <= _NEAR // 2 else None

    def buckets(self) -> tuple[tuple[int, int, bool], ...]:
        """The buckets the next pass counts or gathers: none when it gathers the near values."""
        if self.near is not None:
            return ()
        wanted = {(t[0], t[1], t[3] <= _GATHER) for t, v in zip(self.targets, self.values,
                                                                 strict=True) if v is None}
        return tuple(sorted(wanted))

    def update(self, asked: tuple[tuple[int, int, bool], ...], got: Selected) -> None:
        if not asked:
            self.gathered(got)
            return
        answers = dict(zip(asked, got.found, strict=True))
        for k, target in enumerate(self.targets):
            if self.values[k] is not None:
                continue
            prefix, shift, rank, count = target
            found = answers[(prefix, shift, count <= _GATHER)]
            if count <= _GATHER:
                self.values[k] = float(np.sort(found)[rank])
                continue
            width = _width(shift)
            cumulative = np.cumsum(found)
            digit = int(np.searchsorted(cumulative, rank, side="right"))
            below = int(cumulative[digit - 1]) if digit else 0
            if shift == 64:
                self._counts = found
                self._digits.append(digit)
            prefix = digit if shift == 64 else (prefix << width) | digit
            target[:] = [prefix, shift - width, rank - below, int(found[digit])]
            if shift - width == 0:
                self.values[k] = float(np.array([prefix], dtype=np.uint64).view(np.float64)[0])

    def gathered(self, got: Selected | Folded) -> None:
        """The middle ranks among the gathered near values; radix selection for the others."""
        self.near = None
        if got.near is None:
            return  # more than `_NEAR` values: gathered none
        values = np.sort(got.near)
        for k, target in enumerate(self.targets):
            at = target[2] - got.below
            if 0 <= at < values.size:
                self.values[k] = float(values[at : at + 1].view(np.float64)[0])
                self._digits.append(int(values[at] >> np.uint64(64 - _FIRST_DIGIT)))

    @property
    def done(self) -> bool:
        return all(v is not None for v in self.values)

    def median(self) -> float:
        values = [v for v in self.values if v is not None]
        # np.median's own arithmetic for the two middle values.
        return float(np.mean(values)) if len(values) == 2 else values[0]


def _solve(folded: Folded) -> Array:
    assert folded.state is not None
    try:
        return solve.solve_partial(folded.state)
    except FitError as err:
        raise _after_downweighting(err) from err


def huber_passes(terms: Sequence[str], c: float = robust.HUBER_C) -> Steps:
    """Huber M-estimate by IRLS, the MAD scale (exact median of |r|) re-estimated every step.

    Step k folds the rows under the weights at its coefficients b_k and the scale of the
    previous step's (the first step's: the MAD at the least-squares start, by selection passes
    of its own), and the same pass gathers the |r| at b_k near the previous median, from which
    the next step's scale comes: one pass a step where the median stays near. The fixed point
    is the Huber estimate at the MAD scale of its own residuals, as with the scale of the
    step's own coefficients; the scale of a step trails its coefficients by one step, and
    moves by no more than they move the fitted values (the median is 1-Lipschitz)."""
    first = yield from _first_fold(tuple(terms), head=_HEAD)
    assert first.state is not None
    b = solve.solve_partial(first.state)
    current, weights = first, None
    iterations = 0
    median = _Median(first.kept)
    while not median.done:
        asked = median.buckets()
        median.update(asked, (yield Select(b, asked)))
    scale = median.median() / robust.MAD_NORMAL
    step: Array | None = None
    moves: list[float] = []  # how far each step moved the fitted values
    while scale > solve.EPS * first.ymax and iterations < robust.MAX_IRLS:
        if step is not None and _likely_still(moves, _MOVED * scale):
            # as robust's: a light pass checks a step that likely moved nothing
            checked: Selected = yield Select(b, (), step)
            if not checked.moved > _MOVED * scale:
                break
            step = None
        proposed = Weights("huber", b, scale, c)
        median = _Median(first.kept, median)
        # the first rows may tell the step moved: then the fold need not check it
        surely = None if step is None else _surely_moved(first.head, step, _MOVED * scale)
        folded: Folded = yield Fold(first.state.terms, robust=proposed,
                                    step=step if surely is None else None, near=median.near)
        iterations += 1
        current, weights = folded, proposed
        # The check that ends the previous step rides on this step's fold, which is then the
        # last step's: its weights are those of converged coefficients and scale.
        if step is not None:
            if surely is None and not folded.moved > _MOVED * scale:
                break
            moves.append(folded.moved if surely is None else surely)
        if median.near is not None:
            median.gathered(folded)
        while not median.done:  # the median at b left the window: radix selection
            asked = median.buckets()
            median.update(asked, (yield Select(b, asked)))
        new = _solve(current)
        # more than half the rows fit exactly (a scale of 0): nothing left to downweight
        scale = median.median() / robust.MAD_NORMAL
        step, b = new - b, new
    return (yield from _robust_finish(first, current, weights, "huber", scale, iterations))


def _robust_finish(first: Folded, current: Folded, weights: Weights | None, method: str,
                   scale: float, iterations: int) -> Steps:
    assert first.state is not None and current.state is not None
    # an IRLS step's fold takes no domain: the rows' is the first fold's
    state = replace(current.state, col_min=first.state.col_min, col_max=first.state.col_max)
    try:
        result = yield from _refine(state, method, robust_weights=weights)
    except FitError as err:
        raise _after_downweighting(err) from err
    result = replace(result, iterations=iterations, scale=scale, downweighted=0)
    return (yield from _honest(result, first, weights))


def _surely_moved(rows: Array | None, step: Array, limit: float) -> float | None:
    """max |X step| over some of the rows (``rows``, a subset of them) where it is beyond
    ``limit``: the step moved the fitted values, with no pass over the rows to tell; None when
    it may not have."""
    if rows is None or not rows.shape[0]:
        return None
    moved = _peak(rows, step)
    return moved if moved * (1.0 - 1e-9) > limit else None


def _likely_still(moves: list[float], limit: float) -> bool:
    """Whether the next IRLS step likely moves the fitted values by at most ``limit``: the last
    two moves' ratio (IRLS converges linearly) carried one step on."""
    if len(moves) < 2 or not 0.0 < moves[-1] < moves[-2]:
        return False
    return moves[-1] * (moves[-1] / moves[-2]) <= limit


def mm_passes(terms: Sequence[str], c: float = robust.BIWEIGHT_C, seed: int = 0) -> Steps:
    """MM-estimate: FAST-LTS start and M-scale on a bounded sample, then Tukey biweight IRLS
    over every row with that scale fixed."""
    # the sample rides on the first pass: it depends on the rows' values only
    first = yield from _first_fold(tuple(terms), Sample(SAMPLE_ROWS, seed))
    state = first.state
    assert state is not None
    solve.solve_partial(state)  # rank and row-count checks on the whole design
    sample = first.sample
    assert sample is not None
    # Columns scaled by powers of two (exact) so the small elemental solves are well posed.
    peak = np.maximum(np.abs(state.col_min), np.abs(state.col_max))
    colscale = np.exp2(np.round(np.log2(np.maximum(peak, 1e-300))))
    b = robust.lts(sample.x / colscale, sample.y, seed) / colscale
    scale = robust.m_scale(sample.y - matvec(sample.x, b))
    if scale <= solve.EPS * first.ymax:
        # More than half the rows lie exactly on the LTS fit: those rows are the fit.
        exact = Weights("exact", b, 0.0)
        folded: Folded = yield Fold(state.terms, robust=exact)
        return (yield from _robust_finish(first, folded, exact, "robust", 0.0, 0))
    current, weights = first, None
    iterations = 0
    step: Array | None = None
    moves: list[float] = []  # how far each step moved the fitted values
    while iterations < robust.MAX_IRLS:
        if step is not None and _likely_still(moves, _MOVED * scale):
            # the steps shrink at a steady rate: this one likely moved nothing, which a light
            # pass tells, sparing the fold the check would otherwise ride on
            checked: Selected = yield Select(b, (), step)
            if not checked.moved > _MOVED * scale:
                break
            step = None
        proposed = Weights("biweight", b, scale, c)
        # the sample's rows may tell the step moved: then the fold need not check it
        surely = None if step is None else _surely_moved(sample.x, step, _MOVED * scale)
        folded = yield Fold(state.terms, robust=proposed, step=step if surely is None else None)
        # The check that ends the previous step rides on this step's fold.
        if step is not None:
            if surely is None and not folded.moved > _MOVED * scale:
                break
            moves.append(folded.moved if surely is None else surely)
        iterations += 1
        current, weights = folded, proposed
        new = _solve(current)
        step, b = new - b, new
    return (yield from _robust_finish(first, current, weights, "robust", scale, iterations))


def nnls_passes(terms: Sequence[str]) -> Steps:
    """Least squares with every coefficient >= 0: Lawson-Hanson on the folded R factor, the
    free coefficients refitted by one more fold and refined. Coefficients held at 0 are not
    estimated: their standard error is NaN and ``resid_sd`` uses n minus the free ones."""
    names = tuple(terms)
    first = yield from _first_fold(names)
    state = first.state
    assert state is not None
    cond = solve.condition(state)
    p = len(names)
    if np.all(solve.solve_partial(state) >= 0.0):
        result = yield from _refine(state, "nnls")
        if first.weighted:
            result = yield from _honest(result, first, None)
        return result
    import scipy.optimize

    bs, _norm = scipy.optimize.nnls(state.r[:p, :p], state.r[:p, p])
    free = tuple(int(j) for j in np.flatnonzero(bs > 0.0))
    coef = np.zeros(p)
    stderr = np.full(p, math.nan)
    if free:
        fold: Folded = yield Fold(tuple(names[j] for j in free), columns=free)
        assert fold.state is not None
        sub = yield from _refine(fold.state, "nnls", columns=free)
        coef[list(free)], stderr[list(free)] = sub.coef, sub.stderr
        ssr = sub.rmse**2 * state.sum_w
        base = replace(sub, r2=solve.r2_of(state, ssr))
    else:
        ssr = state.m2_y + state.sum_w * state.mean_y**2  # every coefficient 0: r = y
        base = solve.FitResult(terms=(), coef=(), stderr=(), n=state.n, p=0,
                               resid_sd=math.sqrt(ssr / state.n),
                               rmse=math.sqrt(ssr / state.sum_w), r2=solve.r2_of(state, ssr),
                               mape=1.0, cond=cond, domain=(), method="nnls", iterations=0)
    result = replace(base, terms=names, coef=tuple(float(v) for v in coef),
                     stderr=tuple(float(v) for v in stderr), p=p, cond=cond,
                     domain=tuple((float(a), float(c)) for a, c in zip(state.col_min,
                                                                       state.col_max,
                                                                       strict=True)))
    if first.weighted:
        result = yield from _honest(result, first, None, free=len(free))
    return result


@dataclass(frozen=True)
class Method:
    """A fitting method: its name, what it is, its passes, and how many passes over the rows
    a fit typically makes (the progress bar's first estimate: an iterative method stops when
    its fit stops moving)."""

    name: str
    summary: str
    passes: Callable[[Sequence[str]], Steps] = field(repr=False)
    typical_passes: int = 3


METHODS: dict[str, Method] = {m.name: m for m in (
    Method("ols", "least squares, refined to the float64 limit", ols_passes),
    Method("huber", "Huber M-estimate by IRLS (MAD scale)", huber_passes, 20),
    Method("robust", "MM-estimate: high-breakdown start (FAST-LTS on a sample of at most "
                     f"{SAMPLE_ROWS} rows), Tukey biweight IRLS over all rows", mm_passes, 20),
    Method("nnls", "least squares with every coefficient >= 0", nnls_passes),
)}
"""The one registry of fitting methods, in the order help and messages list them."""
NAMES = tuple(METHODS)


def passes(method: str, terms: Sequence[str]) -> Steps:
    """The passes of ``method`` fitting ``terms``; FitError for an unknown method."""
    found = METHODS.get(method)
    if found is None:
        raise FitError(f"unknown fit method {method!r}: expected one of {', '.join(NAMES)}")
    return found.passes(terms)


__all__ = [
    "METHODS",
    "NAMES",
    "SAMPLE_ROWS",
    "Fold",
    "Folded",
    "Method",
    "Request",
    "Residuals",
    "Sample",
    "Sampled",
    "Select",
    "Selected",
    "Stats",
    "Summary",
    "Weights",
    "absorb",
    "answer",
    "matvec",
    "merge",
    "passes",
]
