"""Robust and bounded fits on top of the least-squares core in `lawkit.fitting.solve`.

- ``huber``: Huber M-estimate (c = 1.345) by iteratively reweighted least squares, the scale
  re-estimated every iteration as median|r| / 0.6745 (the MAD about zero, as statsmodels' RLM).
- ``robust``: an MM-estimate (Yohai, Ann. Statist. 15(2), 1987): a high-breakdown start by
  least trimmed squares (FAST-LTS, Rousseeuw & Van Driessen, Data Min. Knowl. Disc. 12, 2006),
  its residuals' M-scale (biweight, 50% breakdown) held fixed, then Tukey biweight IRLS
  (c = 4.685, 95% Gaussian efficiency). Regime breaks at the edge of the domain (DESIGN.md
  section 8) move Huber almost as far as OLS; a redescending fit ignores them.
- ``nnls``: every coefficient >= 0 (Lawson-Hanson active set on the R factor, then the free
  coefficients refitted and refined to the float64 limit).

Each IRLS step is one weighted least-squares fit (`fold_chunk` + `solve_partial`), so a
distributed fit can run every step as one more fold over the chunks. User weights multiply the
robust weights; the LTS start uses the rows of positive user weight, unweighted. The statistics
of a robust fit are those of its final weighted least-squares step (weights = user * robust):
``resid_sd`` describes the rows the fit kept, ``scale`` is the robust scale and
``downweighted`` counts rows whose robust weight ended below 0.5. Standard errors are those of
that final step, a first-order approximation.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

import numpy as np
import scipy.optimize
from numpy.typing import ArrayLike

from lawkit.errors import FitError
from lawkit.fitting.solve import (
    EPS,
    Array,
    FitResult,
    condition,
    fit_ols,
    fold_chunk,
    r2_of,
    solve_partial,
)

HUBER_C = 1.345
BIWEIGHT_C = 4.685
# Biweight rho constant and target giving the M-scale 50% breakdown and consistency at the
# normal (Rousseeuw & Yohai 1984).
_S_C = 1.547645
_S_B = 0.5
_MAD_NORMAL = 0.6745
_MAX_IRLS = 100
_LTS_SUBSETS = 500
_LTS_KEEP = 10
_LTS_SUBSAMPLE = 1500


def _arrays(x: ArrayLike, y: ArrayLike, weights: ArrayLike | None
            ) -> tuple[Array, Array, Array]:
    xa = np.asarray(x, dtype=np.float64)
    xa = xa.reshape(-1, 1) if xa.ndim == 1 else xa
    ya = np.asarray(y, dtype=np.float64).reshape(-1)
    wa = np.ones(ya.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    return xa, ya, wa.reshape(-1)


def _wls(x: Array, y: Array, w: Array, terms: tuple[str, ...]) -> Array:
    """One weighted least-squares step: the QR solution from a single fold."""
    try:
        return solve_partial(fold_chunk(None, x, y, w, terms=terms))
    except FitError as err:
        raise FitError(f"after downweighting outliers, {err.detail}") from err


def _robust_result(x: Array, y: Array, w_user: Array, w_rob: Array, terms: tuple[str, ...],
                   method: str, scale: float, iterations: int) -> FitResult:
    """The final weighted least-squares step, refined, with the robust summary attached."""
    try:
        res = fit_ols(x, y, terms, w_user * w_rob, method=method)
    except FitError as err:
        raise FitError(f"after downweighting outliers, {err.detail}") from err
    kept = w_user > 0.0
    return dataclasses.replace(res, iterations=iterations, scale=scale,
                               downweighted=int(np.count_nonzero(w_rob[kept] < 0.5)))


def _changed(x: Array, step: Array, scale: float) -> bool:
    """Whether an IRLS step still moves the fitted values by more than 1e-10 of the scale."""
    return float(np.max(np.abs(x @ step))) > 1e-10 * scale


def fit_huber(x: ArrayLike, y: ArrayLike, terms: Sequence[str], weights: ArrayLike | None = None,
              *, c: float = HUBER_C) -> FitResult:
    """Huber M-estimate by IRLS with the MAD scale re-estimated every iteration."""
    names = tuple(terms)
    xa, ya, wu = _arrays(x, y, weights)
    b = solve_partial(fold_chunk(None, xa, ya, weights, terms=names))
    kept = wu > 0.0
    w = np.ones_like(ya)
    scale = 0.0
    iterations = 0
    while iterations < _MAX_IRLS:
        iterations += 1
        r = ya - xa @ b
        scale = float(np.median(np.abs(r[kept]))) / _MAD_NORMAL
        if scale <= EPS * float(np.max(np.abs(ya))):
            break  # more than half the rows fit exactly: nothing left to downweight
        w = np.minimum(1.0, c * scale / np.maximum(np.abs(r), np.finfo(np.float64).tiny))
        new = _wls(xa, ya, wu * w, names)
        step, b = new - b, new
        if not _changed(xa, step, scale):
            break
    return _robust_result(xa, ya, wu, w, names, "huber", scale, iterations)


def _batched_ls(xs: Array, ys: Array) -> tuple[Array, Array]:
    """Least squares on a stack of small problems (K, m, p), (K, m) → (coef (K, p), ok (K,))."""
    q, r = np.linalg.qr(xs)
    diag = np.abs(np.diagonal(r, axis1=1, axis2=2))
    ok = diag.min(axis=1) > 1e-10 * np.maximum(diag.max(axis=1), np.finfo(np.float64).tiny)
    eye = np.eye(r.shape[-1])
    r = np.where(ok[:, None, None], r, eye)
    z = np.einsum("kmp,km->kp", q, ys)
    return np.linalg.solve(r, z[..., None])[..., 0], ok


def _c_steps(x: Array, y: Array, coef: Array, h: int, steps: int) -> Array:
    """Concentration steps for a stack of candidates: refit each on its h best-fitting rows."""
    for _ in range(steps):
        res = (y[None, :] - coef @ x.T) ** 2
        keep = np.argpartition(res, h - 1, axis=1)[:, :h]
        new, ok = _batched_ls(x[keep], y[keep])
        coef = np.where(ok[:, None], new, coef)
    return coef


def _concentrate(x: Array, y: Array, coef: Array, h: int, steps: int) -> tuple[Array, float]:
    """C-steps for one candidate on all rows until its h-subset stops changing.

    Returns the coefficients and the LTS objective (sum of the h smallest squared residuals).
    Each step never increases the objective (Rousseeuw & Van Driessen 2006, theorem 1).
    """
    keep = np.empty(0, dtype=np.intp)
    for _ in range(steps):
        res = (y - x @ coef) ** 2
        new_keep = np.sort(np.argpartition(res, h - 1)[:h])
        if np.array_equal(new_keep, keep):
            break
        keep = new_keep
        coef = np.asarray(np.linalg.lstsq(x[keep], y[keep], rcond=None)[0], dtype=np.float64)
    res = (y - x @ coef) ** 2
    return coef, float(np.sum(np.partition(res, h - 1)[:h]))


def _lts(x: Array, y: Array, seed: int) -> Array:
    """Least-trimmed-squares coefficients by FAST-LTS (deterministic for a given seed).

    Elemental p-subsets (all of them when there are at most 500), two C-steps each, the ten
    best concentrated to convergence. On more than 1500 rows the candidates come from a random
    subsample of 1500, the ten best get two C-steps on all rows and only the best of those is
    concentrated to convergence (a simplification of the paper's nested subsamples that keeps
    memory O(rows)).
    """
    n, p = x.shape
    h = (n + p + 1) // 2
    rng = np.random.default_rng(seed)
    sub_x, sub_y = x, y
    if n > _LTS_SUBSAMPLE:
        pick = np.sort(rng.choice(n, _LTS_SUBSAMPLE, replace=False))
        sub_x, sub_y = x[pick], y[pick]
    m = sub_x.shape[0]
    if math.comb(m, p) <= _LTS_SUBSETS:
        subsets = np.array(list(itertools.combinations(range(m), p)), dtype=np.intp)
    else:
        subsets = np.argsort(rng.random((_LTS_SUBSETS, m)), axis=1)[:, :p]
    coef, ok = _batched_ls(sub_x[subsets], sub_y[subsets])
    if not np.any(ok):
        raise FitError("no elemental subset of the rows has full rank: the robust fit needs "
                       "rows that vary in every term")
    coef = _c_steps(sub_x, sub_y, coef[ok], (m + p + 1) // 2, 2)
    res = (sub_y[None, :] - coef @ sub_x.T) ** 2
    obj = np.partition(res, (m + p + 1) // 2 - 1, axis=1)[:, : (m + p + 1) // 2].sum(axis=1)
    steps = _MAX_IRLS if n <= _LTS_SUBSAMPLE else 2
    finals = [_concentrate(x, y, c, h, steps) for c in coef[np.argsort(obj, kind="stable")]
              [:_LTS_KEEP]]
    best, _obj = min(finals, key=lambda pair: pair[1])
    if n > _LTS_SUBSAMPLE:
        best, _obj = _concentrate(x, y, best, h, _MAX_IRLS)
    return np.asarray(best, dtype=np.float64)


def _rho_biweight(u: Array, c: float) -> Array:
    """Tukey's biweight rho normalised to 1 beyond c."""
    t = np.minimum((u / c) ** 2, 1.0)
    return np.asarray(1.0 - (1.0 - t) ** 3, dtype=np.float64)


