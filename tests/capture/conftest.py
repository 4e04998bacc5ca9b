"""Fixtures of the capture writer's tests: a process in start-up, and a workspace to digest."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import lawkit.capture
from lawkit.config import load_workspace
from lawkit.footprint.measured.markers import MARKERS
from lawkit.keying.digest import current_digest


@pytest.fixture(autouse=True)
def _startup_phase(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The phase and the captures in steps are process-wide: each test starts in start-up, as
    a process does, with no capture open."""
    monkeypatch.setattr(MARKERS, "phase", "startup")
    monkeypatch.setattr(lawkit.capture, "STEPS", lawkit.capture._Steps())
    yield


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    """A workspace in the working directory, with an engine to digest; its digest."""
    (tmp_path / "lawkit.toml").write_text('laws = "laws"\n\n[digest]\nroot = "engine"\n'
                                          'packages = ["atom"]\n')
    (tmp_path / "engine" / "atom").mkdir(parents=True)
    (tmp_path / "engine" / "atom" / "__init__.py").write_text("x = 1\n")
    return current_digest(load_workspace())
