"""Benchmark `lawkit footprint diff` and the cost of `lawkit footprint record`.

Run: .venv/bin/python bench/footprint.py [--runs N] [--rounds N] [--keep DIR]

0. steps: what recording costs the steps it records, and each region, on Python-Markdown
   (bench/footprint_steps.py: 11 interleaved rounds bare/recorded/bare; needs markdown);

A generated engine shaped like bench/digest.py's (~400 .py files, ~7.5 MB, module sizes skewed
like real code), but of valid Python: modules of functions and classes with methods. A workload
imports every module (start-up), then calls 2,000 of the functions and methods many times
(steps, after ``lawkit.footprint.phase("steps")``).

1. record: `lawkit footprint record -- python workload.py` against the bare
   `python workload.py` (the recording overhead: reported, not bounded);
2. diff: whole-process `lawkit footprint diff FOOTPRINT --engine ROOT` after a one-line change
   in one file (target: under 1 s), against whole-process `lawkit digest --engine ROOT` of the
   same tree in the same run (the reference: the least a diff must do is digest the tree);
3. review: the engine, the footprint and a law file fitted with `--footprint` committed to a git
   repository, the same one-line change committed with the law re-keyed, then whole-process
   `lawkit review --base HEAD~1` (units of the changed file, the law file's verdict; target:
   under 1 s).

Standard library and lawkit (the commands run as subprocesses); the review's fit needs the
`fit` extra.

What it last measured, dated, is in docs/performance.md (footprint record, diff and
review on a generated engine).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    from lawkit.footprint.units import units_of
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from lawkit.footprint.units import units_of

from digest import best_of  # bench/digest.py: the same interleaved best-of-N timing
from footprint_steps import measure_steps

PY_FILES = 400
PY_BYTES = 7_500_000
EXECUTED = 2_000
CALLS = 30

WORKLOAD = r'''
import importlib, json, sys
import lawkit.footprint
plan = json.load(open(sys.argv[1]))
modules = {name: importlib.import_module(name) for name in plan["modules"]}
lawkit.footprint.phase("steps")
calls = []
for module, qualname in plan["calls"]:
    obj = modules[module]
    parts = qualname.split(".")
    if len(parts) == 2:
        obj = getattr(obj, parts[0])()
    calls.append(getattr(obj, parts[-1]))
total = 0
for _ in range(plan["rounds"]):
    for fn in calls:
        total += fn(3)
print(total)
'''


def _function(rng: random.Random, name: str, indent: str) -> str:
    body = [f"{indent}def {name}(self, x, scale={rng.randrange(1, 9)}):" if indent else
            f"def {name}(x, scale={rng.randrange(1, 9)}):",
            f'{indent}    """Compute {name} for one step."""',
            f"{indent}    total = x * scale"]
    for k in range(rng.randrange(1, 6)):
        body.append(f"{indent}    if total % {k + 2} == 0:")
        body.append(f"{indent}        total += {rng.randrange(100)}")
        body.append(f"{indent}    else:")
        body.append(f"{indent}        total -= {k}  # keep it small")
    body.append(f"{indent}    return total % 1000")
    return "\n".join(body) + "\n"


def _module(rng: random.Random, size: int, prefix: str) -> tuple[str, list[str]]:
    """About ``size`` bytes of Python: functions and classes; the callable qualnames."""
    parts = [f'"""Generated module {prefix}."""\n\nimport math\n\nLIMIT = {rng.randrange(99)}\n']
    names: list[str] = []
    n = 0
    length = len(parts[0])
    while length < size:
        n += 1
        if rng.random() < 0.3:
            cls = f"C{prefix}_{n}"
            text = [f"\n\nclass {cls}:\n    kind = {n}\n"]
            for m in range(rng.randrange(2, 8)):
                text.append("\n" + _function(rng, f"m{m}", "    "))
                names.append(f"{cls}.m{m}")
            chunk = "".join(text)
        else:
            fn = f"f{prefix}_{n}"
            chunk = "\n\n" + _function(rng, fn, "")
            names.append(fn)
        parts.append(chunk)
        length += len(chunk)
    return "".join(parts), names


def make_engine(root: Path, seed: int = 0) -> tuple[list[str], list[tuple[str, str]]]:
    """Write root/atom; return the module names and every callable (module, qualname)."""
    rng = random.Random(seed)
    folders = [root / "atom"]
    for i in range(PY_FILES // 10):
        parent = rng.choice(folders) if len(folders) < 8 or rng.random() < 0.7 else folders[0]
        if len(parent.relative_to(root).parts) >= 5:
            parent = folders[0]
        folders.append(parent / f"pkg{i:03d}")
    for folder in folders:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_bytes(b"")
    count = PY_FILES - len(folders)
    weights = [rng.lognormvariate(0.0, 1.2) for _ in range(count)]
    scale = PY_BYTES / sum(weights)
    modules: list[str] = []
    callables: list[tuple[str, str]] = []
    for i, weight in enumerate(weights):
        folder = rng.choice(folders)
        path = folder / f"mod{i:05d}.py"
        text, names = _module(rng, int(weight * scale), f"{i}")
        path.write_text(text)
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        modules.append(module)
        callables += [(module, n) for n in names]
    return modules, callables


def run(argv: list[str], cwd: Path, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> str:
    """Run a command; its stdout, or an exception naming its stderr."""
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if proc.returncode not in ok:
        raise RuntimeError(f"{argv[:4]} exited {proc.returncode}: {proc.stderr.strip()[-400:]}")
    return proc.stdout.strip()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="timed runs per measure (best kept)")
    parser.add_argument("--keep", type=Path, help="build the engine in DIR and keep it")
    parser.add_argument("--rounds", type=int, default=11,
                        help="interleaved rounds of the steps measure (0: skip it)")
    args = parser.parse_args()
    if args.rounds:
        measure_steps(args.rounds)
    with tempfile.TemporaryDirectory(prefix="bench-footprint-") as tmp:
        base = args.keep or Path(tmp)
        root = base / "engine"
        modules, callables = make_engine(root)
        hashed = list(root.rglob("*.py"))
        mb = sum(p.stat().st_size for p in hashed) / 1e6
        rng = random.Random(1)
        chosen = rng.sample(callables, EXECUTED)
        plan = root / "plan.json"
        plan.write_text(json.dumps({"modules": modules, "calls": chosen, "rounds": CALLS}))
        workload = root / "workload.py"
        workload.write_text(WORKLOAD)
        (root / "lawkit.toml").write_text('laws = "laws"\n\n[digest]\npackages = ["atom"]\n')
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = os.path.join(tmp, "pycache")
        py, lawkit = sys.executable, [sys.executable, "-m", "lawkit"]
        fp = root / "fp.json"  # in the workspace: the fit names it, the review reads it at head
        bare_argv = [py, str(workload), str(plan)]
        record_argv = [*lawkit, "footprint", "record", "--out", str(fp), "--", *bare_argv]
        record_runs = max(1, args.runs // 2)
        t = best_of(record_runs, {"bare": lambda: run(bare_argv, root, env),
                                  "record": lambda: run(record_argv, root, env)})
        sources = [p.read_bytes() for p in hashed]
        cut = best_of(record_runs, {"units": lambda: [units_of(b) for b in sources]})["units"]
        doc = json.loads(fp.read_text())
        units = [u for f in doc["files"].values() for u in f["units"].values()]
        ran = [u for u in units if u["phases"]]
        in_steps = sum(1 for u in units if "steps" in u["phases"])

        # A law file bound to the footprint, all committed (the fit needs the `fit` extra).
        (root / "captures.csv").write_text("batch_size,step_s\n" + "".join(
            f"{b},{0.001 + 0.0001 * b}\n" for b in range(1, 9)))
        run([*lawkit, "fit", "captures.csv", "--out", "laws/host.yaml", "--formula",
             "step_s ~ 1 + batch_size", "--captured-on", "current", "--footprint", str(fp)],
            root, env)
        git = ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=bench@example"]
        run([*git, "init", "-q"], root, env)
        run([*git, "add", "-A"], root, env)
        run([*git, "commit", "-qm", "engine, footprint, laws"], root, env)

        # One line changed in one file that holds executed code: the step path.
        module, qualname = chosen[0]
        path = root / (module.replace(".", "/") + ".py")
        text = path.read_text()
        at = 0
        for part in qualname.split("."):
            at = text.index(f"{'class' if part[0] == 'C' else 'def'} {part}", at)
        at = text.index("return total % 1000", at)
        path.write_text(text[:at] + "return total % 999" + text[at + 19:])
        diff_argv = [*lawkit, "footprint", "diff", str(fp), "--engine", str(root)]
        digest_argv = [*lawkit, "digest", "--engine", str(root)]
        out = run(diff_argv, root, env, ok=(1,))
        d = best_of(args.runs, {"diff": lambda: run(diff_argv, root, env, ok=(1,)),
                                "digest": lambda: run(digest_argv, root, env)})
        run([*lawkit, "rekey", "--why", "bench"], root, env)
        run([*git, "commit", "-qam", "a one-line change; laws re-keyed"], root, env)
        review_argv = [*lawkit, "review", "--base", "HEAD~1"]
        verdict = json.loads(run([*review_argv, "--format", "json"], root, env))["footprints"]
        r = best_of(args.runs, {"review": lambda: run(review_argv, root, env)})

        print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} CPUs; "
              f"engine: {len(hashed)} files, {mb:.1f} MB, {len(units)} units; footprint: "
              f"{len(ran)} units ran ({in_steps} in steps), "
              f"{fp.stat().st_size / 1e6:.1f} MB of JSON")
        print(f"diff after a 1-file change: {out.splitlines()[0]}")
        print(f"record   {t['record']:.2f} s  bare run {t['bare']:.2f} s  overhead "
              f"{t['record'] / t['bare']:.2f}x (best of {record_runs}; reported, not bounded), "
              f"of which {cut:.2f} s cutting every hashed file into units")
        ok = "ok" if d["diff"] < 1.0 else "OVER"
        print(f"diff     {d['diff'] * 1e3:.0f} ms ({ok}, target < 1000 ms)  lawkit digest "
              f"{d['digest'] * 1e3:.0f} ms  ratio {d['diff'] / d['digest']:.2f}x "
              f"(best of {args.runs})")
        ok = "ok" if r["review"] < 1.0 else "OVER"
        print(f"review   {r['review'] * 1e3:.0f} ms ({ok}, target < 1000 ms) of a 1-file change, "
              f"1 law file with a footprint: verdict {verdict[0]['verdict']}, "
              f"{len(verdict[0]['units'])} unit(s) behind it (best of {args.runs})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
