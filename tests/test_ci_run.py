"""`.ci/run` fails when no Python 3.12+ ran the suite: the main footprint recorder
(sys.monitoring) would go untested. Run on a copy whose scripts/test only says it ran."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _ci(tmp_path: Path, pythons: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / ".ci").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "test").write_text('echo "suite on $LAWKIT_PYTHON"\n')
    env = {**os.environ, "LAWKIT_CI_PYTHONS": pythons}
    return subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True,
                          text=True, env=env, check=False)


def test_ci_fails_saying_why_when_no_python_3_12_or_later_ran(tmp_path: Path) -> None:
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    if sys.version_info >= (3, 12):
        pytest.skip("needs a Python before 3.12 to run the suite on")
    result = _ci(tmp_path, version)
    assert result.returncode == 1, result.stdout
    assert "no Python 3.12+ found" in result.stdout and "sys.monitoring" in result.stdout


def test_ci_passes_when_a_python_3_12_or_later_ran(tmp_path: Path) -> None:
    found = [v for v in ("3.12", "3.13") if shutil.which(f"python{v}") or
             list(Path.home().glob(f".pyenv/versions/{v}*/bin/python{v}"))]
    if sys.version_info < (3, 12) and not found:
        pytest.skip("no Python 3.12+ on this machine")
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    result = _ci(tmp_path, " ".join(dict.fromkeys([version, *found])))
    assert result.returncode == 0, result.stdout
    assert "no Python 3.12+ found" not in result.stdout
