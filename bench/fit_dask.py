"""Benchmark `lawkit fit --dask local:2` against the local streamed `lawkit fit`.

Run: .venv/bin/python bench/fit_dask.py [--files N] [--rows-per-file N] [--workers N]
                                          [--keep DIR]

The capture set is the 40-million-row set of bench/fit.py (5 feature columns and a target: 6
terms with the intercept), here as `--files` Parquet files (default 40) of `--rows-per-file`
rows (default 1,000,000), one row group each. Two whole processes, each run in turn (best of
`--runs`) after a read of every file that fills the page cache:

- local: `lawkit fit DIR --formula ... --out ... --json`, streamed (as it streams a set this
  large by itself; forced with LAWKIT_IN_MEMORY_BYTES=0 so that a reduced set streams too);
- dask: the same with `--dask local:N`: lawkit starts a LocalCluster of N worker processes
  (one thread each), every file a task.

Memory: the RSS of every process of the tree, sampled every 50 ms with psutil (and the exact
peak of the lawkit process from os.wait4). With `--dask local`, the lawkit process also holds
the scheduler and the nannies; each worker is a process of its own. The coefficients of the
two runs are printed side by side with their largest relative difference.

What it last measured, dated, is in docs/performance.md (fit --dask on one machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil

FEATURES = ["num_seqs", "num_tokens", "max_context", "kv_blocks", "prefill_frac"]
TARGET = "host_s"
FORMULA = f"{TARGET} ~ 1 + " + " + ".join(FEATURES)
TRUE = [2e-3, 1.2e-4, 3.1e-8, 1e-9, 2e-7, 1e-4]
DIGEST = "68ad8fc6"
LAWKIT = str(Path(sys.executable).parent / "lawkit")
MIB = 2**20


def make_captures(folder: Path, files: int, rows: int, seed: int = 2) -> None:
    """`files` Parquet files of `rows` rows each (bench/fit.py's columns and law)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    schema = pa.schema([(c, pa.float64()) for c in [*FEATURES, TARGET]],
                       metadata={"lawkit.atom": DIGEST})
    for k in range(files):
        path = folder / f"run-{k:04d}.parquet"
        if path.exists():
            continue
        cols = {
            "num_seqs": rng.integers(1, 257, rows).astype(np.float64),
            "num_tokens": rng.integers(1, 16385, rows).astype(np.float64),
            "max_context": rng.integers(128, 131073, rows).astype(np.float64),
            "kv_blocks": rng.uniform(0, 1e4, rows),
            "prefill_frac": rng.uniform(0, 1, rows),
        }
        y = TRUE[0] + sum(c * cols[f] for c, f in zip(TRUE[1:], FEATURES, strict=True))
        cols[TARGET] = np.abs(y + rng.normal(0, 1e-4, rows))
        pq.write_table(pa.table(cols, schema=schema), path, row_group_size=rows)


@dataclass
class Sample:
    """Peak RSS of each process of a tree, and of the tree as a whole."""

    peaks: dict[int, int] = field(default_factory=dict)
    roles: dict[int, str] = field(default_factory=dict)
    total: int = 0


def _role(proc: psutil.Process, root: int) -> str:
    if proc.pid == root:
        return "lawkit"
    try:
        line = " ".join(proc.cmdline())
    except psutil.Error:
        return "other"
    if "spawn_main" in line:
        return "worker"
    return "other"


