"""Accuracy of lawkit's law forms against Vidur's own CPU-overhead predictors.

Run: .venv/bin/python bench/accuracy.py [--jobs N] [--sklearn-forest]

Data: the raw Vidur file `examples/sarathi-a100/cpu_overheads.csv` (Sarathi-Serve on A100, in
ms), one model per (model, TP) group (six groups of 13 rows; batch size 64 twice). Targets are
Vidur's own: `schedule_median`, `sampler_e2e_median`, `prepare_inputs_e2e_median`,
`process_model_outputs_median` and `ray_comm_time_mean`. The only feature is `batch_size`.

Splits, the same batch sizes for every group:
- interpolation: train on batch sizes 8, 24, 40, 56, 80, 112; test on the others;
- extrapolation: train on batch sizes <= 64; test on 80..128;
- leave one batch size out: each batch size in turn (both rows of 64 together).

Metric: MAPE (%) pooled over a group's test rows (over all folds of the split), then the mean
over the six groups and the worst group, then each of those averaged over the five overheads:
a cell is "mean / worst".

Methods (rows):
- lawkit's law forms, `LAWKIT_FORMS` below (label, formula with `y` for the target, method), each
  fitted through `lawkit.fit(..., by="model,tp", write=False)` and predicted by `Law.predict`. A
  form the installed lawkit cannot fit (a `LawkitError` on its first fit, e.g. `step(...)` before
  breakpoints land) is printed as "skipped: ..." and left out of the table.
- Vidur's two predictors as its `_train_cpu_overhead_models` builds them (commit 6d98aa8):
  `GridSearchCV` scored by MAPE, `cv = 2 if len(df) < 10 else 10` (unshuffled KFold over the
  group's rows in file order), best candidate refitted on all training rows;
  - RandomForest: n_estimators [500, 750], max_depth [32], min_samples_split [2, 5, 10],
    random_state 0 (Vidur leaves it unset);
  - polynomial: `make_pipeline(PolynomialFeatures(), LinearRegression())` over degree 1..5,
    include_bias, interaction_only and fit_intercept each True / False.
  Nothing is subsampled: every split, fold, group, overhead and grid candidate is fitted.

The forest. sklearn's RandomForestRegressor spends its time in Python per tree on these 3..12-row
fits, and the grid needs ~14 million trees (leave-one-out alone: 360 searches x 10 folds x 6
candidates): hours on 2 cores. So by default the forest inside the same GridSearchCV
is `ExactForest`, a vectorised re-implementation of what RandomForestRegressor computes for one
feature: the same per-tree seeds (drawn from random_state as sklearn draws them), the same
bootstrap counts, the same best-split rule (sklearn's MSE proxy, first maximum, threshold at the
midpoint of the neighbouring present values, a node with fewer than min_samples_split rows
present is a leaf) and the same prediction (x <= threshold goes left, x as float32). Every run
first checks it against RandomForestRegressor itself on random row subsets of the file and
stops if any prediction differs by more than 1e-9 relative.
`--sklearn-forest` uses RandomForestRegressor itself instead (hours).

Parallelism: the Vidur searches run as independent tasks over `--jobs` processes (default 2);
each GridSearchCV runs single-threaded, which changes nothing in what it computes.

The polynomial. sklearn 1.9 made LinearRegression's dense lstsq drop singular values below
`tol` = 1e-6 (relative); before, it used scipy's default, machine epsilon. Vidur ran before 1.9,
and the cut-off changes which rank-deficient polynomial wins the 2-fold searches (extrapolation
63.7 / 112.5 with 1e-6), so the bench sets tol to epsilon where the parameter exists.

Target: lawkit's recommended form beats both Vidur predictors on the mean and the
worst group in interpolation and leave-one-out, and on the mean in extrapolation.

What it last measured, dated, is in docs/performance.md (accuracy against Vidur's
predictors); the table of forms is in docs/fitting.md.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
try:
    import lawkit
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(ROOT))
    import lawkit

# One row per lawkit law form: (label, formula with `y` standing for the target, method).
LAWKIT_FORMS: list[tuple[str, str, str]] = [
    ("lawkit ols", "y ~ 1 + batch_size", "ols"),
    ("lawkit robust", "y ~ 1 + batch_size", "robust"),
    ("lawkit ols + step", "y ~ 1 + batch_size + step(batch_size,auto)", "ols"),
    ("lawkit robust + step", "y ~ 1 + batch_size + step(batch_size,auto)", "robust"),
    ("lawkit robust + hinge", "y ~ 1 + batch_size + hinge(batch_size,auto)", "robust"),
]

DATA = ROOT / "examples" / "sarathi-a100" / "cpu_overheads.csv"
TARGETS = {  # Vidur's overhead -> its target column
    "schedule": "schedule_median",
    "sampler_e2e": "sampler_e2e_median",
    "prepare_inputs_e2e": "prepare_inputs_e2e_median",
    "process_model_outputs": "process_model_outputs_median",
    "ray_comm_time": "ray_comm_time_mean",
}
GROUP = ["model", "tp"]
INTERP_TRAIN = (8, 24, 40, 56, 80, 112)
SPLITS = ("interpolation", "extrapolation", "leave one out")
SEED = 0
CAPTURED_ON = "00000000"  # the captures carry no engine digest; any will do, nothing is written

Fold = tuple[np.ndarray, np.ndarray]  # boolean masks over the rows: train, test


def load_rows() -> pd.DataFrame:
    """The Vidur file, as lawkit captures: model, tp, batch_size and the five targets."""
    raw = pd.read_csv(DATA)
    rows = raw.rename(columns={"model_name": "model", "tensor_parallel_degree": "tp"})
    return rows[[*GROUP, "batch_size", *TARGETS.values()]].reset_index(drop=True)


def folds(split: str, batch: np.ndarray) -> list[Fold]:
    """The (train, test) masks of a split, over rows with these batch sizes."""
    if split == "interpolation":
        train = np.isin(batch, INTERP_TRAIN)
        return [(train, ~train)]
    if split == "extrapolation":
        return [(batch <= 64, batch >= 80)]
    return [(batch != b, batch == b) for b in np.unique(batch)]


def mape(actual: np.ndarray, predicted: np.ndarray) -> float:
    """Mean absolute percentage error, in percent (no target in the file is zero)."""
    return float(np.mean(np.abs((actual - predicted) / actual)) * 100.0)


# -- the forest ---------------------------------------------------------------------------------

_MAX_INT = np.iinfo(np.int32).max
_EPS = np.finfo(np.float64).eps
_COUNTS: dict[tuple[int, int, int], np.ndarray] = {}


def _bootstrap_counts(seed: int, trees: int, n: int) -> np.ndarray:
    """(trees x n) bootstrap counts, as RandomForestRegressor(random_state=seed) draws them."""
    key = (seed, trees, n)
    if key not in _COUNTS:
        state = np.random.RandomState(seed)
        seeds = [state.randint(_MAX_INT) for _ in range(trees)]  # one per tree, in order
        counts = np.empty((trees, n))
        for t, s in enumerate(seeds):
            counts[t] = np.bincount(np.random.RandomState(s).randint(0, n, n), minlength=n)
        _COUNTS[key] = counts
    return _COUNTS[key]


def _grow(x: np.ndarray, y: np.ndarray, trees: int, min_split: int, seed: int,
          max_depth: int) -> tuple[np.ndarray, ...]:
    """Every tree at once, level by level: (threshold tree, threshold, leaf start, leaf value)."""
    counts = _bootstrap_counts(seed, trees, len(x))
    xs, at = np.unique(x, return_inverse=True)  # the distinct values; a split lies between two
    g = len(xs)
    w, s, q, present_rows = (np.zeros((trees, g)) for _ in range(4))
    for i, pos in enumerate(at):
        w[:, pos] += counts[:, i]
        s[:, pos] += counts[:, i] * y[i]
        q[:, pos] += counts[:, i] * y[i] ** 2
        present_rows[:, pos] += counts[:, i] > 0
    present = w > 0
    zero = np.zeros((trees, 1))
    cw, cs, cq, cn = (np.hstack([zero, np.cumsum(a, axis=1)]) for a in (w, s, q, present_rows))
    last_present = np.maximum.accumulate(np.where(present, np.arange(g), -1), axis=1)
    bound = np.arange(1, g)  # a split at bound p: left [lo, p), right [p, hi)
    t = np.arange(trees)
    lo, hi, depth = np.zeros(trees, int), np.full(trees, g), np.zeros(trees, int)
    leaf_t, leaf_lo, leaf_v, thr_t, thr_v = [], [], [], [], []
    while len(t):
        wn, sn = cw[t, hi] - cw[t, lo], cs[t, hi] - cs[t, lo]
        qn, nn = cq[t, hi] - cq[t, lo], cn[t, hi] - cn[t, lo]
        impurity = qn / wn - (sn / wn) ** 2
        wl = cw[t[:, None], bound[None, :]] - cw[t, lo][:, None]
        sl = cs[t[:, None], bound[None, :]] - cs[t, lo][:, None]
        wr, sr = wn[:, None] - wl, sn[:, None] - sl
        valid = ((bound > lo[:, None]) & (bound < hi[:, None]) & present[t[:, None], bound]
                 & (wl > 0) & (wr > 0))
        with np.errstate(divide="ignore", invalid="ignore"):
            proxy = np.where(valid, sl * sl / wl + sr * sr / wr, -np.inf)
        best = np.argmax(proxy, axis=1)  # the first maximum, as sklearn's strict '>'
        leaf = ((depth >= max_depth) | (nn < min_split) | (nn < 2) | (impurity <= _EPS)
                | ~valid.any(axis=1))
        leaf_t.append(t[leaf])
        leaf_lo.append(lo[leaf])
        leaf_v.append((sn / wn)[leaf])
        keep = ~leaf
        t, lo, hi, depth, p = t[keep], lo[keep], hi[keep], depth[keep], bound[best[keep]]
        thr_t.append(t)
        thr_v.append((xs[last_present[t, p - 1]] + xs[p]) / 2.0)
        t, lo, hi = np.concatenate([t, t]), np.concatenate([lo, p]), np.concatenate([p, hi])
        depth = np.concatenate([depth + 1, depth + 1])
    lt, ll, lv = np.concatenate(leaf_t), np.concatenate(leaf_lo), np.concatenate(leaf_v)
    order = np.lexsort((ll, lt))
    lt, lv = lt[order], lv[order]
    tt, tv = np.concatenate(thr_t), np.concatenate(thr_v)
    order = np.lexsort((tv, tt))
    return tt[order], tv[order], np.searchsorted(lt, np.arange(trees)), lv


def exact_forest_class() -> type:
    """ExactForest (see the docstring), a sklearn estimator so that GridSearchCV drives it."""
    from sklearn.base import BaseEstimator, RegressorMixin

    class ExactForest(RegressorMixin, BaseEstimator):
        def __init__(self, n_estimators: int = 100, max_depth: int | None = None,
                     min_samples_split: int = 2, random_state: int = 0) -> None:
            self.n_estimators = n_estimators
            self.max_depth = max_depth
            self.min_samples_split = min_samples_split
            self.random_state = random_state

        def fit(self, x: Any, y: Any) -> ExactForest:
            column = np.asarray(x, dtype=np.float32).astype(np.float64).reshape(len(y), -1)
            if column.shape[1] != 1:
                raise ValueError("ExactForest takes one feature")
            self.trees_ = _grow(column[:, 0], np.asarray(y, dtype=np.float64),
                                self.n_estimators, self.min_samples_split, self.random_state,
                                self.max_depth if self.max_depth is not None else 2**31)
            return self

        def predict(self, x: Any) -> np.ndarray:
            tt, tv, start, lv = self.trees_
            column = np.asarray(x, dtype=np.float32).astype(np.float64).reshape(-1)
            out = np.empty(len(column))
            for j, value in enumerate(column):
                leaf = np.bincount(tt, weights=tv < value, minlength=self.n_estimators)
                out[j] = lv[start + leaf.astype(int)].sum() / self.n_estimators
            return out

    return ExactForest


def check_forest(rows: pd.DataFrame, trials: int = 6) -> float:
    """The largest relative difference of ExactForest from RandomForestRegressor (stop > 1e-9)."""
    from sklearn.ensemble import RandomForestRegressor

    forest = exact_forest_class()
    rng = np.random.default_rng(SEED)
    grid = pd.DataFrame({"batch_size": np.arange(4, 140, 2)})
    groups = [g for _, g in rows.groupby(GROUP, sort=False)]
    worst = 0.0
    for i in range(trials):
        group = groups[i % len(groups)]
        target = list(TARGETS.values())[i % len(TARGETS)]
        train = group.iloc[np.sort(rng.choice(len(group), rng.integers(3, 14), replace=False))]
        params = {"n_estimators": (500, 750)[i % 2], "max_depth": 32,
                  "min_samples_split": (2, 5, 10)[i % 3], "random_state": SEED}
        ours = forest(**params).fit(train[["batch_size"]], train[target]).predict(grid)
        theirs = RandomForestRegressor(**params).fit(train[["batch_size"]], train[target])
        worst = max(worst, float(np.max(np.abs(ours / theirs.predict(grid) - 1.0))))
    if worst > 1e-9:
        raise SystemExit(f"ExactForest differs from RandomForestRegressor by {worst:.3g}")
    return worst


# -- Vidur's predictors -------------------------------------------------------------------------


def vidur_search(method: str, sklearn_forest: bool) -> tuple[Any, dict[str, list[Any]]]:
    """Vidur's estimator and grid for `method` ("forest" or "poly")."""
    if method == "poly":
        from sklearn.linear_model import LinearRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import PolynomialFeatures

        # sklearn 1.9 made LinearRegression's dense lstsq cut singular values below tol=1e-6
        # (relative) where it had used scipy's default, machine epsilon: Vidur ran before 1.9,
        # and the cut-off changes which rank-deficient polynomial wins its 2-fold search
        # (extrapolation 63.7 / 112 instead of 20.4 / 50). Epsilon gives back the old fits.
        regression = LinearRegression()
        if "tol" in regression.get_params():  # 1.7, 1.8: used on sparse data only
            regression.set_params(tol=float(np.finfo(np.float64).eps))
        return make_pipeline(PolynomialFeatures(), regression), {
            "polynomialfeatures__degree": [1, 2, 3, 4, 5],
            "polynomialfeatures__include_bias": [True, False],
            "polynomialfeatures__interaction_only": [True, False],
            "linearregression__fit_intercept": [True, False],
        }
    if sklearn_forest:
        from sklearn.ensemble import RandomForestRegressor

        estimator = RandomForestRegressor(random_state=SEED)
    else:
        estimator = exact_forest_class()(random_state=SEED)
    return estimator, {"n_estimators": [500, 750], "max_depth": [32],
                       "min_samples_split": [2, 5, 10]}


