"""Huber's IRLS in one pass a step: the fold of a step also gathers the |r| its weights are
computed from near the last median, so the next step's MAD scale needs no pass of its own, and
the fit is still the Huber estimate at the MAD scale of its own residuals."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from lawkit.fitting import methods, robust, runner
from testing.rows import outlier_rows

TERMS = ("1", "a", "b")


def _rows() -> tuple[np.ndarray, np.ndarray]:
    return outlier_rows(200_000, seed=11, share=0.03, factor=4.0)


def _streamed(x: np.ndarray, y: np.ndarray, method: str = "huber") -> tuple[Any, list[Any]]:
    requests: list[Any] = []

    def each(fn: Any) -> Iterator[Any]:
        requests.append(fn.args[0])
        for start in range(0, len(y), 30_000):
            yield methods.answer(fn.args[0], None, x[start:start + 30_000],
                                 y[start:start + 30_000], None)

    return runner.run(methods.passes(method, TERMS), each), requests


def test_a_huber_step_takes_one_pass_over_the_rows() -> None:
    x, y = _rows()
    result, requests = _streamed(x, y)
    selects = sum(isinstance(r, methods.Select) for r in requests)
    folds = sum(isinstance(r, methods.Fold) for r in requests)
    assert result.iterations >= 5
    # the first fold and a fold per step, the last of which found the one before it moved
    # nothing
    assert folds == result.iterations + 1
    # the least-squares start's median (radix selection), at most one step whose median
    # left its window and a light check of the last step: no select pass per step
    assert selects <= 7 < result.iterations
    assert len(requests) <= result.iterations + 10


def test_the_fit_is_the_huber_estimate_at_the_mad_of_its_own_residuals() -> None:
    x, y = _rows()
    result, _requests = _streamed(x, y)
    coef = np.array(result.coef)
    # a textbook IRLS in memory, the scale of each step from its own coefficients
    b = np.linalg.lstsq(x, y, rcond=None)[0]
    for _ in range(200):
        r = y - x @ b
        scale = float(np.median(np.abs(r))) / robust.MAD_NORMAL
        w = np.minimum(1.0, robust.HUBER_C * scale / np.maximum(np.abs(r), 1e-300))
        sw = np.sqrt(w)
        new = np.linalg.lstsq(x * sw[:, None], y * sw, rcond=None)[0]
        done = np.max(np.abs(x @ (new - b))) <= 1e-13 * scale
        b = new
        if done:
            break
    np.testing.assert_allclose(coef, b, rtol=1e-8)
    scale = float(np.median(np.abs(y - x @ coef))) / robust.MAD_NORMAL
    assert abs(float(result.scale or 0.0) / scale - 1.0) < 1e-8


def test_robust_samples_on_its_first_pass_and_checks_its_last_step_without_a_fold(
        monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _rows()
    result, requests = _streamed(x, y, "robust")
    assert not any(isinstance(r, methods.Sample) for r in requests)
    assert isinstance(requests[0], methods.Fold) and requests[0].sample is not None
    folds = sum(isinstance(r, methods.Fold) for r in requests)
    checks = [r for r in requests if isinstance(r, methods.Select)]
    assert result.iterations >= 5 and folds == result.iterations + 1
    assert len(checks) == 1 and checks[0].buckets == () and checks[0].step is not None
    # the same fit, bit for bit, as when every step's check rides on a fold
    monkeypatch.setattr(methods, "_likely_still", lambda moves, limit: False)
    again, requests_again = _streamed(x, y, "robust")
    assert (again.coef, again.scale, again.iterations) == (result.coef, result.scale,
                                                           result.iterations)
    assert sum(isinstance(r, methods.Fold) for r in requests_again) == folds + 1


def test_a_step_the_first_rows_show_moved_is_not_checked_again_by_its_fold(
        monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _rows()
    for method in ("huber", "robust"):
        result, requests = _streamed(x, y, method)
        steps = [r for r in requests if isinstance(r, methods.Fold) and r.robust is not None]
        unchecked = [r for r in steps[1:] if r.step is None]
        assert len(unchecked) >= len(steps) // 2, (len(unchecked), len(steps))
        # the same fit, bit for bit, as when every fold measures its step over every row
        monkeypatch.setattr(methods, "_surely_moved", lambda rows, step, limit: None)
        again, requests_again = _streamed(x, y, method)
        monkeypatch.undo()
        assert (again.coef, again.scale, again.iterations) == (result.coef, result.scale,
                                                               result.iterations)
        steps_again = [r for r in requests_again
                       if isinstance(r, methods.Fold) and r.robust is not None]
        # (a step whose light check found it moved is not checked by its fold either)
        assert sum(r.step is None for r in steps_again[1:]) <= 1
