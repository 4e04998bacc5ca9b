"""`lawkit footprint record` lists under `unpackaged` the code that ran from no distribution,
outside the hashed files and outside the workspace's own folder (docs/footprints.md, "The
environment"): the workspace's scripts are versioned by the laws' repository; a folder on
PYTHONPATH beside it, or a file written into an environment inside it, is not."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from testing.wheels import build_wheel, unpack_wheels

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12),
                                reason="3.11's coverage.py sees hashed code only")

HARNESS = """
import lawkit.footprint as fp
import helper, stray, leftover, packaged.core
from atom.runner import Runner

fp.phase("steps")
for _ in range(2):
    Runner().run()
    helper.tick(); stray.tick(); leftover.tick(); packaged.core.tick()
"""
TICK = "def tick():\n    return 1\n"


def test_only_code_from_outside_the_workspace_or_written_into_an_environment_is_unpackaged(
        engine: Path, tmp_path: Path) -> None:
    tools, outside = engine / "tools", tmp_path / "outside"  # engine/ holds lawkit.toml
    for folder, name in ((tools, "helper"), (outside, "stray")):
        folder.mkdir()
        (folder / f"{name}.py").write_text(TICK)
    # an environment inside the workspace: a distribution installed, and a file in no RECORD
    site = unpack_wheels(engine / ".venv" / "site", build_wheel(
        tmp_path / "wheels", "packaged", "1.0", {"core.py": TICK.encode()}))
    (site / "leftover.py").write_text(TICK)
    (engine / "harness.py").write_text(HARNESS)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(tools), str(outside), str(site), *filter(None, [os.environ.get("PYTHONPATH")])])}
    done = subprocess.run([sys.executable, "-m", "lawkit", "footprint", "record", "--out",
                           "fp.json", "--", sys.executable, "harness.py"], cwd=engine, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    recorded = json.loads((engine / "fp.json").read_text())["environment"]
    assert recorded["unpackaged"] == sorted(
        os.path.realpath(p) for p in (outside / "stray.py", site / "leftover.py"))
    assert list(recorded["distributions"]) == ["packaged"]
