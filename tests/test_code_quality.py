"""The code checks run as part of the suite, so one command runs everything CI runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=REPO, capture_output=True, text=True,
                          check=False)


def test_ruff_finds_nothing() -> None:
    result = _run("ruff", "check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict_passes_on_the_packages() -> None:
    result = _run("mypy")
    assert result.returncode == 0, result.stdout + result.stderr
