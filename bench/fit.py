"""Benchmark `lawkit fit` against statsmodels and a bare pandas + numpy.linalg.lstsq script.

Run: .venv/bin/python bench/fit.py [--rows N] [--stream-rows N] [--runs N] [--keep DIR]
     [--memory N,M] [--memory-only]

1. In memory: a Parquet capture of `--rows` rows (default 5 million), 5 feature columns and a
   target (6 terms with the intercept), fitted as whole processes, each run in turn, best of
   `--runs` after a warm-up:
   - `lawkit fit caps.parquet --formula ... --out ...` (the installed script): QR, refinement
     to the float64 limit, statistics, domain, the law file with provenance;
   - a statsmodels script: `pandas.read_parquet`, `sm.OLS(y, sm.add_constant(X)).fit()`;
   - a bare script: `pandas.read_parquet`, `numpy.linalg.lstsq` (fast, not accurate: it scores
     0 digits on NIST Filip).
   Peak RSS per process (os.wait4), and above the post-import baseline of the same imports,
   as a multiple of the raw numeric columns (rows x 6 x 8 bytes).
   Targets: lawkit <= 2x the bare script and <= 0.6x statsmodels in time; peak RSS
   above baseline <= 3x the raw columns.
2. Streamed: `--stream-rows` rows (default 40 million; 0 skips it) fitted by `lawkit fit`,
   which streams a capture set this large in chunks; peak RSS (target: under 1 GiB).

The coefficients of the three are printed side by side as a sanity check.

3. Memory (`--memory`, default 5M and 20M rows; `--memory-only` runs only this; `--methods`
   picks the methods): CSV captures (198 MB and 792 MB) fitted by every method as whole
   processes, each streamed; peak RSS at both sizes, their difference, the times, the passes
   each made (`fit --json`'s `passes`: the first parses the text, every later one reads the
   spill), the time over ols' at the largest size, and the verdict against the targets (the
   largest within 64 MiB of the smallest, and under 600 MiB; huber and robust within 2x of
   ols).

4. As typed (`--cli-rows N`, `--rounds R`; `--methods` picks the methods): `lawkit fit
   caps.csv --formula ... --method M --out laws/M.yaml --captured-on DIGEST`, exactly the
   command line a user types in a workspace, each a whole process with stderr a pipe (no
   progress bar), every method once per round in turn (interleaved, so a change in the
   machine's load falls on all of them), R rounds after a warm-up of the page cache; the
   median wall time, CPU time and peak RSS of each, and each method's median over ols'
   (target: huber and robust <= 2x).

What it last measured, dated, is in docs/performance.md (fits in memory, streamed, and by
every method).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FEATURES = ["num_seqs", "num_tokens", "max_context", "kv_blocks", "prefill_frac"]
TARGET = "host_s"
FORMULA = f"{TARGET} ~ 1 + " + " + ".join(FEATURES)
TRUE = [2e-3, 1.2e-4, 3.1e-8, 1e-9, 2e-7, 1e-4]
DIGEST = "68ad8fc6"
METHODS = ("ols", "huber", "nnls", "robust")
PYTHON = sys.executable
LAWKIT = str(Path(sys.executable).parent / "lawkit")

STATSMODELS = f"""
import sys, json
import pandas as pd, statsmodels.api as sm
df = pd.read_parquet(sys.argv[1], columns={[*FEATURES, TARGET]!r})
fit = sm.OLS(df[{TARGET!r}], sm.add_constant(df[{FEATURES!r}])).fit()
print(json.dumps(fit.params.tolist()))
"""
BARE = f"""
import sys, json
import numpy as np, pandas as pd
df = pd.read_parquet(sys.argv[1], columns={[*FEATURES, TARGET]!r})
x = np.column_stack([np.ones(len(df)), df[{FEATURES!r}].to_numpy()])
coef = np.linalg.lstsq(x, df[{TARGET!r}].to_numpy(), rcond=None)[0]
print(json.dumps(coef.tolist()))
"""
BASELINES = {
    "lawkit": "import typer, lawkit.cli, lawkit.fitting.fit, lawkit.fitting.solve, "
              "lawkit.fitting.captures.read, lawkit.fitting.lawmerge, pyarrow.parquet, "
              "pyarrow.compute, scipy.special",
    "statsmodels": "import pandas, statsmodels.api, pyarrow.parquet",
    "bare": "import numpy, pandas, pyarrow.parquet",
}


def make_captures(path: Path, rows: int, seed: int = 1) -> None:
    """A Parquet capture file (or CSV, by its suffix) of `rows` rows, a million at a time."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    rng = np.random.default_rng(seed)
    schema = pa.schema([(c, pa.float64()) for c in [*FEATURES, TARGET]],
                       metadata={"lawkit.atom": DIGEST})
    step = 1 << 20
    csv = path.suffix == ".csv"
    opened = pacsv.CSVWriter(path, schema) if csv else pq.ParquetWriter(path, schema)
    with opened as writer:
        for start in range(0, rows, step):
            n = min(step, rows - start)
            cols = {
                "num_seqs": rng.integers(1, 257, n).astype(np.float64),
                "num_tokens": rng.integers(1, 16385, n).astype(np.float64),
                "max_context": rng.integers(128, 131073, n).astype(np.float64),
                "kv_blocks": rng.uniform(0, 1e4, n),
                "prefill_frac": rng.uniform(0, 1, n),
            }
            y = TRUE[0] + sum(c * cols[f] for c, f in zip(TRUE[1:], FEATURES, strict=True))
            cols[TARGET] = np.abs(y + rng.normal(0, 1e-4, n))
            cols[TARGET][rng.random(n) < 0.01] *= 3.0  # outliers for the robust methods
            if csv:  # decimal text as engines write it: a few digits, not 17
                cols["kv_blocks"] = np.round(cols["kv_blocks"], 2)
                cols["prefill_frac"] = np.round(cols["prefill_frac"], 4)
                cols[TARGET] = np.round(cols[TARGET], 7)
            writer.write_table(pa.table(cols, schema=schema))


