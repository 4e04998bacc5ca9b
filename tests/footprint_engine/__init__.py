"""Helpers for the footprint tests: a copy of the stand-in engine, recording it, editing it."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def copy_engine(dest: Path) -> Path:
    """A fresh copy of the stand-in engine (atom/, run.py, lawkit.toml) under ``dest``."""
    shutil.copytree(HERE, dest, ignore=shutil.ignore_patterns("__pycache__", "__init__.py",
                                                              "README.md"))
    (dest / "atom" / "__init__.py").write_bytes(b"")
    return dest


def edit(path: Path, old: str, new: str) -> None:
    """Replace one exact occurrence of ``old`` in a file."""
    text = path.read_text()
    assert text.count(old) == 1, f"{old!r} occurs {text.count(old)} times in {path}"
    path.write_text(text.replace(old, new))


def lawkit(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the lawkit command line in a subprocess."""
    return subprocess.run([sys.executable, "-m", "lawkit", *args], cwd=cwd,
                          capture_output=True, text=True, check=False)