def vidur_task(method: str, sklearn_forest: bool, train: pd.DataFrame, test: pd.DataFrame,
               target: str) -> tuple[np.ndarray, float]:
    """One GridSearchCV as Vidur runs it, refitted on `train`: its predictions for `test` and the
    CPU seconds it took."""
    cpu = time.process_time()
    import sklearn
    from sklearn.metrics import make_scorer
    from sklearn.model_selection import GridSearchCV

    estimator, grid = vidur_search(method, sklearn_forest)
    search = GridSearchCV(estimator, grid, cv=2 if len(train) < 10 else 10,
                          scoring=make_scorer(mape, greater_is_better=False), n_jobs=None)
    # float64 arrays rather than Vidur's DataFrames: sklearn converts those to the same array,
    # and the conversion of a DataFrame on every one of the ~150,000 fits is most of their time
    x, y = train[["batch_size"]].to_numpy(np.float64), train[target].to_numpy(np.float64)
    with warnings.catch_warnings(), sklearn.config_context(assume_finite=True):
        warnings.simplefilter("ignore")
        search.fit(x, y)
        values = np.asarray(search.predict(test[["batch_size"]].to_numpy(np.float64)),
                            dtype=np.float64)
    return values, time.process_time() - cpu


# -- the runs -----------------------------------------------------------------------------------