def watch(pid: int, sample: Sample, stop: threading.Event, every: float = 0.05) -> None:
    """Sample the RSS of `pid` and its descendants until `stop` is set."""
    try:
        root = psutil.Process(pid)
    except psutil.Error:
        return
    while not stop.is_set():
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            break
        total = 0
        for proc in procs:
            try:
                rss = proc.memory_info().rss
            except psutil.Error:
                continue
            if proc.pid not in sample.roles:
                sample.roles[proc.pid] = _role(proc, pid)
            sample.peaks[proc.pid] = max(sample.peaks.get(proc.pid, 0), rss)
            total += rss
        sample.total = max(sample.total, total)
        stop.wait(every)


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None,
        ) -> tuple[float, int, Sample, str]:
    """(seconds, exact peak RSS of the process, sampled peaks of its tree, stdout)."""
    sample = Sample()
    stop = threading.Event()
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})
    watcher = threading.Thread(target=watch, args=(proc.pid, sample, stop), daemon=True)
    watcher.start()
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    stop.set()
    watcher.join()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[:3]} failed:\n{err}")
    return seconds, usage.ru_maxrss * 1024, sample, out


def coefficients(stdout: str) -> list[float]:
    return [float(v) for v in json.loads(stdout)["laws"][0]["terms"].values()]


def describe(name: str, seconds: float, exact: int, sample: Sample) -> list[str]:
    lines = [f"{name}: {seconds:.1f} s; peak RSS of the whole tree {sample.total / MIB:.0f} MiB"]
    lines.append(f"  lawkit process {exact / MIB:.0f} MiB (exact, wait4)")
    workers = sorted((peak for pid, peak in sample.peaks.items()
                      if sample.roles.get(pid) == "worker"), reverse=True)
    for k, peak in enumerate(workers):
        lines.append(f"  worker {k + 1} {peak / MIB:.0f} MiB (sampled)")
    others = [peak for pid, peak in sample.peaks.items() if sample.roles.get(pid) == "other"]
    if others:
        lines.append(f"  {len(others)} other process(es), largest {max(others) / MIB:.0f} MiB")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--rows-per-file", type=int, default=1_000_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--keep", type=Path, help="generate (or reuse) the files here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        folder = args.keep or Path(temp)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "lawkit.toml").write_text("")  # a workspace of its own
        (folder / "laws").mkdir(exist_ok=True)  # fit writes law files only below it
        caps = folder / f"caps-{args.files}x{args.rows_per_file}"
        rows = args.files * args.rows_per_file
        print(f"writing {rows:,} rows as {args.files} files to {caps} ...", flush=True)
        make_captures(caps, args.files, args.rows_per_file)
        base = [LAWKIT, "fit", str(caps), "--formula", FORMULA, "--json"]
        commands = {
            "local streamed": [*base, "--out", str(folder / "laws" / "local.yaml")],
            f"dask local:{args.workers}": [*base, "--out", str(folder / "laws" / "dask.yaml"),
                                           "--dask",
                                           f"local:{args.workers}"],
        }
        for path in sorted(caps.glob("*.parquet")):  # warm the page cache
            path.read_bytes()
        results: dict[str, tuple[float, int, Sample, str]] = {}
        for _round in range(args.runs):
            for name, argv in commands.items():
                # Streaming starts at 1 GiB of columns by itself; forced so that a reduced set
                # streams too.
                got = run(argv, folder, env={"LAWKIT_IN_MEMORY_BYTES": "0"})
                if name not in results or got[0] < results[name][0]:
                    results[name] = got
        raw = rows * (len(FEATURES) + 1) * 8
        print(f"\n{rows:,} rows x {len(FEATURES) + 1} terms in {args.files} Parquet files "
              f"(raw numeric columns {raw / 2**30:.2f} GiB), {os.cpu_count()} CPUs, best of "
              f"{args.runs}, whole processes")
        coef = {}
        for name, (seconds, exact, sample, out) in results.items():
            print("\n".join(describe(name, seconds, exact, sample)))
            coef[name] = coefficients(out)
        for name, values in coef.items():
            print(f"  {name:18} " + " ".join(f"{v: .12e}" for v in values))
        a, b = coef.values()
        worst = max(abs(x - y) / abs(x) for x, y in zip(a, b, strict=True))
        print(f"largest relative difference of the coefficients: {worst:.2e}")


if __name__ == "__main__":
    main()
