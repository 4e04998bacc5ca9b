"""Fixtures every test shares: its own temp folder, $HOME and git, and the usual workspaces.

Plain helpers (no fixture) live in testing/ (testing/__init__.py says which module holds
what); each wing's own fixtures in tests/<wing>/conftest.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lawkit.config import Workspace
from testing.lawrepo import GIT_ENV, GIT_REPO_VARIABLES
from testing.workspaces import make_git_workspace, make_workspace


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep tests out of $HOME and the real repo: HOME and the working directory are temp, and
    git reads no user config and no repository but the test's own."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)  # check's cache goes under this HOME
    monkeypatch.delenv("LAWKIT_CACHE_DIR", raising=False)
    monkeypatch.delenv("CI", raising=False)  # where CI is set, check leaves its cache alone
    for name, value in GIT_ENV.items():
        monkeypatch.setenv(name, value)
    for name in GIT_REPO_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    """A workspace in the test's folder: lawkit.toml, the engine below engine/ and two law
    files keyed to its digest (testing.workspaces.make_workspace)."""
    return make_workspace(tmp_path, 2)


@pytest.fixture
def stale_workspace(tmp_path: Path) -> Workspace:
    """The `workspace`, its two law files keyed to an older digest that their fit explains."""
    return make_workspace(tmp_path, 2, stale=True)


@pytest.fixture
def git_workspace(tmp_path: Path) -> Path:
    """The `workspace` committed on branch main of a git repository in the test's folder."""
    return make_git_workspace(tmp_path)
