"""Benchmark `lawkit footprint diff --env current` on a footprint of a large environment.

Run: python bench/footprint_env_diff.py [--files 997] [--units 52] [--native-mb 512] [--runs 3]
     python bench/footprint_env_diff.py --transformers   (a GPU machine with torch and
                                                          transformers 5 installed)

Target: on a footprint of transformers' engine (the 51,847 units of transformers,
plus the files of torch and the other distributions that ran), `footprint diff --env current`
under 2 s warm, and the cold figure said. "Current" shows content: every file of a distribution
that ran is hashed again, and a Python file that differs is cut into units; so the cost is the
bytes hashed (torch's native libraries are about a gigabyte) and the files parsed.

Synthetic (default; runs anywhere): a distribution of FILES modules of UNITS functions each
(997 x 52 = 51,844 units, plus a module body each) unpacked into a folder on the search path,
with a real shared object padded to NATIVE_MB megabytes (an ELF loads with trailing bytes)
that the harness maps through ctypes, as torch's libraries are; the harness runs inside a
one-module stand-in engine (the hashed files). ``--transformers``: the engine is transformers
itself (its whole package hashed, as `bench/footprint_transformers.py` does), and the harness
builds a two-layer Llama from its config (no weights downloaded) and generates eight tokens on
the GPU when there is one, so torch and its native libraries are the environment.

The harness runs under `lawkit footprint record`; then `lawkit footprint diff fp.json --env
current` runs RUNS times as a user runs it (a fresh process), the first with an empty lawkit
cache folder (cold: lawkit's caches empty; the OS page cache is not dropped) and the others
with the cache the first left (warm). Printed: the footprint's hashed units, its
distributions, files and units, the bytes of the files that ran, and each run's wall time
(``--profile``: one more warm run's profile), then RUNS runs of `footprint diff fp.json`
without ``--env`` (the hashed files alone). Exit 1 when the best warm run misses 2 s.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # testing/: shared with tests
from testing.lawrepo import write_files

TARGET_S = 2.0
ENGINE = {"lawkit.toml": '[digest]\npackages = ["atom"]\n',
          "atom/__init__.py": "", "atom/step.py": "def step(x):\n    return x + 1\n"}
SYNTHETIC = """
import ctypes, importlib, os, sys
import lawkit.footprint as fp
from atom.step import step
modules = [importlib.import_module(f"synthlib.m{i:04d}") for i in range({files})]
native = os.environ.get("BENCH_NATIVE")
if native:
    ctypes.CDLL(native)
fp.phase("steps")
for _ in range(2):
    step(1)
    with fp.region("sample_s"):
        for m in modules:
            m.f0(1)
"""
TRANSFORMERS = """
import torch
import lawkit.footprint as fp
from transformers import LlamaConfig, LlamaForCausalLM
config = LlamaConfig(hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                     num_attention_heads=4, num_key_value_heads=4, vocab_size=1000)
device = "cuda" if torch.cuda.is_available() else "cpu"
model = LlamaForCausalLM(config).to(device).eval()
ids = torch.tensor([[1, 2, 3, 4]], device=device)
fp.phase("steps")
with torch.no_grad():
    for _ in range(2):
        with fp.region("sample_s"):
            model.generate(ids, max_new_tokens=8, do_sample=False)
