"""Fixtures of the footprint tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from footprint_engine import copy_engine


@pytest.fixture
def engine(tmp_path: Path) -> Path:
    """A fresh copy of the stand-in engine (tests/footprint_engine) under the test's folder."""
    return copy_engine(tmp_path / "engine")
