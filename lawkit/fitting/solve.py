"""The numerical core of `lawkit fit`: least squares to the float64 limit, streamed or in memory.

A fit is a QR factorisation, never the normal equations (they square the condition number).
Rows are folded into the R factor of the augmented matrix ``[X | y]`` chunk by chunk (tall-skinny
QR), so memory is O(p²) whatever the row count, and partial fits from separate chunks or machines
merge with one more small QR. The QR solution is then polished by iterative refinement on the
corrected seminormal equations ``R'R d = X'r`` with the residual ``r = y - X b`` and ``X'r``
computed in double-double arithmetic (error-free products and sums), which reaches the float64
attainable accuracy on all eleven NIST StRD linear datasets (docs/fitting.md).

Pass structure, in memory or streamed (each pass can run as a fold over chunks and merge):

1. ``fold_chunk`` / ``merge``: the R factor of ``[sqrt(w) X | sqrt(w) y]``, row count, weighted
   moments of ``y`` and the domain of every column  →  `PartialFit`;
2. ``residual_pass``: at given coefficients, ``X'r`` (double-double), ``SSR`` and the sums for
   MAPE  →  `ResidualPass`; the refinement correction solves with the R factor of pass 1.
   Pass 2 repeats only while the correction is still large.

``finish(state, run_pass)`` drives the passes of a merged state; ``refine(state)`` is the same
loop as a generator (it yields the coefficients of the next pass and is sent its result), so
that a caller can run the passes of many fits together, e.g. as folds on a Dask cluster.

Weights scale rows by ``sqrt(w)`` (weighted least squares). With weights the statistics are the
weighted ones: ``SSR = Σ w r²``, ``resid_sd = sqrt(SSR / (n - p))`` (the standard deviation of a
unit-weight observation, as in statsmodels' WLS), ``rmse = sqrt(SSR / Σ w)``, ``r2`` centred on
the weighted mean of ``y``, ``mape = Σ w |r|/|y| / Σ w`` over rows with ``y != 0``; ``n`` stays
the row count (rows of weight 0 included).
"""

from __future__ import annotations

import contextlib
import functools
import math
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar, overload

import numpy as np
import scipy.linalg
from numpy.typing import ArrayLike, NDArray
from scipy.linalg import lapack

from lawkit.errors import FitError
from lawkit.workers import usable_cpus

Array = NDArray[np.float64]
Chunk = tuple[ArrayLike, ArrayLike, ArrayLike | None]
_T = TypeVar("_T")

EPS = float(np.finfo(np.float64).eps)
# A design with unit-norm columns whose smallest singular value is below this fraction of the
# largest is rank deficient. Exactly collinear columns leave ~1e-16 * sqrt(rows); Filip (NIST
# StRD, a degree-10 polynomial, condition 5.2e9) is the worst well-posed case and must pass.
RANK_TOL = 1e-12
MAX_VALUE = 1e150  # beyond this, squares and Dekker splits overflow
_SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp splitting into two 26-bit halves (Dekker 1971)
_BLOCK = 16384  # rows per block: a block's temporaries stay in L2/L3 cache
_MAX_PASSES = 5
_PARALLEL_ROWS = 262144  # below this, threads cost more than they save


