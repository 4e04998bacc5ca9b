"""Helpers for the footprint tests: a copy of the stand-in engine, recording it, editing it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

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


def record_harness(engine: Path, text: str) -> subprocess.CompletedProcess[str]:
    """Write ``harness.py`` into the engine and record it with this Python."""
    (engine / "harness.py").write_text(text)
    return lawkit("footprint", "record", "--out", "fp.json", "--", sys.executable, "harness.py",
                  cwd=engine)


def recorded(engine: Path, text: str) -> dict[str, Any]:
    """The footprint of ``harness.py`` written as ``text`` (the recording must succeed)."""
    result = record_harness(engine, text)
    assert result.returncode == 0, result.stderr
    doc: dict[str, Any] = json.loads((engine / "fp.json").read_text())
    return doc
