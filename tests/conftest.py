"""Shared fixtures: every test runs in its own temp folder with its own $HOME; the tests of a
module that share a module-scoped fixture run on one pytest-xdist worker."""

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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under pytest-xdist (`scripts/test` runs `-n auto --dist loadgroup`), keep the tests of a
    module that use a module- or session-scoped fixture on one worker: the fixture (a venv
    with lawkit installed, a recorded footprint, a git repository of scenarios) is then built
    once, not once per worker, and no two workers build the same one at the same time."""
    for item in items:
        info = getattr(item, "_fixtureinfo", None)
        if info is None or item.get_closest_marker("xdist_group") is not None:
            continue
        # baseid: "" for pytest's own fixtures (tmp_path's session-scoped factory is one)
        shared = any(definition.baseid and definition.scope in ("module", "package", "session")
                     for definitions in info.name2fixturedefs.values()
                     for definition in definitions)
        if shared:
            item.add_marker(pytest.mark.xdist_group(item.module.__name__ if item.module
                                                    else item.nodeid.split("::")[0]))
