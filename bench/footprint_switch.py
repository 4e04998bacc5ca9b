"""What one region switch costs under `lawkit footprint record` when the engine runs on a large
framework (as a serving engine runs on torch): the switch must cost what it turns on or off,
not what the framework loaded.

Run: .venv-3.12/bin/python bench/footprint_switch.py [--rounds 5] [--steps 300]
     [--files 600] [--tree LABEL=PATH ...] (standard library and lawkit; no GPU)

A temp workspace holds ``engine/`` (the hashed package: four region functions) and
``framework/`` (outside the hashed files, as torch is: ``--files`` modules of 40 functions
each). At start-up the process calls every framework function once (a framework's import and
initialisation), then enters steps: the engine's step loop runs in a background thread, fed by
the main thread through a queue, which it wakes every step with a result; each step enters
and exits four regions, each calling its engine function, which calls the functions of its own
quarter of 40 framework modules (as a model's forward runs torch code the scheduler never
does). Per switch (``lawkit.footprint.enter_region`` or ``exit_region``, timed on the engine
thread around the call), it prints the median over all steps of all rounds, with the framework
(``--files`` modules) and without it (none: the reference, measured in the same rounds), and
their ratio. A recorder whose switch walks the framework's code objects shows a ratio that
grows with ``--files``; ``--tree LABEL=PATH`` records with the lawkit of another source tree
(a ``git worktree`` of another commit) in the same rounds. What it last measured, dated, is in
docs/performance.md (footprint record on a threaded engine's regions).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from footprint_threads import source_trees  # bench/footprint_threads.py: the same option

FUNCTIONS = 40
"""Functions per framework module."""

HARNESS = r'''
import importlib, json, queue, sys, threading, time
import lawkit.footprint as fp
import engine

out, files, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
modules = [importlib.import_module(f"framework.m{i}") for i in range(files)]
for module in modules:  # start-up: every framework function runs once
    for name in dir(module):
        if name.startswith("f"):
            getattr(module, name)()
used = modules[:40]
REGIONS = ("schedule_s", "update_s", "prepare_s", "forward_s")
calls = {r: [getattr(m, f"f{j}") for m in used[k::4] for j in range(40)]
         for k, r in enumerate(REGIONS)}
switches = []

def region(name):
    t0 = time.perf_counter_ns()
    fp.enter_region(name)
    t1 = time.perf_counter_ns()
    getattr(engine, name)(calls[name])
    t2 = time.perf_counter_ns()
    fp.exit_region(name)
    t3 = time.perf_counter_ns()
    switches.extend((t1 - t0, t3 - t2))

jobs, done = queue.Queue(), queue.Queue()
def loop():
    while (job := jobs.get()) is not None:
        for name in REGIONS:
            region(name)
        done.put(job)
thread = threading.Thread(target=loop)
thread.start()
fp.phase("steps")
for i in range(steps):
    jobs.put(i)
    done.get()
jobs.put(None)
thread.join()
fp.phase("shutdown")
with open(out, "w") as f:
    json.dump(switches[len(switches) // 10:], f)  # the first tenth: the first runs
'''

ENGINE = '''
def run(calls):
    for call in calls:
        call()


def schedule_s(calls):
    return run(calls)


def update_s(calls):
    return run(calls)


def prepare_s(calls):
    return run(calls)


def forward_s(calls):
    return run(calls)
'''


def _workspace(root: Path, files: int) -> Path:
    (root / "engine").mkdir()
    (root / "engine" / "__init__.py").write_text(ENGINE)
    (root / "framework").mkdir()
    (root / "framework" / "__init__.py").write_text("")
    for i in range(files):
        body = "".join(f"def f{j}():\n    return {j}\n\n\n" for j in range(FUNCTIONS))
        (root / "framework" / f"m{i}.py").write_text(body)
    (root / "lawkit.toml").write_text('[digest]\npackages = ["engine"]\n')
    (root / "harness.py").write_text(HARNESS)
    return root


def _switches(root: Path, files: int, steps: int, tree: str | None) -> list[int]:
    """One recorded run's switch times (ns)."""
    out = root / "switches.json"
    argv = [sys.executable, "-m", "lawkit", "footprint", "record", "--out", "fp.json", "--",
            sys.executable, "harness.py", str(out), str(files), str(steps)]
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([tree, *filter(None, [env.get("PYTHONPATH")])])
    subprocess.run(argv, cwd=root, check=True, capture_output=True, env=env)
    times: list[int] = json.loads(out.read_text())
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--files", type=int, default=600)
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH",
                        help="also record with the lawkit of source tree PATH (a git worktree "
                             "of another commit), as LABEL, in the same rounds")
    args = parser.parse_args()
    others = source_trees(args.tree, ("lawkit",))
    if others is None:
        return 2
    trees: dict[str, str | None] = {"lawkit": None, **others}
    if args.files < 40:
        print(f"--files {args.files}: at least 40 (the regions call 40 modules' functions)",
              file=sys.stderr)
        return 2
    if sys.version_info < (3, 12):
        print("skipped: the sys.monitoring recorder needs Python 3.12+")
        return 0
    sizes = {"none": 40, "framework": args.files}
    times: dict[tuple[str, str], list[int]] = {(t, s): [] for t in trees for s in sizes}
    with tempfile.TemporaryDirectory(prefix="lawkit-bench-switch-") as tmp:
        roots = {}
        for size, files in sizes.items():
            (Path(tmp) / size).mkdir()
            roots[size] = _workspace(Path(tmp) / size, files)
        for _ in range(args.rounds):
            for label, tree in trees.items():
                for size, files in sizes.items():
                    times[label, size] += _switches(roots[size], files, args.steps, tree)
    print(f"python {sys.version.split()[0]}, {args.rounds} rounds, {args.steps} steps of 8 "
          f"switches; framework: {args.files} modules of {FUNCTIONS} functions outside the "
          f"hashed files, run at start-up (none: the 40 the regions call)")
    print(f"  {'recorder':10} {'none us':>8} {'framework us':>13} {'ratio':>7}")
    for label in trees:
        small = statistics.median(times[label, "none"]) / 1e3
        large = statistics.median(times[label, "framework"]) / 1e3
        print(f"  {label:10} {small:8.1f} {large:13.1f} {large / small:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
