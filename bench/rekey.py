"""Benchmark `lawkit check` and `lawkit rekey` on 1,000 and 10,000 law files, whole process.

Run: .venv/bin/python bench/rekey.py [--sizes 1000,10000] [--runs N] [--keep DIR]

Each workspace holds realistic law files (about 30 lines: 4 laws with terms, fit statistics
and domain, one fit entry, labels), all keyed to a digest older than the engine's, so that
`check` finds every one stale and `rekey` edits every one. `check` is timed three ways:
`--no-cache` (every file parsed: CI on a fresh machine), with its cache filled by the run
before (pre-commit, over files that did not change) and right after a rekey (every file new
to the cache, which it then fills). Beside them, in the same run and interleaved with them (the
machine may be shared: round-robin keeps the comparison fair): `python -c pass` (the floor of
any Python command) and `cat` of all the law files (the floor of reading them). Each rekey
starts from the same stale files, restored between runs (not timed); check's cache lives in a
temp folder ($LAWKIT_CACHE_DIR). Prints the median and best of N runs, the ratio to
`python -c pass`, and the targets at 1,000 files: check under 1 s, rekey under 3 s.

What it last measured, dated, is in docs/performance.md (check and rekey on 1,000 and
10,000 law files).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # testing/: shared with tests
from testing.workspaces import law_text, laws, make_engine

REPO = Path(__file__).resolve().parent.parent

OLD = "59e9ff5a"
COLD = "lawkit check --no-cache"
WARM = "lawkit check"
AFTER = "lawkit check, after"
TARGETS = {(COLD, 1000): 1.0, (WARM, 1000): 1.0, ("lawkit rekey", 1000): 3.0}


def make_workspace(root: Path, files: int) -> list[Path]:
    """A workspace of `files` stale law files in 20 folders; returns their paths."""
    (root / "lawkit.toml").write_text('laws = "laws"\n\n[digest]\nroot = "engine"\n')
    make_engine(root / "engine")
    law_dicts = [laws(seed=seed) for seed in range(16)]
    paths = []
    for i in range(files):
        path = root / "laws" / f"cell{i % 20:02d}" / f"law{i:05d}.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        labels = {"cell": f"crs{i:05d}", "model": "deepseek-v4-pro", "parallel": "dpa8",
                  "role": "prefill" if i % 2 else "decode"}
        path.write_text(law_text(key=OLD, labels=labels, law_dicts=law_dicts[i % 16]))
        paths.append(path)
    return paths


def timed(command: list[str], cwd: Path, expect: int) -> float:
    start = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != expect:
        sys.exit(f"{' '.join(command[:3])} exited {done.returncode}, expected {expect}: "
                 f"{done.stderr.decode()[-500:]}")
    return elapsed


def bench_size(root: Path, files: int, runs: int, lawkit: str) -> list[tuple[str, list[float]]]:
    paths = make_workspace(root, files)
    pristine = root / "pristine"
    shutil.copytree(root / "laws", pristine)
    lines = sum(p.read_text().count("\n") for p in paths[:50]) / min(50, len(paths))
    print(f"\n{files} law files, {lines:.0f} lines each on average, "
          f"{sum(p.stat().st_size for p in paths) / 1e6:.1f} MB", flush=True)

    def restore() -> None:
        shutil.rmtree(root / "laws")
        shutil.copytree(pristine, root / "laws")

    rel = [str(p.relative_to(root)) for p in paths]
    commands: list[tuple[str, Callable[[], float]]] = [
        ("python -c pass", lambda: timed([sys.executable, "-c", "pass"], root, 0)),
        ("cat all law files", lambda: timed(["cat", *rel], root, 0)),
        (COLD, lambda: timed([lawkit, "check", "--no-cache"], root, 1)),
        (WARM, lambda: timed([lawkit, "check"], root, 1)),
        ("lawkit rekey", lambda: timed([lawkit, "rekey", "--why", "bench"], root, 0)),
        (AFTER, lambda: timed([lawkit, "check"], root, 0)),
    ]
    times: dict[str, list[float]] = {name: [] for name, _ in commands}
    for name, run in commands:  # warm-up: page cache, .pyc files, check's cache
        run()
        if name == AFTER:
            restore()
    for _ in range(runs):
        for name, run in commands:
            times[name].append(run())
        restore()
    return list(times.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="build the workspaces here and keep them")
    args = parser.parse_args()
    lawkit = shutil.which("lawkit", path=str(Path(sys.executable).parent)) or "lawkit"
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.2f} at start; {args.runs} runs each, interleaved")
    base = args.keep or Path(tempfile.mkdtemp(prefix="lawkit-bench-"))
    os.environ["LAWKIT_CACHE_DIR"] = str(base / "check-cache")
    rows = []
    try:
        for files in (int(s) for s in args.sizes.split(",")):
            root = base / f"ws{files}"
            if root.exists():
                shutil.rmtree(root)
            root.mkdir(parents=True)
            runs = args.runs if files <= 1000 else max(1, args.runs // 2)
            rows += [(files, name, t) for name, t in bench_size(root, files, runs, lawkit)]
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    floor = {files: statistics.median(t) for files, name, t in rows if name == "python -c pass"}
    print(f"\n{'files':>6}  {'command':<22} {'median s':>9} {'best s':>8} {'x python':>9} "
          f"{'ms/file':>8}  target")
    for files, name, t in rows:
        median = statistics.median(t)
        per_file = (median - floor[files]) / files * 1e3
        target = TARGETS.get((name, files))
        verdict = "" if target is None else \
            f"< {target:g} s: {'met' if median < target else 'MISSED'}"
        print(f"{files:>6}  {name:<22} {median:>9.3f} {min(t):>8.3f} "
              f"{median / floor[files]:>9.1f} {per_file:>8.3f}  {verdict}")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()