def _m_scale(r: Array) -> float:
    """The biweight M-scale s solving mean(rho(r / s)) = 1/2 (50% breakdown)."""
    s = float(np.median(np.abs(r))) / _MAD_NORMAL
    if s == 0.0:
        return 0.0
    for _ in range(200):
        new = s * math.sqrt(float(np.mean(_rho_biweight(r / s, _S_C))) / _S_B)
        if abs(new - s) <= 1e-12 * s:
            return new
        s = new
    return s


def fit_mm(x: ArrayLike, y: ArrayLike, terms: Sequence[str], weights: ArrayLike | None = None,
           *, c: float = BIWEIGHT_C, seed: int = 0) -> FitResult:
    """MM-estimate: FAST-LTS start, M-scale, then Tukey biweight IRLS with that scale fixed."""
    names = tuple(terms)
    xa, ya, wu = _arrays(x, y, weights)
    state = fold_chunk(None, xa, ya, weights, terms=names)
    solve_partial(state)  # rank and row-count checks on the whole design, with their messages
    kept = wu > 0.0
    # Columns scaled by powers of two (exact) so the small elemental solves are well posed.
    colscale = np.exp2(np.round(np.log2(np.maximum(np.abs(xa).max(axis=0), 1e-300))))
    b = _lts(xa[kept] / colscale, ya[kept], seed) / colscale
    r = ya - xa @ b
    scale = _m_scale(r[kept])
    if scale <= EPS * float(np.max(np.abs(ya))):
        # More than half the rows lie exactly on the LTS fit: those rows are the fit.
        w = (np.abs(r) <= EPS * np.abs(ya) * 4).astype(np.float64)
        return _robust_result(xa, ya, wu, w, names, "robust", 0.0, 0)
    w = np.ones_like(ya)
    iterations = 0
    while iterations < _MAX_IRLS:
        iterations += 1
        u = r / (c * scale)
        w = np.where(np.abs(u) < 1.0, (1.0 - u * u) ** 2, 0.0)
        new = _wls(xa, ya, wu * w, names)
        step, b = new - b, new
        r = ya - xa @ b
        if not _changed(xa, step, scale):
            break
    return _robust_result(xa, ya, wu, w, names, "robust", scale, iterations)


