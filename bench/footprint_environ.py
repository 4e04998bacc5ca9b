"""Benchmark the configuration's cost: what recording an environment variable read adds to it.

Run: .venv-3.12/bin/python bench/footprint_environ.py [--reads N] [--rounds N]

The reads are those engines make inside their steps. vLLM's ``envs.py`` registers each variable
as a lambda calling ``os.getenv`` and answers ``envs.VLLM_X`` through a module ``__getattr__``
that calls it on every access; other code reads ``os.environ.get``, ``os.environ[...]``, ``in
os.environ``, iterates ``os.environ`` (``[k for k in os.environ if k.startswith(...)]``) and
copies it (``os.environ.copy()`` for a child's environment). Each kind runs N times (default
20,000) inside a region in steps, bare (lawkit imported, not recording) and recorded (the
measured process's `ConfigurationReads` installed, its context read from the markers as in a
recorded process), the rounds (default 7) interleaving the two so that load from elsewhere
falls on both alike. A read is one variable read: an iteration or a copy of an environment
of V variables reads V. Printed per kind: the median over rounds of recorded/bare and of the
difference per read in ns (process CPU time, which other jobs' load does not count). Target
(docs/footprints.md, the configuration): at most 1 us more per read. Exit 1 when a kind
misses it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

try:
    import lawkit.footprint as markers
except ImportError:  # run from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import lawkit.footprint as markers
from lawkit.footprint.measured.configuration import ConfigurationReads

TARGET_NS = 1000.0
NAMES = [f"VLLM_BENCH_{i}" for i in range(20)]
"""Twenty variables, half set, as an engine's registry holds set and unset ones."""

ENVS: dict[str, Callable[[], object]] = {
    name: (lambda name=name: os.getenv(name, "0")) for name in NAMES}
"""vLLM's ``environment_variables``: each variable's lambda reads it on every access."""


def envs_getattr(name: str) -> object:
    """vLLM's ``envs.__getattr__``: the registered lambda, called on each access."""
    if name in ENVS:
        return ENVS[name]()
    raise AttributeError(name)


def via_envs(n: int) -> int:
    """``envs.VLLM_X`` n times, cycling over the registry."""
    for i in range(n):
        envs_getattr(NAMES[i % 20])
    return n


def via_get(n: int) -> int:
    """``os.environ.get(name)`` n times."""
    get = os.environ.get
    for i in range(n):
        get(NAMES[i % 20])
    return n


def via_item(n: int) -> int:
    """``os.environ[name]`` n times (set names only)."""
    environ = os.environ
    for i in range(n):
        environ[NAMES[2 * (i % 10)]]
    return n


def via_in(n: int) -> int:
    """``name in os.environ`` n times."""
    environ = os.environ
    for i in range(n):
        NAMES[i % 20] in environ  # noqa: B015 (the read is what is timed)
    return n


def via_iteration(n: int) -> int:
    """``[k for k in os.environ if k.startswith("VLLM_")]`` until n variables are read."""
    size = len(os.environ)
    rounds = max(1, n // size)
    for _ in range(rounds):
        [k for k in os.environ if k.startswith("VLLM_")]
    return rounds * size


def via_copy(n: int) -> int:
    """``os.environ.copy()`` until n variables are read."""
    size = len(os.environ)
    rounds = max(1, n // size)
    for _ in range(rounds):
        os.environ.copy()
    return rounds * size


KINDS = (via_envs, via_get, via_item, via_in, via_iteration, via_copy)


def timed(kind: Callable[[int], int], n: int) -> tuple[float, int]:
    """(CPU seconds, reads) for n reads of one kind inside a region."""
    with markers.region("sample_s"):
        cpu = time.process_time()
        reads = kind(n)
        cpu = time.process_time() - cpu
    return cpu, reads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reads", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    for i, name in enumerate(NAMES):
        if i % 2 == 0:
            os.environ[name] = str(i)
    markers.phase("steps")
    recorder = ConfigurationReads()
    bare: dict[str, list[float]] = {k.__name__: [] for k in KINDS}
    recorded: dict[str, list[float]] = {k.__name__: [] for k in KINDS}
    reads: dict[str, int] = {}
    for _ in range(args.rounds):
        for kind in KINDS:
            seconds, reads[kind.__name__] = timed(kind, args.reads)
            bare[kind.__name__].append(seconds)
        recorder.install()
        try:
            for kind in KINDS:
                seconds, _ = timed(kind, args.reads)
                recorded[kind.__name__].append(seconds)
        finally:
            recorder.uninstall()
    print(f"python {sys.version.split()[0]}, {len(os.environ)} variables set, "
          f"{args.rounds} rounds, load {os.getloadavg()[0]:.2f}")
    print(f"{'kind':<16}{'bare ns/read':>14}{'recorded/bare':>15}{'+ns/read':>10}")
    missed = False
    for kind in KINDS:
        name, n = kind.__name__, reads[kind.__name__]
        ratio = statistics.median(r / b for r, b in zip(recorded[name], bare[name], strict=True))
        extra = statistics.median((r - b) / n * 1e9
                                  for r, b in zip(recorded[name], bare[name], strict=True))
        base = statistics.median(bare[name]) / n * 1e9
        missed |= extra > TARGET_NS
        print(f"{name:<16}{base:>14.0f}{ratio:>15.2f}{extra:>10.0f}")
    print(f"target: at most {TARGET_NS:.0f} ns more per read: "
          f"{'missed' if missed else 'met'}")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
