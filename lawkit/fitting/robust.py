"""The small-array mathematics of the robust methods: the high-breakdown start and the M-scale.

The methods themselves (``huber``, ``robust``, and their passes over chunks) are in
`lawkit.fitting.methods`; this module holds what they compute on a bounded sample in memory:

- `lts`: least trimmed squares by FAST-LTS (Rousseeuw & Van Driessen, Data Min. Knowl. Disc.
  12, 2006), the high-breakdown start of the MM-estimate (Yohai, Ann. Statist. 15(2), 1987);
- `m_scale`: the biweight M-scale of its residuals (50% breakdown, Rousseeuw & Yohai 1984);
- the tuning constants: Huber's c = 1.345 and the biweight's c = 4.685 (95% Gaussian
  efficiency), the MAD's consistency factor 0.6745.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from numpy.typing import NDArray

from lawkit.errors import FitError

Array = NDArray[np.float64]

HUBER_C = 1.345
BIWEIGHT_C = 4.685
# Biweight rho constant and target giving the M-scale 50% breakdown and consistency at the
# normal (Rousseeuw & Yohai 1984).
_S_C = 1.547645
_S_B = 0.5
MAD_NORMAL = 0.6745
MAX_IRLS = 100
_LTS_SUBSETS = 500
_LTS_KEEP = 10
_LTS_SUBSAMPLE = 1500


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


def lts(x: Array, y: Array, seed: int) -> Array:
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
    steps = MAX_IRLS if n <= _LTS_SUBSAMPLE else 2
    finals = [_concentrate(x, y, c, h, steps) for c in coef[np.argsort(obj, kind="stable")]
              [:_LTS_KEEP]]
    best, _obj = min(finals, key=lambda pair: pair[1])
    if n > _LTS_SUBSAMPLE:
        best, _obj = _concentrate(x, y, best, h, MAX_IRLS)
    return np.asarray(best, dtype=np.float64)


def _rho_biweight(u: Array, c: float) -> Array:
    """Tukey's biweight rho normalised to 1 beyond c."""
    t = np.minimum((u / c) ** 2, 1.0)
    return np.asarray(1.0 - (1.0 - t) ** 3, dtype=np.float64)


def m_scale(r: Array) -> float:
    """The biweight M-scale s solving mean(rho(r / s)) = 1/2 (50% breakdown)."""
    s = float(np.median(np.abs(r))) / MAD_NORMAL
    if s == 0.0:
        return 0.0
    for _ in range(200):
        new = s * math.sqrt(float(np.mean(_rho_biweight(r / s, _S_C))) / _S_B)
        if abs(new - s) <= 1e-12 * s:
            return new
        s = new
    return s
