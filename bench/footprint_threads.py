"""What `lawkit footprint record` costs a threaded serving engine's short host regions.

Run: .venv-3.12/bin/python bench/footprint_threads.py [--rounds 7] [--steps 150]
     [--shapes threaded,single,polling] [--tree LABEL=PATH ...] (needs `pip install markdown`;
     no GPU)

The engine is Python-Markdown, copied into a temp workspace whose digest hashes it. A step runs
four regions of real engine code, each a Markdown conversion of its own document with its own
extensions, of about 0.1, 0.25, 1 and 4 ms on a 2024 server core: ``schedule_s`` (plain text),
``update_s`` (tables), ``prepare_s`` (fenced code, tables, toc), ``forward_s`` (extra, toc).
Three shapes:

- ``threaded``: the step loop runs in a background thread (the engine's), fed by the main
  thread through a queue; the main thread blocks on the result queue between submissions and
  runs engine code itself every 10th step (a request's own conversion, no region open), as a
  serving engine's API thread does;
- ``single``: the same step loop on the main thread;
- ``polling``: as ``threaded``, but the main thread polls the result queue
  (``get_nowait``, then ``time.sleep(0.0002)``, as a socket poll loop does) instead of
  blocking in it: a thread lawkit must count as live, in steps with no region open, so the
  code the engine thread runs in a region fires on every call until it has also run there
  (docs/footprints.md, Threads). This shape also prints what one recorder callback costs:
  lawkit's recorded minus bare region time over the callbacks ``footprint record`` reports
  for the region (``lawkit.footprint.cost.CALLBACK_NS`` is this figure).

Each run first warms up through the same step code (5 steps, regions entered at start-up),
then calls ``lawkit.footprint.phase("steps")`` and runs the same steps (at least 150, the same
documents every run), timing each region with ``time.perf_counter_ns``. Variants, one process
each, interleaved in every round:

- ``bare``: the harness with lawkit imported, not recording;
- ``A/A``: bare again (the control: what the machine's noise alone gives);
- ``floor``: a minimal recorder in the harness: ``sys.monitoring`` ``PY_START``/``PY_RESUME``
  on the engine's code objects (as lawkit arms only hashed code), each answered with
  ``DISABLE``, ``restart_events`` at every phase switch and region enter and exit, no other
  rule;
- ``lawkit``: the bare harness under ``lawkit footprint record``;
- ``LABEL`` (one per ``--tree LABEL=PATH``): the bare harness under ``lawkit footprint record``
  of the lawkit in source tree PATH (a ``git worktree`` of another commit), put first on
  ``PYTHONPATH`` for the recorder and the measured process: the recorder before and after a
  change, in the same rounds;
- ``idle hook`` (threaded only): the bare harness with a no-op ``sys.setprofile`` hook on the
  waiting main thread alone, nothing recorded: what watching the idle thread per thread costs
  the engine thread before any recording (CPython 3.12+ implements ``setprofile`` with its own
  ``sys.monitoring`` events set on every code object of the process, and checks the thread in C
  at each event).

Per region it prints the median over all steps of all rounds of the paired ratio variant/bare
(step i of a round against step i of the same round's bare run), and each region's count of
distinct code objects (one step, counted with a profile hook). Target: every region at most
1.05x, threaded and not. Standard library and lawkit; what it last measured, dated, is in
docs/performance.md (footprint record on a threaded engine's regions).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REGIONS = ("schedule_s", "update_s", "prepare_s", "forward_s")
VARIANTS = ("bare", "A/A", "floor", "lawkit", "idle hook")
SHAPE_VARIANTS = {"threaded": VARIANTS, "single": VARIANTS[:-1], "polling": VARIANTS[:-1]}

HARNESS = r'''
import json, queue, sys, threading, time
import lawkit.footprint as fp
import markdown

out, shape, variant, steps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
REGIONS = ("schedule_s", "update_s", "prepare_s", "forward_s")

def document(seed, size):
    """A deterministic Markdown document of about ``size`` bytes."""
    parts, i = [], seed
    while sum(map(len, parts)) < size:
        i += 1
        parts.append(f"## Section {i}\n\nSome *emphasis*, a [link](http://x.org/{i}) and "
                     f"`code {i}`; **bold** text & more.\n\n- item {i}\n- item {i + 1}\n"
                     f"  - nested {i}\n\n| a | b |\n|---|---|\n| {i} | {i * 2} |\n\n"
                     f"```\nprint({i})\n```\n\n> quoted {i}\n\n")
    return "".join(parts)[:size]

WORK = {"schedule_s": (markdown.Markdown(), document(1, 120)),
        "update_s": (markdown.Markdown(extensions=["tables"]), document(2, 260)),
        "prepare_s": (markdown.Markdown(extensions=["fenced_code", "tables", "toc"]),
                      document(3, 900)),
        "forward_s": (markdown.Markdown(extensions=["extra", "toc"]), document(4, 3400))}
REQUEST = (markdown.Markdown(), document(5, 300))

if variant == "floor":  # the minimal recorder: re-arm at every switch, no other rule
    import os
    import floor_recorder
    restart = floor_recorder.arm(os.path.join(os.path.dirname(markdown.__file__), ""))
    real_phase, real_enter, real_exit = fp.phase, fp.enter_region, fp.exit_region
    def phase(name):
        real_phase(name); restart()
    def enter_region(name):
        real_enter(name); restart()
    def exit_region(name):
        real_exit(name); restart()
    fp.phase, fp.enter_region, fp.exit_region = phase, enter_region, exit_region

if variant == "count":
    counted = {r: set() for r in REGIONS}
    current = [None]
    def profile(frame, event, arg):
        if event == "call" and current[0] is not None:
            counted[current[0]].add(frame.f_code)
    sys.setprofile(profile)
    threading.setprofile(profile)

times = {r: [] for r in REGIONS}

def step(record):
    for name in REGIONS:
        md, text = WORK[name]
        if variant == "count":
            current[0] = name
        fp.enter_region(name)
        t0 = time.perf_counter_ns()
        md.reset()
        md.convert(text)
        t1 = time.perf_counter_ns()
        fp.exit_region(name)
        if variant == "count":
            current[0] = None
        if record:
            times[name].append(t1 - t0)

def request():
    md, text = REQUEST
    md.reset()
    return md.convert(text)

def poll(results):
    """Wait for a result as a poll loop does: never blocked in one of threading's waits."""
    while True:
        try:
            return results.get_nowait()
        except queue.Empty:
            time.sleep(0.0002)

