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
    (tmp_path / "scripts" / "test").write_text(
        'echo "suite on $LAWKIT_PYTHON, LAWKIT_STRESS=$LAWKIT_STRESS"\n')
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


def test_ci_runs_the_stress_tests_that_a_local_run_leaves_out(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("LAWKIT_STRESS", raising=False)
    result = _ci(tmp_path, f"{sys.version_info[0]}.{sys.version_info[1]}")
    suites = [line for line in result.stdout.splitlines() if line.startswith("suite on ")]
    assert suites and all(line.endswith(", LAWKIT_STRESS=1") for line in suites), result.stdout


@pytest.mark.parametrize(("stress", "selected"), [("", ["-m", "not stress"]), ("1", [])])
def test_scripts_test_leaves_out_the_stress_tests_unless_told(
        tmp_path: Path, stress: str, selected: list[str]) -> None:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").write_text('#!/bin/sh\nprintf "%s|" "$@"; echo\n')
    (venv / "bin" / "python").chmod(0o755)
    env = {**os.environ, "LAWKIT_VENV": str(venv), "LAWKIT_STRESS": stress}
    done = subprocess.run(["bash", str(ROOT / "scripts" / "test"), "-q"], capture_output=True,
                          text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    pytest_line = done.stdout.splitlines()[-1]
    assert pytest_line == "|".join(["-m", "pytest", "-n", "auto", *selected, "-q"]) + "|"