def fit_nnls(x: ArrayLike, y: ArrayLike, terms: Sequence[str], weights: ArrayLike | None = None
             ) -> FitResult:
    """Least squares with every coefficient >= 0.

    Lawson-Hanson NNLS runs on the R factor, whose objective equals the rows' up to a constant;
    the coefficients it leaves free are then refitted by the refined least-squares core.
    Coefficients held at 0 are not estimated: their standard error is NaN and ``resid_sd``
    uses n minus the number of free coefficients.
    """
    names = tuple(terms)
    xa, ya, _wu = _arrays(x, y, weights)
    state = fold_chunk(None, xa, ya, weights, terms=names)
    cond = condition(state)  # rank and row checks before any bounded solve
    p = len(names)
    full = solve_partial(state)
    if np.all(full >= 0.0):
        return fit_ols(xa, ya, names, weights, method="nnls")
    r = state.r
    bs, _norm = scipy.optimize.nnls(r[:p, :p], r[:p, p])
    free = np.flatnonzero(bs > 0.0)
    coef = np.zeros(p)
    stderr = np.full(p, math.nan)
    if free.size:
        # Zero coefficients drop out of X b, so the refit's residuals are the fit's residuals.
        sub = fit_ols(xa[:, free], ya, [names[j] for j in free], weights, method="nnls")
        coef[free], stderr[free] = sub.coef, sub.stderr
        ssr = sub.rmse**2 * state.sum_w
        base = dataclasses.replace(sub, r2=r2_of(state, ssr))
    else:
        ssr = state.m2_y + state.sum_w * state.mean_y**2  # every coefficient 0: r = y
        base = FitResult(terms=(), coef=(), stderr=(), n=state.n, p=0,
                         resid_sd=math.sqrt(ssr / state.n), rmse=math.sqrt(ssr / state.sum_w),
                         r2=r2_of(state, ssr), mape=1.0, cond=cond, domain=(), method="nnls",
                         iterations=0)
    return dataclasses.replace(
        base, terms=names, coef=tuple(float(v) for v in coef),
        stderr=tuple(float(v) for v in stderr), p=p, cond=cond,
        domain=tuple((float(a), float(b)) for a, b in zip(state.col_min, state.col_max,
                                                          strict=True)))
