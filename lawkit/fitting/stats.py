"""A law's statistics and its law-file mapping: the `fit` mapping from a `solve.FitResult`,
and the law (name, target, where, filter, terms, fit, domain) that `lawkit fit` writes.

The `fit` mapping of a law (keys in this order; a key is left out where it has no value):

    method        ols | huber | robust | nnls
    n             rows fitted (holdout rows excluded; weight-0 rows included)
    p             terms
    r2            R^2 (centred when the terms hold an intercept)
    rmse          sqrt(SSR / n)
    resid_sd      sqrt(SSR / (n - p))
                  n, r2, rmse, mape and resid_sd are unweighted over every fitted row, for
                  every method and with --weight (docs/fitting.md): what `score` prints
                  on the same rows
    mape          mean |residual| / |target| over rows with target != 0
    cond          condition number of the column-scaled design
    stderr        {term: standard error} (those of the final weighted step for huber/robust;
                  a coefficient nnls holds at 0 has none)
    ci95          {term: [low, high]}: coef -/+ t(0.975, n - p) * stderr
    scale         the method's own robust scale (huber: MAD; robust: the M-scale)
    downweighted  rows whose robust weight ended below 0.5 (huber, robust)
    weight        the weight column, with --weight
    dropped       rows dropped by --drop-invalid, and rows whose target cell is empty (a
                  region the step did not enter, docs/captures.md), when any
    holdout       {split: random, seed: S | split: files, files: [...]; fraction, n, r2, rmse,
                  mape}: the law scored on held-out rows (unweighted)

The law's `domain` is {feature: [min, max]} over the rows fitted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from lawkit.fitting.request import LawSpec


def law_entry(law: LawSpec, result: Any, *, domain: Mapping[str, Sequence[float]],
              dropped: int = 0, holdout: Mapping[str, Any] | None = None,
              split: Mapping[str, Any] | None = None,
              origin: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The law-file mapping of a fitted law (name, target, where, filter, terms, fit, domain)
    from its spec and a `solve.FitResult`; `origin` maps each term placed by a breakpoint
    search to its formula term (`fit.breakpoints`)."""
    stats = fit_statistics(result, weight=law.weight, dropped=dropped, holdout=holdout,
                           split=split)
    if origin:
        stats["breakpoints"] = dict(origin)
    if law.bounds:
        stats["bounds"] = law.bounds
    return {"name": law.name, "target": law.target, "where": law.where, "filter": law.filter,
            "terms": {t: float(c) for t, c in zip(law.terms, result.coef, strict=True)},
            "fit": stats,
            "domain": {k: [float(v[0]), float(v[1])] for k, v in domain.items()} or None}


def fit_statistics(result: Any, *, weight: str | None = None, dropped: int = 0,
                   holdout: Mapping[str, Any] | None = None,
                   split: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A law's `fit` mapping from a `solve.FitResult` (the shape is in the module docstring);
    non-finite values are left out (a law file holds finite numbers only)."""
    stats: dict[str, Any] = {"method": result.method, "n": int(result.n), "p": int(result.p)}
    for key in ("r2", "rmse", "resid_sd", "mape", "cond"):
        _put(stats, key, getattr(result, key))
    stderr = {t: float(s) for t, s in zip(result.terms, result.stderr, strict=True)
              if math.isfinite(s)}
    if stderr:
        stats["stderr"] = stderr
        dof = int(result.n) - int(result.p)
        if dof > 0:
            from scipy.special import stdtrit

            t = float(stdtrit(dof, 0.975))
            stats["ci95"] = {term: [float(c - t * stderr[term]), float(c + t * stderr[term])]
                             for term, c in zip(result.terms, result.coef, strict=True)
                             if term in stderr}
    if getattr(result, "scale", None) is not None:
        _put(stats, "scale", result.scale)
    if getattr(result, "downweighted", None) is not None:
        stats["downweighted"] = int(result.downweighted)
    if weight:
        stats["weight"] = weight
    if dropped:
        stats["dropped"] = int(dropped)
    if holdout is not None:
        hold: dict[str, Any] = dict(split or {})
        hold["n"] = int(holdout["n"])
        for key in ("r2", "rmse", "mape"):
            if key in holdout:
                _put(hold, key, holdout[key])
        stats["holdout"] = hold
    return stats


def _put(mapping: dict[str, Any], key: str, value: Any) -> None:
    if value is not None and math.isfinite(float(value)):
        mapping[key] = float(value)


__all__ = ["fit_statistics", "law_entry"]