Predictions = dict[tuple[str, str], np.ndarray]  # (method, split) -> predictions, NaN untested


def run_lawkit(rows: pd.DataFrame, tmp: Path) -> tuple[Predictions, list[str]]:
    """Every lawkit form on every split; the forms the installed lawkit cannot fit are skipped."""
    out: Predictions = {}
    skipped: list[str] = []
    batch = rows["batch_size"].to_numpy()
    for label, form, method in LAWKIT_FORMS:
        formulas = [form.replace("y ~", f"{target} ~", 1) for target in TARGETS.values()]
        try:
            for split in SPLITS:
                out[(label, split)] = lawkit_split(rows, folds(split, batch), formulas,
                                                   method, tmp)
        except lawkit.LawkitError as e:
            if any(key[0] == label for key in out):
                raise  # fitted before: not a form this lawkit lacks
            skipped.append(f"skipped: {label} ({form}, {method}): {e}")
    return out, skipped


def lawkit_split(rows: pd.DataFrame, split: list[Fold], formulas: list[str], method: str,
                 tmp: Path) -> np.ndarray:
    predicted = np.full((len(rows), len(TARGETS)), np.nan)
    for train, test in split:
        path = tmp / "train.csv"
        rows[train].to_csv(path, index=False)
        report = lawkit.fit(path, out=tmp / "laws.yaml", formula=formulas, by=GROUP,
                            method=method, captured_on=CAPTURED_ON, write=False,
                            workspace=ROOT)
        for fitted in report.laws:
            law = lawkit.Law.model_validate(fitted.law)
            where = fitted.spec.where or {}
            mask = test & (rows["model"] == where["model"]).to_numpy() & (
                rows["tp"] == where["tp"]).to_numpy()
            column = list(TARGETS.values()).index(fitted.spec.target)
            predicted[mask, column] = law.predict(rows[mask], on_domain="ignore")
    return predicted


