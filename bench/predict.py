"""Benchmark Law.predict over many rows against the floor: a plain `X @ coef` on the same arrays.

Run: .venv/bin/python bench/predict.py [--rows N] [--runs N]

A law shaped like a scheduling law, `host_s ~ 1 + num_seqs + num_tokens + num_seqs:max_context`,
with a domain on every feature, over N rows (default 1,000,000) of float64 columns, all inside
the domain (the common case: no warning). Best of N timed runs after a warm-up, in one process:

1. `law.predict(frame)` on a pandas DataFrame (the default, `on_domain="warn"`: domain checked);
2. `law.predict(columns)` on a mapping of the same numpy arrays;
3. the floor: `X @ coef` with X the (rows x terms) design built beforehand (its product column
   included), so only the product-sum is timed; target: (1) and (2) within 2x of it.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

try:
    from lawkit.lawfiles.lawfile import Law
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from lawkit.lawfiles.lawfile import Law

TERMS = {"1": 2.1e-3, "num_seqs": 1.2e-4, "num_tokens": 3.1e-8, "num_seqs:max_context": 1.0e-12}
DOMAIN = {"num_seqs": [1.0, 256.0], "num_tokens": [1.0, 16384.0], "max_context": [128.0, 131072.0]}


def best_of(runs: int, candidates: dict[str, Callable[[], Any]]) -> dict[str, float]:
    """The best wall time of each candidate over `runs` rounds, in seconds.

    Each round times every candidate once, so that load from elsewhere on the machine falls on
    all of them alike rather than on whichever ran during it.
    """
    best = dict.fromkeys(candidates, float("inf"))
    for fn in candidates.values():
        fn()
    for _ in range(runs):
        for name, fn in candidates.items():
            start = time.perf_counter()
            fn()
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    n = args.rows
    columns = {
        "num_seqs": rng.integers(1, 257, n).astype(np.float64),
        "num_tokens": rng.integers(1, 16385, n).astype(np.float64),
        "max_context": rng.integers(128, 131073, n).astype(np.float64),
    }
    frame = pd.DataFrame(columns)
    law = Law(name="prefill", target="host_s", terms=TERMS, domain=DOMAIN)
    design = np.column_stack([np.ones(n), columns["num_seqs"], columns["num_tokens"],
                              columns["num_seqs"] * columns["max_context"]])
    coef = np.array(list(TERMS.values()))

    expected = design @ coef
    for data in (frame, columns):
        got = law.predict(data)
        assert np.allclose(got, expected, rtol=1e-12, atol=0), "predict disagrees with X @ coef"

    scalar = {"num_seqs": 17.0, "num_tokens": 4096.0, "max_context": 8192.0}
    timings = best_of(args.runs, {
        "floor": lambda: design @ coef,
        "Law.predict(DataFrame)": lambda: law.predict(frame),
        "Law.predict(dict of arrays)": lambda: law.predict(columns),
        "Law.predict(..., on_domain='ignore')": lambda: law.predict(columns, on_domain="ignore"),
        "scalar": lambda: [law.predict(scalar) for _ in range(1000)],
    })
    floor = timings.pop("floor")
    one_row = timings.pop("scalar") / 1000

    print(f"{n:,} rows, {len(TERMS)} terms, best of {args.runs} runs")
    print(f"  {'X @ coef (design prebuilt)':40s} {floor * 1e3:8.2f} ms   1.00x")
    worst = 0.0
    for name, seconds in timings.items():
        ratio = seconds / floor
        worst = max(worst, ratio)
        print(f"  {name:40s} {seconds * 1e3:8.2f} ms   {ratio:.2f}x")
    print(f"  {'Law.predict(dict of scalars), one row':40s} {one_row * 1e6:8.2f} us")
    target = 2.0
    print(f"worst ratio {worst:.2f}x (target <= {target:.0f}x): "
          f"{'ok' if worst <= target else 'MISSED'}")
    return 0 if worst <= target else 1


if __name__ == "__main__":
    sys.exit(main())
