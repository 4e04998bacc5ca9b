"""Kill `rekey` and `fit --out` at every write call and at many random times.

Run: .venv/bin/python bench/crash_trials.py [--random N] [--pairs N] [--jobs J] [--keep DIR]

The long version of tests/reliability/test_crashes.py. For each scenario (a rekey of 3 law
files, of 12 (temps written on a thread pool), of 200 (the parse in forked workers); a fit
--out that edits an existing law file, and one that creates a new file), it kills the command:

- before each of its write calls in turn (every open, write, fsync, close, chmod, rename and
  unlink from the first stray-temp removal or replace on: testing/reliability.py; at most
  --max-points of them, evenly spread), and
- after N random times spread over a complete run (start-up and parsing included),

and after each kill checks that every law file is old or new (never partial), then runs the
command again to the end and checks that no temp file is left. Then it starts pairs of rekeys
together and checks that they never interleave: one rekeys every file, the other finds them at
the target, each file holds one rekey entry. Prints one line per scenario; exit 1 on a partial
file, a stray temp file or an interleaving.
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # testing/: shared with tests
from testing.reliability import LAWKIT, Scenario, count_write_calls
from testing.workspaces import make_workspace

REPO = Path(__file__).resolve().parent.parent

REKEY = ["rekey", "--why", "crash trial"]
CAPTURE = "model,bs,host_s\n" + "".join(f"m{i % 3},{i % 97 + 1},{0.001 * (i % 97 + 1) + 0.01}\n"
                                       for i in range(3000))


@dataclass
class Tally:
    """How the trials of one scenario ended."""

    name: str
    trials: int = 0
    killed: int = 0
    finished: int = 0
    old: int = 0
    new: int = 0
    partial: int = 0
    stray_temps: int = 0
    worst_s: float = 0.0
    failures: list[str] = field(default_factory=list)


def _scenario(root: Path, kind: str) -> tuple[Scenario, bool]:
    """A workspace and the command to kill; whether a rerun is idempotent."""
    if kind.startswith("rekey"):
        files = int(kind.split("-")[1])
        make_workspace(root, files, stale=True)
        names = sorted(p.relative_to(root).as_posix() for p in (root / "laws").glob("*.yaml"))
        return Scenario.make(root, REKEY, names), True
    make_workspace(root, 1, stale=True)
    (root / "cap.csv").write_text(CAPTURE)
    out = "laws/cell00000.yaml" if kind == "fit-existing" else "laws/new.yaml"
    args = ["fit", "cap.csv", "--formula", "host_s ~ 1 + bs", "--by", "model", "--captured-on",
            "current", "--out", out]
    return Scenario.make(root, args, [out]), False


def run_scenario(kind: str, base: Path, random_trials: int, seed: int, max_points: int,
                 ) -> Tally:
    """Every write-call kill point (at most `max_points`, evenly spread), then `random_trials`
    random-time kills."""
    root = base / kind
    scenario, idempotent = _scenario(root, kind)
    total = count_write_calls(scenario.args, cwd=root)
    scenario.restore()
    rng = random.Random(seed)
    points = range(1, total + 1) if total <= max_points else \
        sorted({round(1 + i * (total - 1) / (max_points - 1)) for i in range(max_points)})
    tally = Tally(f"{kind} ({len(points)} of {total} write calls)")
    kills: list[tuple[str, float]] = [("call", n) for n in points]
    kills += [("time", rng.uniform(0.02, scenario.seconds * 1.1)) for _ in range(random_trials)]
    for how, at in kills:
        scenario.restore()
        start = time.monotonic()
        killed = scenario.kill_at_write_call(int(at)) if how == "call" else \
            scenario.kill_after(at)
        tally.worst_s = max(tally.worst_s, time.monotonic() - start)
        tally.trials += 1
        tally.killed += killed
        tally.finished += not killed
        try:
            for state in scenario.states().values():
                setattr(tally, state, getattr(tally, state) + 1)
        except AssertionError as exc:
            tally.partial += 1
            tally.failures.append(f"{how} {at}: {exc}")
            continue
        try:
            scenario.finish(idempotent=idempotent)
        except AssertionError as exc:
            tally.stray_temps += len(scenario.temps())
            tally.failures.append(f"{how} {at}, next run: {exc}")
    return tally


def run_pairs(base: Path, pairs: int, files: int) -> Tally:
    """Start two rekeys together, `pairs` times."""
    root = base / "pairs"
    make_workspace(root, files, stale=True)
    laws = sorted((root / "laws").glob("*.yaml"))
    stale = {p: p.read_bytes() for p in laws}
    tally = Tally(f"2 rekeys at once, {files} files")
    for _ in range(pairs):
        for path, data in stale.items():
            path.write_bytes(data)
        start = time.monotonic()
        procs = [subprocess.Popen([*LAWKIT, *REKEY], cwd=root, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [proc.communicate() for proc in procs]
        tally.worst_s = max(tally.worst_s, time.monotonic() - start)
        tally.trials += 1
        tally.finished += 2
        codes = [proc.returncode for proc in procs]
        summaries = sorted(out.splitlines()[-1] if out else err for out, err in outs)
        entries = [p.read_text().count("{rekey:") for p in laws]
        tally.new += sum(n == 1 for n in entries)
        if codes != [0, 0] or not summaries[0].startswith("nothing to rekey") or \
                not summaries[1].startswith(f"rekeyed {files} law files") or \
                set(entries) != {1}:
            tally.partial += 1
            tally.failures.append(f"exit {codes}, {summaries}, rekey entries {set(entries)}")
    return tally


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--random", type=int, default=30, help="random-time kills a scenario")
    parser.add_argument("--pairs", type=int, default=20, help="pairs of concurrent rekeys")
    parser.add_argument("--jobs", type=int, default=2, help="scenarios run at once")
    parser.add_argument("--scenarios", default="rekey-3,rekey-12,rekey-200,fit-existing,fit-new")
    parser.add_argument("--max-points", type=int, default=150,
                        help="write-call kill points a scenario at most (evenly spread)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="work in this folder and keep it")
    args = parser.parse_args()
    base = args.keep or Path(tempfile.mkdtemp(prefix="lawkit-crash-"))
    base.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    kinds = args.scenarios.split(",")
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(run_scenario, kind, base, args.random, args.seed + i,
                               args.max_points) for i, kind in enumerate(kinds)]
        if args.pairs:
            futures.append(pool.submit(run_pairs, base, args.pairs, 50))
        tallies = [f.result() for f in futures]
    head = (f"{'scenario':<34} {'trials':>6} {'killed':>6} {'done':>5} {'old':>6} {'new':>6} "
            f"{'partial':>7} {'temps':>5} {'worst s':>7}")
    print(head)
    print("-" * len(head))
    for t in tallies:
        print(f"{t.name:<34} {t.trials:>6} {t.killed:>6} {t.finished:>5} {t.old:>6} {t.new:>6} "
              f"{t.partial:>7} {t.stray_temps:>5} {t.worst_s:>7.2f}")
    print(f"{sum(t.trials for t in tallies)} trials in {time.monotonic() - start:.0f} s "
          "(old/new: law files found so after a kill; temps: left after the next run)")
    failures = [f"{t.name}: {f}" for t in tallies for f in t.failures]
    for line in failures:
        print(line)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