def run_vidur(rows: pd.DataFrame, jobs: int, sklearn_forest: bool) -> tuple[Predictions, float]:
    """Both of Vidur's predictors on every split, and the CPU seconds their searches took."""
    from joblib import Parallel, delayed

    batch = rows["batch_size"].to_numpy()
    tasks, where = [], []
    for method in ("forest", "poly"):
        for split in SPLITS:
            for train, test in folds(split, batch):
                for _, group in rows.groupby(GROUP, sort=False):
                    mask = rows.index.isin(group.index)
                    for column, target in enumerate(TARGETS.values()):
                        tasks.append(delayed(vidur_task)(method, sklearn_forest,
                                                         rows[train & mask], rows[test & mask],
                                                         target))
                        where.append((method, split, test & mask, column))
    results = Parallel(n_jobs=jobs)(tasks)
    labels = {"forest": "Vidur RandomForest", "poly": "Vidur polynomial"}
    out: Predictions = {}
    for (method, split, mask, column), (values, _) in zip(where, results, strict=True):
        key = (labels[method], split)
        out.setdefault(key, np.full((len(rows), len(TARGETS)), np.nan))[mask, column] = values
    return out, sum(cpu for _, cpu in results)


def cell(rows: pd.DataFrame, predicted: np.ndarray) -> tuple[float, float]:
    """(mean over groups, worst group) of the pooled MAPE, each averaged over the overheads."""
    means, worsts = [], []
    for column, target in enumerate(TARGETS.values()):
        per_group = []
        for _, group in rows.groupby(GROUP, sort=False):
            index = group.index.to_numpy()
            tested = index[~np.isnan(predicted[index, column])]
            per_group.append(mape(rows.loc[tested, target].to_numpy(),
                                  predicted[tested, column]))
        means.append(np.mean(per_group))
        worsts.append(np.max(per_group))
    return float(np.mean(means)), float(np.mean(worsts))