@dataclass(frozen=True)
class FitResult:
    """A fitted linear law: coefficients, their standard errors and the fit statistics.

    ``n`` rows (weight 0 included) and ``p`` terms; ``resid_sd`` = sqrt(SSR / (n - p));
    ``rmse`` = sqrt(SSR / Σw) (= sqrt(SSR / n) unweighted); ``r2`` centred when a term is a
    nonzero constant, else uncentred; ``mape`` = mean |r|/|y| as a fraction over rows with
    y != 0 (NaN if none); ``cond`` of the design with unit-norm columns; ``domain`` the (min,
    max) of every term; ``iterations`` the refinement passes (IRLS steps for huber/robust);
    ``scale`` (robust scale) and ``downweighted`` (rows of robust weight < 0.5) for robust fits.
    """

    terms: tuple[str, ...]
    coef: tuple[float, ...]
    stderr: tuple[float, ...]
    n: int
    p: int
    resid_sd: float
    rmse: float
    r2: float
    mape: float
    cond: float
    domain: tuple[tuple[float, float], ...]
    method: str
    iterations: int
    scale: float | None = None
    downweighted: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-able values (NaN stays NaN)."""
        out: dict[str, Any] = {
            "terms": list(self.terms),
            "coef": list(self.coef),
            "stderr": list(self.stderr),
            "domain": [list(pair) for pair in self.domain],
        }
        for name in ("n", "p", "resid_sd", "rmse", "r2", "mape", "cond", "method", "iterations",
                     "scale", "downweighted"):
            out[name] = getattr(self, name)
        return out


@dataclass(frozen=True, eq=False)
class PartialFit:
    """Mergeable state of pass 1: the R factor of the weighted ``[X | y]`` and moments of y.

    ``r`` is the (p+1) x (p+1) upper-triangular factor of the unscaled, weighted augmented matrix:
    its top-left block is R of X, its last column holds Q'y and ±‖y - X b‖. ``mean_y`` and
    ``m2_y`` (Σ w (y - mean)²) merge by Chan, Golub & LeVeque's pairwise update.
    """

    terms: tuple[str, ...]
    r: Array
    n: int
    sum_w: float
    mean_y: float
    m2_y: float
    col_min: Array
    col_max: Array

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON-able lists of floats (floats round-trip exactly through repr)."""
        return {
            "terms": list(self.terms),
            "r": self.r.tolist(),
            "n": self.n,
            "sum_w": self.sum_w,
            "mean_y": self.mean_y,
            "m2_y": self.m2_y,
            "col_min": self.col_min.tolist(),
            "col_max": self.col_max.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PartialFit:
        """Rebuild a state written by `to_dict`."""
        return cls(
            terms=tuple(str(t) for t in data["terms"]),
            r=np.array(data["r"], dtype=np.float64),
            n=int(data["n"]),
            sum_w=float(data["sum_w"]),
            mean_y=float(data["mean_y"]),
            m2_y=float(data["m2_y"]),
            col_min=np.array(data["col_min"], dtype=np.float64),
            col_max=np.array(data["col_max"], dtype=np.float64),
        )


@dataclass(frozen=True, eq=False)
class ResidualPass:
    """Mergeable state of a residual pass at fixed coefficients ``coef``.

    ``xtr_hi + xtr_lo`` is X'W r as an unevaluated double-double sum; ``ssr`` is Σ w r²;
    ``ape_sum`` / ``ape_w`` are Σ w |r|/|y| and Σ w over the rows with ``y != 0``.
    """

    coef: Array
    xtr_hi: Array
    xtr_lo: Array
    ssr: float
    ape_sum: float
    ape_w: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON-able lists of floats."""
        return {
            "coef": self.coef.tolist(),
            "xtr_hi": self.xtr_hi.tolist(),
            "xtr_lo": self.xtr_lo.tolist(),
            "ssr": self.ssr,
            "ape_sum": self.ape_sum,
            "ape_w": self.ape_w,
            "n": self.n,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResidualPass:
        """Rebuild a state written by `to_dict`."""
        return cls(
            coef=np.array(data["coef"], dtype=np.float64),
            xtr_hi=np.array(data["xtr_hi"], dtype=np.float64),
            xtr_lo=np.array(data["xtr_lo"], dtype=np.float64),
            ssr=float(data["ssr"]),
            ape_sum=float(data["ape_sum"]),
            ape_w=float(data["ape_w"]),
            n=int(data["n"]),
        )


# ---------------------------------------------------------------- error-free transformations


def _two_sum(a: Array, b: Array) -> tuple[Array, Array]:
    """s + e == a + b exactly, s = fl(a + b) (Knuth's TwoSum, branch-free)."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _split(a: Array) -> tuple[Array, Array]:
    """hi + lo == a exactly with 26-bit halves, so hi·hi' and hi·lo' are exact (Veltkamp)."""
    c = a * _SPLITTER
    hi = c - (c - a)
    return hi, a - hi


def _dd_add(ah: Array, al: Array, bh: Array, bl: Array) -> tuple[Array, Array]:
    """Double-double addition (ah + al) + (bh + bl), renormalised."""
    s, e = _two_sum(ah, bh)
    e = e + (al + bl)
    hi = s + e
    return hi, e - (hi - s)


# ---------------------------------------------------------------- input checks


def as_design(terms: Sequence[str], x: ArrayLike, y: ArrayLike, w: ArrayLike | None
               ) -> tuple[Array, Array, Array | None]:
    """X, y, w as float64 arrays of matching shapes; FitError naming what does not match."""
    xa = np.asarray(x, dtype=np.float64)
    ya = np.asarray(y, dtype=np.float64).reshape(-1)
    if xa.ndim == 1:
        xa = xa.reshape(-1, 1)
    if xa.ndim != 2 or xa.shape[1] != len(terms):
        raise FitError(f"design has shape {xa.shape}, expected (rows, {len(terms)}) for terms "
                       f"{', '.join(terms)}")
    if ya.shape[0] != xa.shape[0]:
        raise FitError(f"{xa.shape[0]} design rows but {ya.shape[0]} target values")
    wa = None
    if w is not None:
        wa = np.asarray(w, dtype=np.float64).reshape(-1)
        if wa.shape[0] != xa.shape[0]:
            raise FitError(f"{xa.shape[0]} design rows but {wa.shape[0]} weights")
    return xa, ya, wa


def _check_finite(name: str, col: Array, lo: float, hi: float, offset: int) -> None:
    """FitError naming the first row of a column that is NaN, infinite or beyond MAX_VALUE."""
    if math.isfinite(lo) and math.isfinite(hi) and max(-lo, hi) <= MAX_VALUE:
        return
    bad = np.flatnonzero(~(np.abs(col) <= MAX_VALUE))
    row = int(bad[0]) + offset if bad.size else offset
    value = float(col[row - offset]) if bad.size else math.nan
    raise FitError(f"{name} is {value!r} on row {row}: every value must be finite and within "
                   f"±{MAX_VALUE:g}")


def _check_weights(w: Array, offset: int) -> None:
    """FitError unless every weight is finite and non-negative."""
    if w.size and not (w.min() >= 0.0 and w.max() <= MAX_VALUE):
        bad = np.flatnonzero(~((w >= 0.0) & (w <= MAX_VALUE)))
        raise FitError(f"weight is {float(w[bad[0]])!r} on row {int(bad[0]) + offset}: "
                       "weights must be finite and >= 0")


# ---------------------------------------------------------------- pass 1: the R factor


_blas_lock = threading.Lock()
_blas_depth = 0
_blas_limit: Any = None


@functools.cache
def _blas_controller() -> Any:
    """threadpoolctl's view of the BLAS libraries loaded (numpy's and scipy's, any vendor)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


@contextlib.contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run BLAS single-threaded inside the block (re-entrant, from any thread), then restore.

    The blocks are skinny (16384 x p): a threaded BLAS gains nothing on them and, on a busy
    machine, OpenBLAS's spinning threads slow the fold down many times over.
    Parallelism comes from splitting rows across Python threads instead. threadpoolctl limits
    the process, so the outermost block sets the limit and the last to leave restores it.
    """
    global _blas_depth, _blas_limit
    with _blas_lock:
        if _blas_depth == 0:
            _blas_limit = _blas_controller().limit(limits=1, user_api="blas")
        _blas_depth += 1
    try:
        yield
    finally:
        with _blas_lock:
            _blas_depth -= 1
            if _blas_depth == 0:
                _blas_limit.restore_original_limits()
                _blas_limit = None


def _blocks(n: int, size: int = _BLOCK) -> Iterator[tuple[int, int]]:
    for start in range(0, n, size):
        yield start, min(n, start + size)


def _fold_rows(r: Array, x: Array, y: Array, sw: Array | None, extremes: bool = True,
               ) -> tuple[Array, Array, Array]:
    """R factor of [r; sqrt(w)·[x y]] by blocked Householder QR (LAPACK dgeqrf).

    Also returns the column minima and maxima of [x y], taken while the block is in cache
    (with `extremes`; else +inf and -inf).
    """
    q = r.shape[0]
    lo, hi = np.full(q, np.inf), np.full(q, -np.inf)
    work = np.empty((min(_BLOCK, x.shape[0]) + q, q), order="F")
    for start, stop in _blocks(x.shape[0]):
        k = stop - start
        work[:q] = r
        block = work[q : q + k]
        xb, yb = x[start:stop], y[start:stop]
        if extremes:
            np.minimum(lo[:-1], xb.min(axis=0), out=lo[:-1])
            np.maximum(hi[:-1], xb.max(axis=0), out=hi[:-1])
            lo[-1], hi[-1] = np.minimum(lo[-1], yb.min()), np.maximum(hi[-1], yb.max())  # NaN too
        if sw is None:
            block[:, : q - 1] = xb
            block[:, q - 1] = yb
        else:
            np.multiply(xb, sw[start:stop, None], out=block[:, : q - 1])
            np.multiply(yb, sw[start:stop], out=block[:, q - 1])
        qr, _tau, _work, info = lapack.dgeqrf(work[: q + k], lwork=64 * q, overwrite_a=True)
        if info != 0:  # pragma: no cover - LAPACK argument errors are bugs
            raise RuntimeError(f"dgeqrf failed with info={info}")
        r = np.triu(qr[:q])
    return r, lo, hi


def _moments(y: Array, w: Array | None) -> tuple[float, float, float]:
    """(Σw, weighted mean, Σ w (y - mean)²) by the corrected two-pass algorithm."""
    if w is None:
        sw = float(y.shape[0])
        mean = float(np.mean(y)) if y.size else 0.0
        dev = y - mean
        m2 = float(np.sum(dev * dev)) - float(np.sum(dev)) ** 2 / sw if y.size else 0.0
        return sw, mean, max(m2, 0.0)
    sw = float(np.sum(w))
    if sw == 0.0:
        return 0.0, 0.0, 0.0
    mean = float(np.sum(w * y)) / sw
    dev = y - mean
    wdev = w * dev
    m2 = float(np.sum(wdev * dev)) - float(np.sum(wdev)) ** 2 / sw
    return sw, mean, max(m2, 0.0)


def _merge_moments(a: tuple[float, float, float], b: tuple[float, float, float]
                   ) -> tuple[float, float, float]:
    """Chan, Golub & LeVeque (1983) pairwise merge of (Σw, mean, M2)."""
    if a[0] == 0.0:
        return b
    if b[0] == 0.0:
        return a
    sw = a[0] + b[0]
    delta = b[1] - a[1]
    mean = a[1] + delta * (b[0] / sw)
    m2 = a[2] + b[2] + delta * delta * (a[0] * b[0] / sw)
    return sw, mean, m2


def fold_chunk(state: PartialFit | None, x: ArrayLike, y: ArrayLike, w: ArrayLike | None = None,
               *, terms: Sequence[str] | None = None) -> PartialFit:
    """Fold a chunk of rows (design ``x``, target ``y``, optional weights ``w``) into the state.

    ``terms`` names the design columns; it is required when ``state`` is None.
    """
    if state is None:
        if terms is None:
            raise ValueError("fold_chunk needs terms= to start a new state")
        names = tuple(terms)
    else:
        names = state.terms
    xa, ya, wa = as_design(names, x, y, w)
    return _fold(state, names, xa, ya, wa, 0 if state is None else state.n)


def _fold(state: PartialFit | None, names: tuple[str, ...], xa: Array, ya: Array,
          wa: Array | None, offset: int) -> PartialFit:
    """fold_chunk on checked arrays; ``offset`` numbers the rows in error messages."""
    p = len(names)
    sw = None
    if wa is not None:
        _check_weights(wa, offset)
        sw = np.sqrt(wa)
    r0 = np.zeros((p + 1, p + 1)) if state is None else state.r
    with one_blas_thread():
        r, lo, hi = _fold_rows(r0, xa, ya, sw)
    # NaN propagates into min/max and inf shows in them, so the extremes check every value.
    for j, name in enumerate((*(f"term {t}" for t in names), "target") if xa.size else ()):
        col = xa[:, j] if j < p else ya
        _check_finite(name, col, float(lo[j]), float(hi[j]), offset)
    lo, hi = lo[:p], hi[:p]
    moments = _moments(ya, wa)
    n = xa.shape[0]
    if state is not None:
        moments = _merge_moments((state.sum_w, state.mean_y, state.m2_y), moments)
        lo, hi = np.minimum(state.col_min, lo), np.maximum(state.col_max, hi)
        n += state.n
    return PartialFit(names, r, n, *moments, col_min=lo, col_max=hi)


def refold_chunk(state: PartialFit | None, x: Array, y: Array, w: Array | None, *,
                 terms: Sequence[str]) -> PartialFit:
    """Fold again, under new weights, rows that `fold_chunk` has already taken (an IRLS step):
    only the R factor, the row count and Σw.

    The values are not checked again and neither the moments of y nor the domain are taken:
    the moments are NaN and the domain empty, for the caller has both from its first fold.
    """
    names = tuple(terms)
    p = len(names)
    r0 = np.zeros((p + 1, p + 1)) if state is None else state.r
    with one_blas_thread():
        r = _fold_rows(r0, x, y, None if w is None else np.sqrt(w), extremes=False)[0]
    n, sum_w = y.shape[0], float(y.shape[0]) if w is None else float(np.sum(w))
    if state is not None:
        n, sum_w = n + state.n, sum_w + state.sum_w
    return PartialFit(names, r, n, sum_w, math.nan, math.nan, col_min=np.full(p, np.inf),
                      col_max=np.full(p, -np.inf))


@overload
def merge(a: PartialFit, b: PartialFit) -> PartialFit: ...
@overload
def merge(a: ResidualPass, b: ResidualPass) -> ResidualPass: ...
def merge(a: PartialFit | ResidualPass, b: PartialFit | ResidualPass
          ) -> PartialFit | ResidualPass:
    """Combine two partial states over disjoint rows (associative up to rounding)."""
    if isinstance(a, ResidualPass) and isinstance(b, ResidualPass):
        if not np.array_equal(a.coef, b.coef):
            raise ValueError("residual passes taken at different coefficients do not merge")
        hi, lo = _dd_add(a.xtr_hi, a.xtr_lo, b.xtr_hi, b.xtr_lo)
        return ResidualPass(a.coef, hi, lo, a.ssr + b.ssr, a.ape_sum + b.ape_sum,
                            a.ape_w + b.ape_w, a.n + b.n)
    if isinstance(a, PartialFit) and isinstance(b, PartialFit):
        if a.terms != b.terms:
            raise ValueError(f"partial fits over different terms: {a.terms} and {b.terms}")
        r = _fold_rows(a.r, b.r[:, :-1], b.r[:, -1], None)[0]
        moments = _merge_moments((a.sum_w, a.mean_y, a.m2_y), (b.sum_w, b.mean_y, b.m2_y))
        return PartialFit(a.terms, r, a.n + b.n, *moments,
                          col_min=np.minimum(a.col_min, b.col_min),
                          col_max=np.maximum(a.col_max, b.col_max))
    raise TypeError(f"cannot merge {type(a).__name__} with {type(b).__name__}")


# ---------------------------------------------------------------- pass 2: accurate residuals


class _PassKernel:
    """One thread's residual pass over blocks of rows, with scratch buffers reused per block.

    The residual r = y - X b is Dot2 of Ogita, Rump & Oishi (SIAM J. Sci. Comput. 26(6), 2005):
    each product x·b splits error-free into prod + err (Dekker's TwoProduct with Veltkamp
    halves), the prods are summed with TwoSum and every error term in plain floating point, so r
    comes out as a double-double (r_hi + r_lo) as accurate as if computed in twice the working
    precision. X'r is formed the same way, its long sums by error-free extraction (see
    `_exact_row_sums`). Error terms are eps-sized, so plain sums suffice for them.
    """

    def __init__(self, p: int, rows: int) -> None:
        # xt, xh, xl, prod, err and two scratch
        self.mat = [np.empty((p, rows)) for _ in range(7)]
        self.vec = [np.empty(rows) for _ in range(4)]

    def run(self, x: Array, y: Array, w: Array | None, b: Array
            ) -> tuple[Array, Array, float, float, float]:
        """Double-double X'W r, SSR and the MAPE sums of one block at coefficients b."""
        k = x.shape[0]
        xt, xh, xl, prod, err = (m[:, :k] for m in self.mat[:5])
        np.copyto(xt, x.T)
        yb = y
        if w is not None:
            sw = np.sqrt(w)
            xt *= sw
            yb = y * sw
        # Veltkamp split: xh + xl == xt with 26-bit halves, so xh·(26-bit) products are exact.
        np.multiply(xt, _SPLITTER, out=xh)
        np.subtract(xh, xt, out=xl)
        xh -= xl
        np.subtract(xt, xh, out=xl)
        r_hi, r_lo = self._residuals(yb, -b, xt, xh, xl, prod, err)
        rh, rl = _split(r_hi)
        np.multiply(xt, r_hi, out=prod)
        _product_error(xh, xl, rh, rl, prod, err, self.mat[5][:, :k])
        hi, lo = self._exact_row_sums(prod)
        lo += err.sum(axis=1) + xt @ r_lo
        # Pairwise sums, not BLAS dot: more accurate, and OpenBLAS threads short dots at a loss.
        ssr = float(np.sum(r_hi * r_hi)) + 2.0 * float(np.sum(r_hi * r_lo))
        # |r_w| / |y_w| == |r| / |y| as sqrt(w) cancels; rows of weight 0 have y_w == 0.
        nz = yb != 0.0
        ape = np.divide(np.abs(r_hi), np.abs(yb), out=np.zeros(k), where=nz)
        if w is None:
            return hi, lo, ssr, float(np.sum(ape)), float(np.count_nonzero(nz))
        return hi, lo, ssr, float(np.sum(w * ape)), float(np.sum(w, where=nz))

    def _residuals(self, y: Array, nb: Array, xt: Array, xh: Array, xl: Array, prod: Array,
                   err: Array) -> tuple[Array, Array]:
        """y + X·nb as a double-double (the residual for nb = -b)."""
        k = y.shape[0]
        nbh, nbl = _split(nb)
        np.multiply(xt, nb[:, None], out=prod)
        _product_error(xh, xl, nbh[:, None], nbl[:, None], prod, err, self.mat[5][:, :k])
        c = err.sum(axis=0)
        s, s2, e, t = (v[:k] for v in self.vec)
        np.copyto(s, y)
        for j in range(prod.shape[0]):
            _two_sum_into(s, prod[j], s2, e, t)
            s, s2 = s2, s
            c += e
        hi = s + c
        return hi, c - (hi - s)

    def _exact_row_sums(self, a: Array) -> tuple[Array, Array]:
        """Row sums of ``a`` as double-double (hi, lo) by two levels of error-free extraction.

        Rump, Ogita & Oishi, "Accurate floating-point summation part I" (SIAM J. Sci. Comput.
        31(1), 2008), ExtractVector: with sigma = 2^M·2^k >= (m+2)·max|a|, q = (sigma + a) -
        sigma keeps the high bits of every a on a common grid, so the q sum exactly in any
        order and a - q is exact. A second extraction of the remainders leaves parts of
        2^-106 relative, which sum plainly. A dozen whole-block operations, no per-level loop.
        """
        q, rem = self.mat[5][:, : a.shape[1]], self.mat[6][:, : a.shape[1]]
        _mant, exp = np.frexp(np.maximum(a.max(axis=1), -a.min(axis=1)))
        spread = a.shape[1] + 2
        sigma = np.ldexp(1.0, exp + spread.bit_length())[:, None]
        np.add(a, sigma, out=q)
        q -= sigma
        np.subtract(a, q, out=rem)
        high = q.sum(axis=1)
        sigma *= 2.0 ** (spread.bit_length() - 52)
        np.add(rem, sigma, out=q)
        q -= sigma
        rem -= q
        hi, lo = _two_sum(high, q.sum(axis=1))
        return hi, lo + rem.sum(axis=1)


def _product_error(ah: Array, al: Array, bh: Array, bl: Array, prod: Array, out: Array,
                   tmp: Array) -> None:
    """out = a·b - prod exactly, for prod = fl(a·b), from Veltkamp halves (Dekker's TwoProduct).

    The order matters: ((ah·bh - prod) + ah·bl + al·bh) is computed without rounding error,
    so the halves' large partial products (2^-26 of a·b) cancel exactly before any rounding.
    """
    np.multiply(ah, bh, out=out)
    out -= prod
    np.multiply(ah, bl, out=tmp)
    out += tmp
    np.multiply(al, bh, out=tmp)
    out += tmp
    np.multiply(al, bl, out=tmp)
    out += tmp


def _two_sum_into(a: Array, b: Array, s: Array, e: Array, t: Array) -> None:
    """_two_sum writing into s and e (t is scratch); none may alias a or b."""
    np.add(a, b, out=s)
    np.subtract(s, a, out=t)
    np.subtract(b, t, out=e)
    np.subtract(s, t, out=t)
    np.subtract(a, t, out=t)
    e += t


def residual_pass(acc: ResidualPass | None, coef: ArrayLike, x: ArrayLike, y: ArrayLike,
                  w: ArrayLike | None = None) -> ResidualPass:
    """Fold a chunk into the residual pass at ``coef``: X'W r (double-double), SSR, MAPE sums."""
    b = np.asarray(coef, dtype=np.float64)
    names = tuple(f"x{j}" for j in range(b.shape[0]))
    xa, ya, wa = as_design(names, x, y, w)
    hi, lo = np.zeros(b.shape[0]), np.zeros(b.shape[0])
    ssr = ape_sum = ape_w = 0.0
    kernel = _PassKernel(b.shape[0], min(xa.shape[0], _BLOCK))
    with one_blas_thread():
        for start, stop in _blocks(xa.shape[0]):
            bh, bl, bssr, bsum, bw = kernel.run(xa[start:stop], ya[start:stop],
                                                None if wa is None else wa[start:stop], b)
            hi, lo = _dd_add(hi, lo, bh, bl)
            ssr, ape_sum, ape_w = ssr + bssr, ape_sum + bsum, ape_w + bw
    out = ResidualPass(b.copy(), hi, lo, ssr, ape_sum, ape_w, xa.shape[0])
    return out if acc is None else merge(acc, out)


# ---------------------------------------------------------------- solving


def _scaled_factor(state: PartialFit) -> tuple[Array, Array, Array]:
    """(R_s, Q'y, s): R with columns scaled by powers of two near their 2-norms, R = R_s·diag(s).

    R of X·D is R·D (Householder QR is invariant under column scaling, Higham, Accuracy and
    Stability of Numerical Algorithms, 2nd ed., section 19.4), so scaling after the fold is as
    good as scaling the data first; powers of two make it exact.
    """
    p = len(state.terms)
    r = state.r[:p, :p]
    # Each column's norm taken on the column over its largest magnitude: squares of values
    # near 1e-200 underflow to 0, and such a column is not zero.
    peaks = np.max(np.abs(r), axis=0)
    norms = peaks * np.linalg.norm(r / np.where(peaks > 0, peaks, 1.0), axis=0)
    s = np.where(norms > 0, np.exp2(np.round(np.log2(np.where(norms > 0, norms, 1.0)))), 1.0)
    return r / s, state.r[:p, p].copy(), s


def _check_rank(rs: Array, terms: Sequence[str]) -> float:
    """Condition number of the scaled design; FitError naming collinear terms if rank deficient."""
    _u, sv, vt = np.linalg.svd(rs)
    if sv[0] == 0.0:
        raise FitError(f"every term is zero on every row ({', '.join(terms)})")
    rank = int(np.count_nonzero(sv > RANK_TOL * sv[0]))
    if rank == len(terms):
        return float(sv[0] / sv[-1])
    null = np.abs(vt[rank:])
    involved = sorted({j for v in null for j in np.flatnonzero(v >= 1e-6 * v.max()).tolist()})
    names = [terms[j] for j in involved]
    drop = len(terms) - rank
    where = f"(rank {rank} of {len(terms)})"
    if len(names) == 1:
        raise FitError(f"term {names[0]} is zero on every row {where}: drop it")
    listed = " and ".join(names) if len(names) == 2 else ", ".join(names[:-1]) + " and " + names[-1]
    what = "drop one" if drop == 1 else f"drop {drop} of them"
    raise FitError(f"terms {listed} are collinear {where}: {what}")


def _check_rows(state: PartialFit) -> None:
    p = len(state.terms)
    if p == 0:
        raise FitError("no terms to fit")
    if state.n <= p:
        raise FitError(f"too few rows: {state.n} rows for {p} terms (need more rows than terms)")
    if state.sum_w <= 0.0:
        raise FitError("every weight is zero: nothing to fit")


def solve_partial(state: PartialFit) -> Array:
    """Coefficients of the least-squares fit held in ``state`` (QR solution, unrefined)."""
    _check_rows(state)
    rs, qty, s = _scaled_factor(state)
    _check_rank(rs, state.terms)
    return np.asarray(scipy.linalg.solve_triangular(rs, qty) / s, dtype=np.float64)


def finish(state: PartialFit, run_pass: Callable[[Array], ResidualPass], method: str = "ols"
           ) -> FitResult:
    """The refined fit of ``state``, ``run_pass(coef)`` giving the residual pass over all rows.

    ``state`` may be merged from partial fits anywhere; ``run_pass`` may run as a distributed
    fold of `residual_pass` and `merge`. The steps are those of `refine`.
    """
    steps = refine(state, method)
    coef = next(steps)
    while True:
        try:
            coef = steps.send(run_pass(coef))
        except StopIteration as done:
            result: FitResult = done.value
            return result


def refine(state: PartialFit, method: str = "ols"
           ) -> Generator[Array, ResidualPass, FitResult]:
    """Refine the QR solution of ``state`` pass by pass: yields the coefficients at which it
    needs the residual pass over all rows, is sent that pass, returns the FitResult.

    For a caller that drives several fits, or runs each pass on a cluster, in its own loop
    (`finish` is the plain loop). Iterative refinement on the corrected seminormal equations
    (Björck, BIT 27, 1987; Higham, op. cit., section 20.5): with r and X'r exact to
    double-double, each step solves R'R d = X'r and converges to the exact solution of the
    float64-rounded problem.
    """
    _check_rows(state)
    p = len(state.terms)
    rs, qty, s = _scaled_factor(state)
    cond = _check_rank(rs, state.terms)

    def correction(g: Array) -> Array:
        z = scipy.linalg.solve_triangular(rs, g / s, trans="T")
        return np.asarray(scipy.linalg.solve_triangular(rs, z), dtype=np.float64)

    b = np.asarray(scipy.linalg.solve_triangular(rs, qty) / s, dtype=np.float64)
    # Contraction bound of one step: p·cond²·eps (Björck 1987). Where it is tiny, a single
    # pass already puts the corrected solution at the rounding level.
    rho = p * cond * cond * EPS
    prev = math.inf
    passes = 0
    while True:
        acc = yield b
        passes += 1
        g = acc.xtr_hi + acc.xtr_lo
        ds = correction(g)
        size, bsize = float(np.linalg.norm(ds)), float(np.linalg.norm(b * s))
        if size == 0.0 or size > 0.5 * prev:
            ssr = acc.ssr  # not converging any further: keep b, whose statistics are exact
            break
        b = b + ds / s
        moved = float(np.linalg.norm(rs @ ds)) ** 2
        # SSR(b + d) = SSR(b) - 2 d'X'r + ‖X d‖²; MAPE keeps the pass value when the residuals
        # move by < 1e-10 of their norm.
        ssr = max(acc.ssr - 2.0 * float(np.dot(ds, g / s)) + moved, 0.0)
        converged = min(rho, 1.0) * size <= EPS * bsize
        if (converged and moved <= 1e-20 * acc.ssr) or passes >= _MAX_PASSES:
            break
        prev = size
    return _statistics(state, b, ssr, acc, rs, s, cond, method, passes)


def r2_of(state: PartialFit, ssr: float) -> float:
    """R² for a residual sum of squares: centred if a term is a nonzero constant, else uncentred.

    An intercept is recognised from the domain (a column whose min equals its max), which the
    streamed state knows without another pass. NaN when y has no variation to explain.
    """
    intercept = bool(np.any((state.col_min == state.col_max) & (state.col_max != 0.0)))
    tss = state.m2_y if intercept else state.m2_y + state.sum_w * state.mean_y**2
    return 1.0 - ssr / tss if tss > 0.0 else math.nan


def condition(state: PartialFit) -> float:
    """Condition number of the design with unit-norm columns; FitError if rank deficient."""
    _check_rows(state)
    return _check_rank(_scaled_factor(state)[0], state.terms)


def _statistics(state: PartialFit, b: Array, ssr: float, acc: ResidualPass, rs: Array, s: Array,
                cond: float, method: str, passes: int) -> FitResult:
    """FitResult from the refined coefficients, SSR and the state's moments."""
    n, p = state.n, len(state.terms)
    resid_sd = math.sqrt(ssr / (n - p))
    rinv = scipy.linalg.solve_triangular(rs, np.eye(p))
    stderr = resid_sd * np.sqrt(np.sum(rinv * rinv, axis=1)) / s
    return FitResult(
        terms=state.terms,
        coef=tuple(float(v) for v in b),
        stderr=tuple(float(v) for v in stderr),
        n=n,
        p=p,
        resid_sd=resid_sd,
        rmse=math.sqrt(ssr / state.sum_w),
        r2=r2_of(state, ssr),
        mape=acc.ape_sum / acc.ape_w if acc.ape_w > 0.0 else math.nan,
        cond=cond,
        domain=tuple((float(a), float(c)) for a, c in zip(state.col_min, state.col_max,
                                                           strict=True)),
        method=method,
        iterations=passes,
    )


# ---------------------------------------------------------------- entry points


def workers_for(n: int) -> int:
    """Threads for a pass over n rows: the CPUs this process may run on, at most 8."""
    return max(1, min(usable_cpus(), 8)) if n >= _PARALLEL_ROWS else 1


def split_rows(n: int, parts: int) -> list[tuple[int, int]]:
    """n rows cut into `parts` consecutive ranges."""
    edges = [n * k // parts for k in range(parts + 1)]
    return [(edges[k], edges[k + 1]) for k in range(parts)]


def fit_ols(x: ArrayLike, y: ArrayLike, terms: Sequence[str], weights: ArrayLike | None = None,
            *, method: str = "ols") -> FitResult:
    """Least-squares fit of ``y ~ x`` in memory, refined to the float64 limit.

    Rows are split across threads (numpy and LAPACK release the GIL) and merged: the same
    mergeable states as the streamed fit.
    """
    names = tuple(terms)
    xa, ya, wa = as_design(names, x, y, weights)
    ranges = split_rows(xa.shape[0], workers_for(xa.shape[0]))

    def part(rng: tuple[int, int]) -> PartialFit:
        a, c = rng
        return _fold(None, names, xa[a:c], ya[a:c], None if wa is None else wa[a:c], a)

    def run_pass(b: Array) -> ResidualPass:
        def one(rng: tuple[int, int]) -> ResidualPass:
            a, c = rng
            return residual_pass(None, b, xa[a:c], ya[a:c], None if wa is None else wa[a:c])
        first, *rest = map_ranges(one, ranges)
        for other in rest:
            first = merge(first, other)
        return first

    state, *others = map_ranges(part, ranges)
    for other_state in others:
        state = merge(state, other_state)
    return finish(state, run_pass, method)


def map_ranges(fn: Callable[[tuple[int, int]], _T], ranges: list[tuple[int, int]]) -> list[_T]:
    """fn over row ranges, on threads when there is more than one range."""
    if len(ranges) == 1:
        return [fn(ranges[0])]
    with ThreadPoolExecutor(max_workers=len(ranges)) as pool:
        return list(pool.map(fn, ranges))


def fit_ols_streamed(chunks: Callable[[], Iterable[Chunk]], terms: Sequence[str],
                     *, method: str = "ols") -> FitResult:
    """Least-squares fit over chunks ``(x, y, w)`` (w may be None), refined to the float64 limit.

    ``chunks()`` must return a fresh iterator over the same rows each time: one pass folds the
    R factor, each refinement pass streams the rows again.
    """
    names = tuple(terms)
    state: PartialFit | None = None
    for x, y, w in chunks():
        state = fold_chunk(state, x, y, w, terms=names)
    if state is None:
        raise FitError("no rows to fit")

    def run_pass(b: Array) -> ResidualPass:
        acc: ResidualPass | None = None
        for x, y, w in chunks():
            acc = residual_pass(acc, b, x, y, w)
        if acc is None:
            raise FitError("the chunks were empty on a later pass")
        return acc

    return finish(state, run_pass, method)