"""


def synthetic_site(site: Path, files: int, units: int, native_mb: int) -> Path | None:
    """Install the synthetic distribution into ``site`` as a wheel installer would (its files
    and a dist-info whose RECORD lists them); the padded shared object, if any."""
    body = "".join(f"def f{u}(x):\n    return x + {u}\n\n\n" for u in range(units))
    tree: dict[str, str | bytes] = {"synthlib/__init__.py": ""}
    tree.update({f"synthlib/m{i:04d}.py": f"# module {i}\n{body}" for i in range(files)})
    native = None
    spec = importlib.util.find_spec("_json")
    if native_mb and spec is not None and spec.origin and spec.origin.endswith(".so"):
        padded = Path(spec.origin).read_bytes() + os.urandom(native_mb << 20)
        tree["synthlib/libpadded.so"] = padded
        native = site / "synthlib" / "libpadded.so"
    info = "synthlib-1.0.dist-info"
    tree[f"{info}/METADATA"] = "Metadata-Version: 2.1\nName: synthlib\nVersion: 1.0\n\n"
    record = []
    for rel, data in tree.items():
        raw = data if isinstance(data, bytes) else data.encode()
        digest = base64.urlsafe_b64encode(hashlib.sha256(raw).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(raw)}\n")
    tree[f"{info}/RECORD"] = "".join(record) + f"{info}/RECORD,,\n"
    write_files(site, tree)
    return native


def lawkit_cmd(*args: str) -> list[str]:
    """``python -m lawkit ARGS`` with this Python."""
    return [sys.executable, "-m", "lawkit", *args]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=997)
    parser.add_argument("--units", type=int, default=52)
    parser.add_argument("--native-mb", type=int, default=512)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--transformers", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="then one more warm run under cProfile: its top 30 by cumtime")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="lawkit-envdiff-"))
    try:
        engine, site, cache = base / "engine", base / "site", base / "cache"
        env = {**os.environ, "LAWKIT_CACHE_DIR": str(cache)}
        # warm as an installed lawkit is warm: Python's bytecode caches written, not only
        # lawkit's (an image may set PYTHONDONTWRITEBYTECODE: then each run compiles lawkit
        # and pydantic again, about 0.4 s on the GPU machine)
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        root = str(Path(__file__).resolve().parent.parent)
        paths = [root, *filter(None, [os.environ.get("PYTHONPATH")])]
        if args.transformers:
            spec = importlib.util.find_spec("transformers")
            assert spec is not None and spec.origin, "transformers is not installed"
            installed = Path(spec.origin).resolve().parent.parent
            write_files(engine, {"harness.py": TRANSFORMERS, "lawkit.toml":
                                f'[digest]\nroot = "{installed}"\npackages = ["transformers"]\n'})
        else:
            write_files(engine, dict(ENGINE))
            native = synthetic_site(site, args.files, args.units, args.native_mb)
            paths.insert(0, str(site))
            if native is not None:
                env["BENCH_NATIVE"] = str(native)
            (engine / "harness.py").write_text(SYNTHETIC.replace("{files}", str(args.files)))
        env["PYTHONPATH"] = os.pathsep.join(paths)
        started = time.perf_counter()
        subprocess.run(lawkit_cmd("footprint", "record", "--out", "fp.json", "--",
                                  sys.executable, "harness.py"), cwd=engine, env=env, check=True)
        recorded = time.perf_counter() - started
        doc = json.loads((engine / "fp.json").read_text())
        hashed = sum(len(f["units"]) for f in doc["files"].values())
        dists = doc["environment"]["distributions"]
        files = [(name, rel) for name, d in dists.items() for rel in d.get("files", {})]
        units = sum(len(f.get("units", {})) for d in dists.values()
                    for f in d.get("files", {}).values())
        size = 0
        for d in dists.values():
            for rel in d.get("files", {}):
                for folder in sys.path if args.transformers else [str(site)]:
                    candidate = Path(folder or ".") / rel
                    if candidate.is_file():
                        size += candidate.stat().st_size
                        break
        print(f"python {sys.version.split()[0]}; recorded in {recorded:.1f} s: {hashed} hashed "
              f"units; environment: {len(dists)} distributions, {len(files)} files that ran, "
              f"{units} units, {size / 1e6:.0f} MB of them found; cache {cache}")
        times = []
        for run in range(args.runs):
            started = time.perf_counter()
            result = subprocess.run(lawkit_cmd("footprint", "diff", "fp.json", "--env",
                                               "current", "--json"), cwd=engine, env=env,
                                    capture_output=True, text=True, check=False)
            times.append(time.perf_counter() - started)
            verdict = json.loads(result.stdout).get("verdict") if result.stdout else None
            print(f"{'cold' if run == 0 else 'warm'} run {run}: {times[-1]:.2f} s, exit "
                  f"{result.returncode}, verdict {verdict}")
            if result.returncode not in (0, 1):
                print(result.stderr)
                return 2
        if args.profile:
            profiled = subprocess.run([sys.executable, "-m", "cProfile", "-s", "cumtime", "-m",
                                       "lawkit", "footprint", "diff", "fp.json", "--env",
                                       "current"], cwd=engine, env=env, capture_output=True,
                                      text=True, check=False)
            lines = profiled.stdout.splitlines()
            start = next((i for i, line in enumerate(lines) if "Ordered by" in line), 0)
            print("\n".join(lines[start:start + 34]))
        plain = []
        for _run in range(args.runs):
            started = time.perf_counter()
            subprocess.run(lawkit_cmd("footprint", "diff", "fp.json", "--json"), cwd=engine,
                           env=env, capture_output=True, check=False)
            plain.append(time.perf_counter() - started)
        print(f"footprint diff without --env (the hashed files alone): best {min(plain):.2f} s, "
              f"worst {max(plain):.2f} s over {args.runs} runs")
        warm = min(times[1:]) if len(times) > 1 else times[0]
        print(f"target: warm under {TARGET_S} s: {'met' if warm < TARGET_S else 'missed'} "
              f"(best warm {warm:.2f} s, cold {times[0]:.2f} s)")
        return 0 if warm < TARGET_S else 1
    finally:
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