def table(rows: pd.DataFrame, predictions: Predictions) -> list[str]:
    methods = list(dict.fromkeys(method for method, _ in predictions))
    width = max(len(m) for m in methods)
    lines = [f"{'method':<{width}}  " + "  ".join(f"{s:>15}" for s in SPLITS)]
    for method in methods:
        cells = []
        for split in SPLITS:
            mean, worst = cell(rows, predictions[(method, split)])
            cells.append(f"{f'{mean:.1f} / {worst:.1f}':>15}")
        lines.append(f"{method:<{width}}  " + "  ".join(cells))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="processes for Vidur's searches")
    parser.add_argument("--sklearn-forest", action="store_true",
                        help="RandomForestRegressor itself instead of ExactForest (hours)")
    args = parser.parse_args()
    start, start_cpu = time.perf_counter(), time.process_time()
    rows = load_rows()
    if not args.sklearn_forest:
        difference = check_forest(rows)
        print(f"ExactForest against RandomForestRegressor: largest relative difference "
              f"{difference:.1e}")
    with tempfile.TemporaryDirectory() as tmp:
        ours, skipped = run_lawkit(rows, Path(tmp))
    lawkit_s = time.perf_counter() - start
    lawkit_cpu = time.process_time() - start_cpu
    theirs, vidur_cpu = run_vidur(rows, args.jobs, args.sklearn_forest)
    for line in skipped:
        print(line)
    print("MAPE %, mean over (model, TP) groups / worst group, averaged over "
          f"{len(TARGETS)} overheads")
    for line in table(rows, {**ours, **theirs}):
        print(line)
    took = time.perf_counter() - start
    print(f"took {took:.0f} s: lawkit and the forest check {lawkit_s:.0f} s "
          f"({lawkit_cpu:.0f} s CPU), Vidur's searches {took - lawkit_s:.0f} s on {args.jobs} "
          f"processes ({vidur_cpu:.0f} s CPU)")


if __name__ == "__main__":
    main()
