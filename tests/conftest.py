"""Shared fixtures: every test runs in its own temp folder with its own $HOME."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep tests out of $HOME and the real repo: HOME and the working directory are temp."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)  # check's cache goes under this HOME
    monkeypatch.delenv("LAWKIT_CACHE_DIR", raising=False)
    monkeypatch.delenv("CI", raising=False)  # where CI is set, check leaves its cache alone
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "lawkit tests")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "tests@lawkit.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "lawkit tests")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "tests@lawkit.invalid")
    monkeypatch.chdir(tmp_path)
