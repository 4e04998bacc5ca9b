"""Generated capture rows for the fitting tests."""

from __future__ import annotations

import numpy as np


def outlier_rows(n: int, *, seed: int, share: float, factor: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """`n` rows of a host time linear in a batch size and a token count, with heavy-tailed noise
    and a `share` of outliers scaled by `factor`: the design (columns 1, a, b; Fortran order)
    and the target."""
    rng = np.random.default_rng(seed)
    x = np.empty((n, 3), order="F")
    x[:, 0] = 1.0
    x[:, 1] = rng.integers(1, 257, n)
    x[:, 2] = rng.uniform(0.0, 1e4, n)
    y = x @ np.array([1e-3, 2e-6, 3e-8]) + rng.standard_t(3, n) * 1e-4
    y[rng.random(n) < share] *= factor
    return x, y
