"""Fixtures of the review tests: one repository of every kind of law-file change per module."""

from __future__ import annotations

import pytest

from testing.lawrepo import Scenario, build_scenario


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """The review scenario (testing.lawrepo.build_scenario), built once for the module."""
    return build_scenario(tmp_path_factory.mktemp("review") / "repo")


@pytest.fixture
def in_repo(scenario: Scenario, monkeypatch: pytest.MonkeyPatch) -> Scenario:
    """The scenario, as the working directory."""
    monkeypatch.chdir(scenario.repo)
    return scenario

