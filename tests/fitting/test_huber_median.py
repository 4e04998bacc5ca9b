"""Huber's exact MAD scale in fewer passes: a step's first selection pass gathers
the values near the previous step's median and counts those below them, with no histogram, so
the median is usually exact after one light pass over the rows instead of two, and the fit is
the same bit for bit."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from lawkit.fitting import methods, runner
from testing.rows import outlier_rows

TERMS = ("1", "a", "b")


def _rows() -> tuple[np.ndarray, np.ndarray]:
    return outlier_rows(300_000, seed=7, share=0.02, factor=5.0)


def _fit(x: np.ndarray, y: np.ndarray) -> tuple[list[float], float, int]:
    """The huber fit streamed in chunks of 40,000 rows: coefficients, scale, passes."""
    passes = 0

    def chunks() -> Iterator[tuple[np.ndarray, np.ndarray, None]]:
        nonlocal passes
        passes += 1
        for start in range(0, len(y), 40_000):
            yield x[start:start + 40_000], y[start:start + 40_000], None

    result = runner.run(methods.passes("huber", TERMS), runner.in_turn(chunks))
    return [float(c) for c in result.coef], float(result.scale or 0.0), passes


def test_the_median_near_the_last_one_takes_one_pass_and_changes_no_bit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _rows()
    coef, scale, passes = _fit(x, y)
    monkeypatch.setattr(methods, "_NEAR", 0)  # nothing gathered near: two passes a median
    coef_two, scale_two, passes_two = _fit(x, y)
    assert (coef, scale) == (coef_two, scale_two)
    steps = passes_two - passes
    assert steps >= 5 and passes < passes_two * 0.8, (passes, passes_two)


def test_too_many_values_near_the_last_median_fall_back_to_a_second_pass(
        monkeypatch: pytest.MonkeyPatch) -> None:
    x, y = _rows()
    exact = _fit(x, y)
    # gathers that outgrow the bound are dropped: every median takes its second pass again
    monkeypatch.setattr(methods, "_NEAR", 64)
    monkeypatch.setattr(methods._Median, "window", lambda self: (0, (1 << 20) - 1))
    coef, scale, passes = _fit(x, y)
    assert (coef, scale) == exact[:2] and passes > exact[2]


def test_a_median_near_the_last_one_takes_one_pass_that_counts_no_histogram() -> None:
    x, y = _rows()
    selects: list[methods.Select] = []
    folds: list[methods.Fold] = []
    answer = methods.answer

    def each(fn: Any) -> Iterator[Any]:
        request = fn.args[0]
        if isinstance(request, methods.Select):
            selects.append(request)
        if isinstance(request, methods.Fold):
            folds.append(request)
        for start in range(0, len(y), 40_000):
            yield answer(request, None, x[start:start + 40_000], y[start:start + 40_000], None)

    result = runner.run(methods.passes("huber", TERMS), each)
    # a step's fold gathers the values near the last median (a select only where it missed)
    near = [s for s in [*selects, *folds] if s.near is not None]
    histograms = [s for s in selects if any(not gather for _p, _s, gather in s.buckets)]
    assert result.iterations >= 5 and len(near) >= result.iterations - 1
    # gathered and counted below: no histogram
    assert all(s.buckets == () for s in selects if s.near is not None)
    # the first step's median and at most one step whose median left its window count them
    assert len(histograms) <= 2 + 1
