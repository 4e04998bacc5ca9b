"""`lawkit fit --cv COL | K`: every law refitted on each fold's training rows and scored on
its held-out rows (`fit.cv`; docs/fitting.md).

`--cv COL` leaves one value of COL out at a time (every batch size in turn), per law over the
values among its own rows; `--cv K` makes K folds: whole capture files when there are several
(assigned by a permutation drawn from `--seed`), else rows by a hash of (seed, file, row). Each
fold is a full fit of the law as it was asked for, through the same runner: an `auto`
breakpoint is searched again on the fold's training rows, so the score is of the law form, not
of one K chosen with the test rows in view.

The law stores `fit.cv`: `{column: COL | split: files|random, seed: S; folds, mape,
worst_mape}` with `mape` pooled over every held-out row (each row is held out once) and
`worst_mape` the worst fold's; `failed` counts folds whose training rows could not be fitted,
`empty` folds that held out no row to score (more folds than the law has rows).
A law whose rows hold one value of COL (nothing to leave out), or whose every fold failed, is
an error: a `fit.cv` of no fold would read as a score.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from lawkit.errors import FitError
from lawkit.fitting.rows import Split, row_uniform

if TYPE_CHECKING:
    from lawkit.fitting.captures.chunks import Chunk
    from lawkit.fitting.request import FitRequest, LawSpec
    from lawkit.fitting.rows import BoolArray
    from lawkit.fitting.types import Runner


@dataclass(frozen=True)
class Fold(Split):
    """The held-out rows of one fold: COL == value, a set of files, or a hash range."""

    column: str | None = None
    value: Any = None
    fold: int = 0
    folds: int = 0

    def held(self, chunk: Chunk) -> BoolArray:
        if self.column is not None:
            return np.asarray(chunk.columns[self.column] == self.value, dtype=bool)
        if self.files is not None:
            return np.full(chunk.size, chunk.file_index in self.files, dtype=bool)
        part = np.floor(row_uniform(self.seed, chunk) * self.folds)
        return np.asarray(part == self.fold, dtype=bool)

    def describe(self, found: Sequence[str]) -> dict[str, Any]:
        if self.column is not None:
            return {"split": "cv", "column": self.column, "value": self.value}
        return {"split": "cv", "fold": self.fold}


def parse_cv(text: str) -> int | str:
    """`--cv`'s value: a number of folds (>= 2) or a column name."""
    value = text.strip()
    if value.isdigit():
        if int(value) < 2:
            raise FitError(f"--cv {value}: expected at least 2 folds, or a column to leave "
                           "one value out at a time (--cv batch_size)")
        return int(value)
    if not value:
        raise FitError("--cv: expected a column (--cv batch_size) or a number of folds")
    return value


def cv_column(request: FitRequest) -> str | None:
    """The column `--cv` leaves out by value, if it names one."""
    if request.cv is None:
        return None
    parsed = parse_cv(request.cv)
    return parsed if isinstance(parsed, str) else None


def cross_validate(runner: Runner, laws: Sequence[LawSpec], request: FitRequest,
                   nfiles: int) -> dict[str, dict[str, Any]]:
    """Per law name, its `fit.cv` mapping (laws with fewer than two folds of rows get none)."""
    assert request.cv is not None
    parsed = parse_cv(request.cv)
    plans: list[list[Fold]]
    if isinstance(parsed, str):
        scan = runner.scan(laws, replace(request, by=(parsed,), holdout=None))
        plans = [[Fold(0.0, 0, None, column=parsed, value=key[0])
                  for key in scan.groups.get(i, [])] for i in range(len(laws))]
        record: dict[str, Any] = {"column": parsed}
    else:
        folds = _k_folds(parsed, request.seed, nfiles)
        plans = [folds for _ in laws]
        record = {"split": "files" if nfiles > 1 else "random", "seed": request.seed}
    out = {}
    for law, plan in zip(laws, plans, strict=True):
        if len(plan) < 2:
            assert isinstance(parsed, str)  # K folds are always K >= 2
            held = f" ({plan[0].value!r})" if plan else ""
            raise FitError(f"law {law.name}: --cv {parsed}: its rows hold one value of {parsed}"
                           f"{held}: leaving it out leaves no rows to fit; cross-validate by "
                           f"folds (--cv 5), or by a column with several values")
        n_total = used = failed = empty = 0
        ape = worst = 0.0
        first: str | None = None
        for fold in plan:
            try:
                fitted = runner.fit([law], request, fold)[0]
            except FitError as exc:
                failed += 1
                first = first or f"{_fold_name(fold)}: {exc.detail}"
                continue
            hold = fitted.law["fit"].get("holdout", {})
            n = int(hold.get("n", 0))
            if not n or "mape" not in hold:
                empty += 1
                continue
            used += 1
            n_total += n
            ape += float(hold["mape"]) * n
            worst = max(worst, float(hold["mape"]))
        if not used:
            why = f" (the first: {first})" if first else ": none held out a row it could score"
            raise FitError(f"--cv {request.cv}: every fold of law {law.name} failed{why}; with "
                           "no fold scored there is no cross-validation to store: choose "
                           "another --cv, or drop it")
        entry: dict[str, Any] = {**record, "folds": used}
        if n_total:
            entry["mape"] = ape / n_total
            entry["worst_mape"] = worst
        if failed:
            entry["failed"] = failed
        if empty:
            entry["empty"] = empty
        out[law.name] = entry
    return out


def _fold_name(fold: Fold) -> str:
    """A fold as a message names it."""
    if fold.column is not None:
        return f"leaving out {fold.column} = {fold.value!r}"
    return f"fold {fold.fold + 1} of {fold.folds}"


def _k_folds(k: int, seed: int, nfiles: int) -> list[Fold]:
    if nfiles > 1:
        if k > nfiles:
            raise FitError(f"--cv {k}: {nfiles} capture files, and folds are whole files when "
                           f"there are several: at most --cv {nfiles}")
        order = np.random.default_rng(seed).permutation(nfiles)
        return [Fold(0.0, seed, frozenset(int(f) for i, f in enumerate(order) if i % k == j),
                     fold=j, folds=k) for j in range(k)]
    return [Fold(0.0, seed, None, fold=j, folds=k) for j in range(k)]


__all__ = ["Fold", "cross_validate", "cv_column", "parse_cv"]
