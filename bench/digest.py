"""Benchmark src_digest against the floor: opening, reading and hashing the same files.

Run: .venv/bin/python bench/digest.py [--runs N] [--keep DIR]

Two generated trees shaped like an engine checkout: nested packages of .py files (empty
__init__.py files, many small modules, a few large ones), some other files, and __pycache__
folders full of .pyc files: "engine" (~400 .py files, ~7.5 MB hashed) and "engine-x20" (20 times
that). For each tree, best of N timed runs after a warm-up (files in the page cache):

1. in process: src_digest.host_key_of(root) against a plain loop that opens, reads and
   sha256-hashes the same files from a precomputed list (target: ratio <= 1.3);
2. whole process: `python -m lawkit digest --engine ROOT` against a bare stdlib script that
   walks, reads and hashes the same files itself (target: ratio <= 3), with
   `python -c "import src_digest; ..."` alongside to separate src_digest from the CLI.

Standard library only.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

try:
    import src_digest
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import src_digest

PY_FILES = 400
PY_BYTES = 7_500_000
SCALE = 20

BARE_SCRIPT = r"""
import hashlib, os, sys
root = sys.argv[1]
found = []
for folder, dirs, files in os.walk(os.path.join(root, "atom")):
    dirs[:] = [d for d in dirs if d != "__pycache__"]
    for name in files:
        if name.endswith(".py"):
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found.append((os.fsencode(os.path.relpath(path, root)),
                              hashlib.sha256(f.read()).digest()))
found.sort()
h = hashlib.sha256(b"src_digest/1\n")
for relpath, sha in found:
    h.update(relpath + b"\0" + sha)
