"""Benchmark `lawkit.capture`: what a region's enter plus exit costs in the engine's step.

Run: .venv/bin/python bench/capture.py [--steps N] [--rounds N]

Two loops of N steps (default 100,000) into a CSV capture, not recording a footprint: one
whose steps enter two empty regions (`with cap.region("schedule_s"): pass`, then
`"sample_s"`), and the same loop with none. The rounds (default 5) interleave the two loops,
so that load from elsewhere on the machine falls on both alike; the figure is the median over
rounds of (with regions - without) / (2 N): one region's enter plus exit, the clock reads and
the footprint markers (`lawkit.footprint.enter_region` / `exit_region`) included. The step's
own cost (its row, the features checked) is shown beside it. Target (docs/captures.md):
at most 1.5 us per region. Exit 1 when the figure misses it.

Both the wall time and the process's CPU time are measured: on a machine other jobs load (the
load average is printed), wall time counts the time they held the CPU, CPU time does not, so
the target is judged on CPU time and the wall figure is shown beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

try:
    from lawkit import capture
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from lawkit import capture

TARGET_US = 1.5
REGIONS = ("schedule_s", "sample_s")


def with_regions(cap: capture.Capture, steps: int) -> None:
    """Steps that enter two empty regions each."""
    schedule, sample = cap.region("schedule_s"), cap.region("sample_s")
    for i in range(steps):
        with cap.step(batch_size=i):
            with schedule:
                pass
            with sample:
                pass


def without_regions(cap: capture.Capture, steps: int) -> None:
    """The same steps, entering no region."""
    for i in range(steps):
        with cap.step(batch_size=i):
            pass


def timed(loop: Callable[[capture.Capture, int], None], folder: Path, steps: int,
          ) -> tuple[float, float]:
    """(wall, CPU) seconds for `steps` steps of `loop` into a new capture (its closing not
    included)."""
    name = folder / f"{loop.__name__}-{time.monotonic_ns()}.csv"
    with capture.open(name, features=("batch_size",), regions=REGIONS,
                      digest="0badc0de") as cap:
        cap.steps()
        wall, cpu = time.perf_counter(), time.process_time()
        loop(cap, steps)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    name.unlink()
    return wall, cpu


def per_region(regions: list[float], plain: list[float], steps: int) -> list[float]:
    """Each round's cost of one region's enter plus exit, in microseconds."""
    return [(r - p) / (2 * steps) * 1e6 for r, p in zip(regions, plain, strict=True)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    regions, plain = [], []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        timed(with_regions, folder, 1000)  # warm-up
        for _ in range(args.rounds):
            regions.append(timed(with_regions, folder, args.steps))
            plain.append(timed(without_regions, folder, args.steps))
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"lawkit.capture, {args.steps:,} steps x {args.rounds} interleaved rounds, "
          f"Python {sys.version.split()[0]}, not recording, load average {load}")
    figure = 0.0
    for i, clock in enumerate(("wall", "CPU")):  # as `timed` returns them
        rounds = per_region([r[i] for r in regions], [p[i] for p in plain], args.steps)
        step_us = statistics.median(p[i] for p in plain) / args.steps * 1e6
        figure = median = statistics.median(rounds)  # the last, CPU time, is judged
        print(f"  {clock + ' time:':10} a step without regions {step_us:5.2f} us; a region's "
              f"enter plus exit {median:5.2f} us median "
              f"(rounds: {', '.join(f'{v:.2f}' for v in rounds)})")
    print(f"  target: at most {TARGET_US} us (CPU time): "
          f"{'met' if figure <= TARGET_US else 'MISSED'}")
    return 0 if figure <= TARGET_US else 1


if __name__ == "__main__":
    sys.exit(main())
