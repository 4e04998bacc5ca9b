"""`lawkit footprint record` writes the environment: each distribution whose code ran, where it
ran, or whose shared object was mapped (everywhere), against real wheels installed in a folder
on the measured command's search path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lawkit.footprint.document import read_footprint
from lawkit.footprint.environment import python_build
from testing.wheels import build_wheel, stdlib_shared_object, unpack_wheels

HARNESS = """
import ctypes, os, sys
import lawkit.footprint as fp
import sampler.core, idle
from atom.runner import Runner

if "--load" in sys.argv:
    import importlib.util
    folder = os.path.dirname(importlib.util.find_spec("nativelib").origin)
    ctypes.CDLL(os.path.join(folder, "libnative.so"))
fp.phase("steps")
for _ in range(3):
    Runner().run()
    with fp.region("sample_s"):
        sampler.core.pick(3)
if "--again" in sys.argv:
    with fp.region("update_s"):  # turned off in sample_s, on again in another region
        sampler.core.pick(1)
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with four installed wheels: sampler (run in a region), idle (imported, never
    called), unused (never imported), nativelib (a shared object, loaded by ctypes only)."""
    base = tmp_path_factory.mktemp("envsite")
    wheels, target = base / "wheels", base / "site"
    lib = stdlib_shared_object()
    built = [build_wheel(wheels, "sampler", "1.0", {"core.py": b"def pick(n):\n    return n\n"}),
             build_wheel(wheels, "idle", "1.0", {"core.py": b"def never():\n    return 0\n"}),
             build_wheel(wheels, "unused", "1.0"),
             build_wheel(wheels, "nativelib", "1.0",
                         {"libnative.so": lib.read_bytes()} if lib is not None else {})]
    return unpack_wheels(target, *built)


def _record(engine: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (engine / "harness.py").write_text(HARNESS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    return subprocess.run([sys.executable, "-m", "lawkit", "footprint", "record", "--out",
                           "fp.json", "--", sys.executable, "harness.py", *args],
                          cwd=engine, env=env, capture_output=True, text=True, check=False)


def _environment(engine: Path, site: Path, *args: str) -> tuple[dict[str, Any], str]:
    result = _record(engine, site, *args)
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads((engine / "fp.json").read_text())["environment"]
    return doc, result.stderr


@pytest.mark.skipif(sys.version_info < (3, 12), reason="per-region attribution: sys.monitoring")
def test_a_distribution_run_only_in_a_region_has_that_region(engine: Path, site: Path) -> None:
    env, stderr = _environment(engine, site)
    dists = env["distributions"]
    sampler = dists["sampler"]
    assert sampler["phases"] == ["startup", "steps"]
    assert sampler["regions"] == ["sample_s"]
    assert sampler["startup_regions"] == ["*"]  # its module body ran at import
    assert (sampler["version"], sampler["install"], sampler["source"]) == ("1.0", "index", None)
    assert len(sampler["record"]) == 64
    # imported at start-up, never called: its module bodies ran at start-up, nothing in steps
    assert (dists["idle"]["phases"], dists["idle"]["regions"]) == (["startup"], [])
    assert "unused" not in dists and "nativelib" not in dists
    assert "lawkit" not in dists and "python" not in dists
    assert env["python"] == python_build().to_json()
    assert "everywhere" not in env and "counts as run in every" not in stderr
    # the harness is in no distribution and not hashed, but is the workspace's own code
    assert env["unpackaged"] == []
    parsed = read_footprint(engine / "fp.json").environment
    assert parsed is not None and parsed.distributions["sampler"].regions == ("sample_s",)


@pytest.mark.skipif(sys.version_info < (3, 12), reason="per-region attribution: sys.monitoring")
def test_a_distribution_run_in_a_second_region_has_both(engine: Path, site: Path) -> None:
    """Its code, turned off in the region it ran in (a region entered again adds nothing),
    is turned on again by the switch to a region where its file has not run."""
    env, _ = _environment(engine, site, "--again")
    assert env["distributions"]["sampler"]["regions"] == ["sample_s", "update_s"]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/maps")
def test_a_distribution_loaded_only_by_ctypes_counts_everywhere(engine: Path,
                                                                site: Path) -> None:
    if stdlib_shared_object() is None:
        pytest.skip("no shared object in the standard library to ship")
    env, _ = _environment(engine, site, "--load")
    native = env["distributions"]["nativelib"]
    assert native["phases"] == ["startup", "steps"]
    assert native["regions"] == ["*", "sample_s"]
    assert native["startup_regions"] == ["*"]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="3.11's coverage.py sees hashed code only")
def test_on_3_11_every_loaded_distribution_counts_everywhere(engine: Path, site: Path) -> None:
    env, stderr = _environment(engine, site)
    dists = env["distributions"]
    for name in ("sampler", "idle"):
        assert dists[name]["phases"] == ["startup", "steps"]
        assert dists[name]["regions"] == ["*", "sample_s"]
    assert "unused" not in dists
    assert env["everywhere"] is True
    assert "every distribution it loaded counts as run in every phase and region" in stderr
    assert len(stderr.strip().splitlines()) == 2  # this line and coverage's inflation note