print(h.hexdigest()[:8])
"""

SRC_DIGEST_SCRIPT = "import sys, src_digest; print(src_digest.host_key_of(sys.argv[1]))"

WORDS = (
    b"def class return self import from if else for in while yield async await lambda None "
    b"True False tensor batch seq token block cache kv attn scheduler sampler step input "
    b"output rank world size dtype device stream event prefill decode chunk slot"
).split()


def make_tree(root: Path, py_files: int, py_bytes: int, seed: int) -> list[str]:
    """Write an engine-shaped tree under root/atom; return the paths of the hashed files."""
    rng = random.Random(seed)
    folders = [root / "atom"]
    for i in range(max(1, py_files // 10)):
        parent = rng.choice(folders) if len(folders) < 8 or rng.random() < 0.7 else folders[0]
        if len(parent.relative_to(root).parts) >= 5:
            parent = folders[0]
        folders.append(parent / f"pkg{i:03d}")
    for folder in folders:
        (folder / "__pycache__").mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_bytes(b"")
    hashed = [str(folder / "__init__.py") for folder in folders]
    # Module sizes are skewed like real code: many small modules, a few very large ones.
    count = py_files - len(folders)
    weights = [rng.lognormvariate(0.0, 1.2) for _ in range(count)]
    scale = py_bytes / sum(weights)
    for i, weight in enumerate(weights):
        folder = rng.choice(folders)
        path = folder / f"mod{i:05d}.py"
        path.write_bytes(_source(rng, int(weight * scale)))
        hashed.append(str(path))
        if rng.random() < 0.6:
            pyc = folder / "__pycache__" / f"mod{i:05d}.cpython-311.pyc"
            pyc.write_bytes(rng.randbytes(max(64, int(weight * scale) // 2)))
    for i in range(py_files // 10):
        folder = rng.choice(folders)
        name = rng.choice(["notes.txt", "config.json", "README.md", "kernel.so", "data.bin"])
        (folder / f"{i:04d}-{name}").write_bytes(rng.randbytes(rng.randrange(100, 50_000)))
    return hashed


def _source(rng: random.Random, size: int) -> bytes:
    """About ``size`` bytes of Python-looking lines, cut from a shared pool (fast to write)."""
    start = rng.randrange(len(_POOL) - 1)
    out = _POOL[start : start + size]
    while len(out) < size:
        out += _POOL[: size - len(out)]
    return out


def _make_pool(size: int) -> bytes:
    rng = random.Random(0)
    lines = []
    total = 0
    while total < size:
        line = b"    " * rng.randrange(3) + b" ".join(rng.choices(WORDS, k=rng.randrange(3, 12)))
        lines.append(line)
        total += len(line) + 1
    return b"\n".join(lines)


_POOL = _make_pool(1 << 20)


def best_of(runs: int, fn: Callable[[], object]) -> float:
    """The fastest of ``runs`` timed calls, after one warm-up call, in seconds."""
    fn()
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def floor_loop(files: list[str]) -> None:
    """Open, read and sha256-hash each file: the least any digest can do."""
    for path in files:
        with open(path, "rb") as f:
            hashlib.sha256(f.read()).digest()


def run(argv: list[str], cwd: str) -> str:
    """Run a command; its stdout, or an exception naming its stderr."""
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "")
    return proc.stdout.strip()


def lawkit_cli_problem(root: str, cwd: str, expect: str) -> str | None:
    """Why `python -m lawkit digest` cannot be benchmarked, or None when it can."""
    try:
        out = run([sys.executable, "-m", "lawkit", "digest", "--engine", root], cwd)
    except RuntimeError as exc:
        return f"`python -m lawkit digest` failed: {exc}"
    if out.splitlines()[:1] != [expect]:
        return f"`python -m lawkit digest` printed {out!r}, expected {expect!r}"
    return None


def bench_tree(name: str, root: Path, files: list[str], runs: int, cwd: str) -> list[list[str]]:
    """Time one tree; the table rows."""
    mb = sum(os.path.getsize(p) for p in files) / 1e6
    digest = src_digest.host_key_of(root)
    bare = run([sys.executable, "-c", BARE_SCRIPT, str(root)], cwd)
    assert bare == digest, f"bare script {bare} != host_key_of {digest}"
    ours = best_of(runs, lambda: src_digest.host_key_of(root))
    floor = best_of(runs, lambda: floor_loop(files))
    rows = [[name, f"{len(files)}", f"{mb:.1f}", "host_key_of (in process)",
             _ms(ours), "open/read/sha256 loop", _ms(floor), _ratio(ours, floor, 1.3)]]

    proc_runs = max(3, runs // 2)
    bare_s = best_of(proc_runs, lambda: run([sys.executable, "-c", BARE_SCRIPT, str(root)], cwd))
    lib_s = best_of(
        proc_runs, lambda: run([sys.executable, "-c", SRC_DIGEST_SCRIPT, str(root)], cwd)
    )
    rows.append(["", "", "", "python -c 'src_digest...'", _ms(lib_s), "bare stdlib script",
                 _ms(bare_s), _ratio(lib_s, bare_s, 3.0)])
    problem = lawkit_cli_problem(str(root), cwd, digest)
    if problem is None:
        cli_argv = [sys.executable, "-m", "lawkit", "digest", "--engine", str(root)]
        cli_s = best_of(proc_runs, lambda: run(cli_argv, cwd))
        rows.append(["", "", "", "python -m lawkit digest", _ms(cli_s), "bare stdlib script",
                     _ms(bare_s), _ratio(cli_s, bare_s, 3.0)])
    else:
        rows.append(["", "", "", "python -m lawkit digest", "skipped", problem, "", ""])
    return rows


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def _ratio(ours: float, floor: float, target: float) -> str:
    ratio = ours / floor
    return f"{ratio:.2f}x {'ok' if ratio <= target else 'OVER'} (<= {target}x)"


def print_table(rows: list[list[str]]) -> None:
    header = ["tree", "files", "MB", "measured", "best", "against", "best", "ratio"]
    table = [header, *rows]
    widths = [max(len(r[i]) for r in table if len(r) > i) for i in range(len(header))]
    for i, row in enumerate(table):
        print("  ".join(cell.ljust(widths[j]) for j, cell in enumerate(row)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="timed runs per measure (best kept)")
    parser.add_argument("--keep", type=Path, help="build the trees in DIR and keep them")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-digest-") as tmp:
        base = args.keep or Path(tmp)
        cwd = tmp  # no lawkit config above it: the CLI runs with the defaults
        rows: list[list[str]] = []
        for name, scale, runs in (("engine", 1, args.runs), (f"engine-x{SCALE}", SCALE, 3)):
            root = base / name
            files = make_tree(root, PY_FILES * scale, PY_BYTES * scale, seed=scale)
            rows += bench_tree(name, root, files, max(1, runs), cwd)
        print(f"python {sys.version.split()[0]} on {sys.platform}, {os.cpu_count()} CPUs")
        print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