def run(argv: list[str], cwd: Path, env: dict[str, str] | None = None,
        ) -> tuple[float, int, str]:
    """(seconds, peak RSS in bytes, stdout) of one whole process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})
    assert proc.stdout is not None and proc.stderr is not None
    out, err = proc.stdout.read(), proc.stderr.read()
    _pid, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed ({proc.returncode}):\n{err}")
    LAST_CPU[0] = usage.ru_utime + usage.ru_stime
    return seconds, usage.ru_maxrss * 1024, out


LAST_CPU = [0.0]
"""The CPU time (user + sys) of the last `run`: on a machine shared with other jobs, the
figure that load does not inflate."""


def commands(folder: Path, capture: Path) -> dict[str, list[str]]:
    return {
        "lawkit": [LAWKIT, "fit", str(capture), "--formula", FORMULA, "--out",
                   str(folder / "laws" / "bench.yaml"), "--json"],
        "statsmodels": [PYTHON, "-c", STATSMODELS, str(capture)],
        "bare": [PYTHON, "-c", BARE, str(capture)],
    }


def coefficients(name: str, stdout: str) -> list[float]:
    if name == "lawkit":
        terms = json.loads(stdout)["laws"][0]["terms"]
        return [float(v) for v in terms.values()]
    return [float(v) for v in json.loads(stdout)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--stream-rows", type=int, default=40_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="generate (or reuse) the files here")
    parser.add_argument("--memory", default="5000000,20000000",
                        help="row counts of the CSV captures fitted by every method ('' skips)")
    parser.add_argument("--memory-only", action="store_true",
                        help="only the peak RSS of every method on the CSV captures")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="the methods --memory and --cli-rows fit (default: every one)")
    parser.add_argument("--cli-rows", type=int, default=0,
                        help="rows of the CSV capture fitted as typed, by every method, "
                        "interleaved (0 skips it); only this runs when given")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds of --cli-rows (the median is reported)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temp:
        folder = args.keep or Path(temp)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "lawkit.toml").write_text("")  # a workspace of its own
        (folder / "laws").mkdir(exist_ok=True)  # where lawkit check reads law files
        if args.cli_rows:
            as_typed(folder, args.cli_rows, [m for m in args.methods.split(",") if m],
                     args.rounds)
            return
        sizes = [int(v) for v in args.memory.split(",") if v.strip()]
        if sizes:
            memory(folder, sizes, [m for m in args.methods.split(",") if m])
        if args.memory_only:
            return
        capture = folder / f"caps-{args.rows}.parquet"
        if not capture.exists():
            print(f"writing {args.rows:,} rows to {capture} ...", flush=True)
            make_captures(capture, args.rows)
        raw = args.rows * (len(FEATURES) + 1) * 8
        baseline = {name: max(run([PYTHON, "-c", code], folder)[1] for _ in range(2))
                    for name, code in BASELINES.items()}
        cmds = commands(folder, capture)
        best = dict.fromkeys(cmds, float("inf"))
        peak = dict.fromkeys(cmds, 0)
        coef: dict[str, list[float]] = {}
        for round_ in range(args.runs + 1):  # round 0 warms the page cache
            for name, argv in cmds.items():
                seconds, rss, out = run(argv, folder)
                if round_:
                    best[name] = min(best[name], seconds)
                peak[name] = max(peak[name], rss)
                coef[name] = coefficients(name, out)
        print(f"\nin memory: {args.rows:,} rows x {len(FEATURES) + 1} terms from Parquet "
              f"(raw numeric columns {raw / 2**20:.0f} MiB), best of {args.runs}, whole process")
        print(f"{'':12} {'time s':>8} {'peak RSS MiB':>13} {'above import MiB':>17} "
              f"{'x raw':>6}")
        for name in cmds:
            above = peak[name] - baseline[name]
            print(f"{name:12} {best[name]:8.2f} {peak[name] / 2**20:13.0f} "
                  f"{above / 2**20:17.0f} {above / raw:6.2f}")
        print(f"lawkit / bare lstsq: {best['lawkit'] / best['bare']:.2f} (target <= 2)   "
              f"lawkit / statsmodels: {best['lawkit'] / best['statsmodels']:.2f} "
              "(target <= 0.6)")
        for name, values in coef.items():
            print(f"  {name:12} " + " ".join(f"{v: .10e}" for v in values))
        if args.stream_rows:
            big = folder / f"caps-{args.stream_rows}.parquet"
            if not big.exists():
                print(f"\nwriting {args.stream_rows:,} rows to {big} ...", flush=True)
                make_captures(big, args.stream_rows, seed=2)
            # Streaming starts at 1 GiB of columns by itself; forced here so that a reduced
            # --stream-rows streams too.
            seconds, rss, out = run(commands(folder, big)["lawkit"], folder,
                                    env={"LAWKIT_IN_MEMORY_BYTES": "0"})
            print(f"\nstreamed: {args.stream_rows:,} rows: {seconds:.1f} s, peak RSS "
                  f"{rss / 2**20:.0f} MiB (target < 1024 MiB; raw numeric columns "
                  f"{args.stream_rows * (len(FEATURES) + 1) * 8 / 2**30:.1f} GiB)")
            print("  lawkit       " + " ".join(f"{v: .10e}" for v in
                                               coefficients("lawkit", out)))


def memory(folder: Path, sizes: list[int], methods: list[str]) -> None:
    """Peak RSS, time and passes of whole-process `lawkit fit --method M` on CSV captures of
    each size (every method streams; targets: the largest within 64 MiB of the smallest, under
    600 MiB; huber and robust within 2x of ols in the same run, every pass after the first read
    from the spill)."""
    peaks: dict[str, list[int]] = {}
    times: dict[str, list[float]] = {}
    passes: dict[str, list[int]] = {}
    cpu: dict[str, list[float]] = {}
    for rows in sizes:
        capture = folder / f"caps-{rows}.csv"
        if not capture.exists():
            print(f"writing {rows:,} rows to {capture} ...", flush=True)
            make_captures(capture, rows, seed=3)
        for method in methods:
            argv = [LAWKIT, "fit", str(capture), "--formula", FORMULA, "--method", method,
                    "--out", str(folder / "laws" / f"mem-{method}.yaml"), "--captured-on", DIGEST,
                    "--json"]
            seconds, rss, out = run(argv, folder)
            cpu.setdefault(method, []).append(LAST_CPU[0])
            peaks.setdefault(method, []).append(rss)
            times.setdefault(method, []).append(seconds)
            passes.setdefault(method, []).append(sum(json.loads(out)["passes"].values()))
            terms = " ".join(f"{v: .6e}" for v in coefficients("lawkit", out))
            print(f"  {rows:>11,} rows  {method:7} {seconds:7.1f} s  (CPU {LAST_CPU[0]:6.1f} s)  "
                  f"peak RSS {rss / 2**20:6.0f} MiB  {passes[method][-1]:4} passes  {terms}",
                  flush=True)
    first, last = f"{sizes[0] / 1e6:g}M", f"{sizes[-1] / 1e6:g}M"
    print(f"\nCSV captures x {len(FEATURES) + 1} terms, whole process: peak RSS (MiB) and time "
          f"(s); target: {last} within 64 MiB of {first}, and under 600 MiB")
    print(f"{'method':8}{'RSS ' + first:>10}{'RSS ' + last:>10}{'diff':>8}"
          f"{'time ' + first:>11}{'time ' + last:>11}{'passes ' + first:>11}"
          f"{'passes ' + last:>11}{'/ols ' + last:>10}{'CPU/ols':>9}   verdict")
    missed = 0
    for method, values in peaks.items():
        diff = (values[-1] - values[0]) / 2**20
        ok = diff <= 64 and max(values) < 600 * 2**20
        ratio = times[method][-1] / times["ols"][-1] if "ols" in times else float("nan")
        by_cpu = cpu[method][-1] / cpu["ols"][-1] if "ols" in cpu else float("nan")
        ok = ok and (method not in ("huber", "robust") or ratio <= 2.0)
        missed += not ok
        print(f"{method:8}{values[0] / 2**20:10.0f}{values[-1] / 2**20:10.0f}{diff:+8.0f}"
              f"{times[method][0]:11.1f}{times[method][-1]:11.1f}{passes[method][0]:11}"
              f"{passes[method][-1]:11}{ratio:10.2f}{by_cpu:9.2f}   {'ok' if ok else 'MISSED'}")
    print("every method within the targets" if not missed else
          f"{missed} method(s) MISSED the targets")

def as_typed(folder: Path, rows: int, methods: list[str], rounds: int) -> None:
    """Median wall time, CPU time and peak RSS of `lawkit fit caps.csv --method M` as a user
    types it, the methods interleaved in each of `rounds` rounds after a warm-up round."""
    import statistics

    capture = folder / f"caps-{rows}.csv"
    if not capture.exists():
        print(f"writing {rows:,} rows to {capture} ...", flush=True)
        make_captures(capture, rows, seed=3)
    measured: dict[str, list[tuple[float, float, int]]] = {m: [] for m in methods}
    for round_ in range(rounds + 1):  # round 0 warms the page cache
        for method in methods:
            argv = [LAWKIT, "fit", capture.name, "--formula", FORMULA, "--method", method,
                    "--out", f"laws/{method}.yaml", "--captured-on", DIGEST]
            seconds, rss, _out = run(argv, folder)
            print(f"  round {round_} {method:7} {seconds:7.1f} s  (CPU {LAST_CPU[0]:6.1f} s)  "
                  f"peak RSS {rss / 2**20:6.0f} MiB", flush=True)
            if round_:
                measured[method].append((seconds, LAST_CPU[0], rss))
    median = {m: (statistics.median(v[0] for v in values),
                  statistics.median(v[1] for v in values), max(v[2] for v in values))
              for m, values in measured.items()}
    print(f"\nas typed: lawkit fit caps.csv --method M ({rows:,} rows x {len(FEATURES) + 1} "
          f"terms, CSV), median of {rounds} interleaved rounds, on {os.cpu_count()} CPUs")
    print(f"{'method':8}{'wall s':>8}{'CPU s':>8}{'peak MiB':>10}{'wall/ols':>10}{'CPU/ols':>9}")
    base = median.get("ols")
    for method, (wall, cpu, rss) in median.items():
        ratio = wall / base[0] if base else float("nan")
        by_cpu = cpu / base[1] if base else float("nan")
        verdict = "" if method not in ("huber", "robust") else \
            ("   ok" if ratio <= 2.0 else "   MISSED (target <= 2x ols)")
        print(f"{method:8}{wall:8.1f}{cpu:8.1f}{rss / 2**20:10.0f}{ratio:10.2f}{by_cpu:9.2f}"
              f"{verdict}")


if __name__ == "__main__":
    main()
