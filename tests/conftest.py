"""Fixtures every test shares: its own temp folder, $HOME and git, and the usual workspaces.

Plain helpers (no fixture) live in testing/ (testing/__init__.py says which module holds
what); each wing's own fixtures in tests/<wing>/conftest.py. The slowest modules run first,
shared out between the xdist workers (`pytest_collection_modifyitems`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from lawkit.config import Workspace
from lawkit.footprint.document import DistRecord
from testing.environments import EnvRepo, make_env_repo
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


@pytest.fixture
def env_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> EnvRepo:
    """Makes `testing.environments.make_env_repo`'s repository (its footprint naming the given
    distributions, the lock pinning the given versions) in the test's folder, and works in it."""
    def make(dists: Mapping[str, DistRecord], pins: Mapping[str, str]) -> Path:
        root = make_env_repo(tmp_path / "repo", dists, pins)
        monkeypatch.chdir(root)
        return root
    return make


# The modules that take longest, with their seconds on a loaded 2-core machine (bash scripts/test
# --durations=0, setup and calls summed); a module left out only runs later. Longest first, so
# that none of them starts last while the other worker has nothing left to do.
SLOW_MODULES = {
    "tests/cli/test_precommit_hook.py": 36,  # pre-commit builds its environment: pip
    "tests/reliability/test_crashes.py": 30,
    "tests/test_readme_tutorial.py": 30,
    "tests/reliability/test_hostile_files.py": 26,
    "tests/capture/test_capture.py": 22,
    "tests/fitting/test_solve.py": 20,
    "tests/cli/test_light_imports.py": 20,
    "tests/fitting/test_dask_fit.py": 20,
    "tests/footprint/test_footprint_review.py": 18,
    "tests/footprint/test_recorder.py": 18,
    "tests/footprint/test_wrappers.py": 17,
    "tests/cli/test_core_install.py": 16,  # pip installs the core into a venv
    "tests/fitting/test_spill.py": 14,
    "tests/fitting/test_streaming.py": 10,
    "tests/fitting/test_crossval.py": 10,
    "tests/reliability/test_fuzz.py": 10,
    "tests/test_code_quality.py": 5,  # ruff and mypy over the repository
}


@pytest.hookimpl(trylast=True)  # after `-m` deselects: the count is the one xdist shares out
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The SLOW_MODULES first, each whole (its module fixtures built once), shared out between
    the xdist workers by their seconds: xdist's load scheduler sends each worker in turn a first
    chunk of consecutive tests, a quarter of its share (xdist.scheduler.load), so each worker's
    slow modules go at the start of its chunk; later tests go to whichever worker runs short."""
    modules: dict[str, list[pytest.Item]] = {}
    rest = []
    for item in items:
        name = item.nodeid.split("::", 1)[0]
        if name in SLOW_MODULES:
            modules.setdefault(name, []).append(item)
        else:
            rest.append(item)
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    lanes: list[list[pytest.Item]] = [[] for _ in range(workers)]
    seconds = [0] * workers
    for name in sorted(modules, key=lambda n: -SLOW_MODULES[n]):
        least = seconds.index(min(seconds))
        lanes[least] += modules[name]
        seconds[least] += SLOW_MODULES[name]
    chunk = max(len(items) // workers // 4, 2)
    order: list[pytest.Item] = []
    for lane in lanes:
        fill = max(chunk - len(lane), 0) if len(lanes) > 1 else 0
        order += lane + rest[:fill]
        rest = rest[fill:]
    items[:] = order + rest