WARMUP = 5
if shape in ("threaded", "polling"):
    wait = poll if shape == "polling" else queue.Queue.get
    jobs, done = queue.Queue(), queue.Queue()
    def engine():
        while True:
            job = jobs.get()
            if job is None:
                return
            step(job)
            done.put(job)
    thread = threading.Thread(target=engine, name="engine")
    thread.start()
    for _ in range(WARMUP):
        jobs.put(False); wait(done)
    if variant == "hooked":  # a per-thread watch of the idle thread, recording nothing
        sys.setprofile(lambda frame, event, arg: None)
    fp.phase("steps")
    for i in range(steps):
        jobs.put(True)
        if i % 10 == 0:
            request()  # the API thread runs engine code itself, no region open
        wait(done)
    jobs.put(None)
    thread.join()
else:
    for _ in range(WARMUP):
        step(False)
    fp.phase("steps")
    for i in range(steps):
        step(True)
        if i % 10 == 0:
            request()
fp.phase("shutdown")
if variant == "count":
    sys.setprofile(None)
    times = {r: len(counted[r]) for r in REGIONS}
with open(out, "w") as f:
    json.dump(times, f)
'''


def _workspace(root: Path) -> Path:
    import markdown

    shutil.copytree(Path(markdown.__file__).parent, root / "markdown",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "lawkit.toml").write_text('[digest]\npackages = ["markdown"]\n')
    (root / "harness.py").write_text(HARNESS)
    shutil.copy(Path(__file__).with_name("floor_recorder.py"), root)
    return root


def _run(root: Path, shape: str, variant: str, steps: int,
         trees: dict[str, str] | None = None) -> dict[str, object]:
    out = root / "times.json"
    tree = (trees or {}).get(variant)
    recorded = variant == "lawkit" or tree is not None
    mode = "bare" if recorded or variant == "A/A" else \
        {"idle hook": "hooked"}.get(variant, variant)
    bare = [sys.executable, "harness.py", str(out), shape, mode, str(steps)]
    argv = ([sys.executable, "-m", "lawkit", "footprint", "record", "--json", "--out",
             "fp.json", "--", *bare] if recorded else bare)
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([tree, *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run(argv, cwd=root, check=True, capture_output=True, env=env, text=True)
    doc: dict[str, object] = json.loads(out.read_text())
    if recorded:  # the recorder's callbacks in steps, by region, where it reports them
        cost = json.loads(done.stdout).get("cost", [])
        doc["callbacks"] = {c["region"]: c["callbacks"] for c in cost}
    return doc


def _variants(shape: str, trees: dict[str, str], skip: frozenset[str]) -> tuple[str, ...]:
    """The variants of a shape, each tree's recorder beside lawkit's, less those skipped."""
    variants = tuple(v for v in SHAPE_VARIANTS[shape] if v not in skip)
    at = variants.index("lawkit")
    return (*variants[:at], *trees, *variants[at:])


def measure(root: Path, shape: str, rounds: int, steps: int,
            trees: dict[str, str] | None = None,
            skip: frozenset[str] = frozenset()) -> dict[str, dict[str, float]]:
    """Per variant and region, the median over steps and rounds of the paired ratio to bare;
    ``"bare ms"``: each region's median bare time; and ``"ns per callback"`` (``"all"``):
    lawkit's recorded minus bare time in the regions over the callbacks it fired there, where
    it fired any."""
    trees = trees or {}
    variants = _variants(shape, trees, skip)
    ratios: dict[str, dict[str, list[float]]] = {v: {r: [] for r in REGIONS} for v in variants}
    bare_ms: dict[str, list[float]] = {r: [] for r in REGIONS}
    extra_ns, callbacks = 0, 0
    for _ in range(rounds):
        runs = {v: _run(root, shape, v, steps, trees) for v in variants}
        base: dict[str, list[int]] = runs["bare"]  # type: ignore[assignment]
        fired: dict[str, int] = runs["lawkit"].get("callbacks", {})  # type: ignore[assignment]
        for region in REGIONS:
            bare_ms[region].extend(t / 1e6 for t in base[region])
            for variant in variants[1:]:
                times: dict[str, list[int]] = runs[variant]  # type: ignore[assignment]
                ratios[variant][region].extend(
                    t / b for t, b in zip(times[region], base[region], strict=True))
            if fired.get(region):
                recorded: dict[str, list[int]] = runs["lawkit"]  # type: ignore[assignment]
                extra_ns += sum(recorded[region]) - sum(base[region])
                callbacks += fired[region]
    result = {v: {r: statistics.median(ratios[v][r]) for r in REGIONS} for v in variants[1:]}
    result["bare ms"] = {r: statistics.median(bare_ms[r]) for r in REGIONS}
    if callbacks:
        result["ns per callback"] = {"all": extra_ns / callbacks, "callbacks": callbacks}
    return result


def source_trees(items: list[str], taken: tuple[str, ...]) -> dict[str, str] | None:
    """``--tree LABEL=PATH`` options as {label: resolved path}; None, the error said, where one
    is not a new label (not in ``taken``) and a source tree with lawkit's recorder in it."""
    trees: dict[str, str] = {}
    for item in items:
        label, sep, path = item.partition("=")
        if not sep or not label or label in taken or label in trees \
                or not (Path(path) / "lawkit" / "footprint").is_dir():
            print(f"--tree {item}: expected LABEL=PATH, a new label and a source tree with "
                  "lawkit/footprint/ in it (git worktree add /tmp/lawkit-before <commit>)",
                  file=sys.stderr)
            return None
        trees[label] = str(Path(path).resolve())
    return trees


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--shapes", default="threaded,single,polling")
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=PATH",
                        help="also record with the lawkit of source tree PATH (a git worktree "
                             "of another commit), as variant LABEL, in the same rounds")
    parser.add_argument("--skip", default="", metavar="VARIANTS",
                        help="variants left out, comma-separated (floor, idle hook)")
    args = parser.parse_args()
    skip = frozenset(filter(None, args.skip.split(",")))
    if not skip <= {"floor", "idle hook"}:
        print(f"--skip {args.skip}: only floor and idle hook can be left out", file=sys.stderr)
        return 2
    trees = source_trees(args.tree, VARIANTS)
    if trees is None:
        return 2
    if sys.version_info < (3, 12):
        print("skipped: the sys.monitoring recorder and the floor need Python 3.12+")
        return 0
    with tempfile.TemporaryDirectory(prefix="lawkit-bench-threads-") as tmp:
        root = _workspace(Path(tmp))
        counts = _run(root, "single", "count", 1)
        listed = " / ".join(_variants("threaded", trees, skip))
        note = "" if "idle hook" in skip else " (threaded only)"
        print(f"python {sys.version.split()[0]}, {args.rounds} rounds of {listed}{note} "
              f"interleaved, {args.steps} steps each; "
              "per region the median over steps of the paired ratio to bare")
        for shape in args.shapes.split(","):
            result = measure(root, shape, args.rounds, args.steps, trees, skip)
            print(f"{shape}:")
            variants = _variants(shape, trees, skip)[1:]
            print(f"  {'region':10} {'bare ms':>8} {'codes':>6} " +
                  " ".join(f"{v:>9}" for v in variants))
            for region in REGIONS:
                print(f"  {region:10} {result['bare ms'][region]:8.3f} {counts[region]:6} " +
                      " ".join(f"{result[v][region]:8.3f}x" for v in variants))
            per = result.get("ns per callback")
            if per and shape == "polling":  # elsewhere too few callbacks to read them by
                print(f"  lawkit: {per['all']:.0f} ns per callback ({per['callbacks']:,.0f} "
                      "callbacks in the regions' steps, all rounds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
