"""`lawkit review` and the environment (docs/footprints.md, "The environment"): with a target
(`--env`, or the config's `environment`), a footprint's environment counts in each law's
verdict at head, and under `--require untouched` a law the environment moves is a finding that
names the law and the distribution, in every format.

The footprint is written by hand as the recorder writes it: `torchlike` ran in steps only in
the sampler's region, `idle` never.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.footprint.document import DistRecord
from testing.environments import EnvRepo, write_lock
from testing.lawrepo import commit

runner = CliRunner()

DISTS = {
    "torchlike": DistRecord("2.11.0", "r1", None, ("steps",), ("sample_s",), ()),
    "idle": DistRecord("1.0", "r3", None, (), (), ()),
}
MOVED = "changed  dist torchlike 2.11.0 -> 2.12.0  ran in steps (regions sample_s)"


def lock(root: Path, torchlike: str = "2.11.0", idle: str = "1.0") -> None:
    write_lock(root, {"torchlike": torchlike, "idle": idle})


@pytest.fixture
def repo(env_repo: EnvRepo) -> Path:
    """Laws fitted with a footprint that recorded its environment, then a change that leaves
    the engine and the laws as they are."""
    root = env_repo(DISTS, {"torchlike": "2.11.0", "idle": "1.0"})
    commit(root, {"notes.txt": "nothing that moves host time\n"}, "a note")
    return root


def review(*args: str) -> Any:
    return runner.invoke(app, ["review", "--base", "HEAD~1", "--require", "untouched", *args])


def test_a_distribution_that_ran_and_differs_is_a_finding_naming_the_law_and_it(
        repo: Path) -> None:
    assert review("--env", "requirements.txt").exit_code == 0
    lock(repo, idle="9.9")  # never ran: nothing moves
    assert review("--env", "requirements.txt").exit_code == 0
    lock(repo, torchlike="2.12.0")
    result = review("--env", "requirements.txt")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    findings = [line for line in lines if "in the environment requirements.txt" in line]
    assert len(findings) == 1, result.stdout
    assert "law sampling (sample_s) is steps" in findings[0] and MOVED in findings[0]
    assert "scheduling" not in findings[0]
    assert f"      {MOVED}" in lines  # under the footprint's verdict
    assert "laws/host.yaml  sampling (sample_s)  steps" in result.stdout
    assert "laws/host.yaml  scheduling (schedule_s)  untouched" in result.stdout
    # the engine's code moved nothing: no footprint finding beside the environment's
    assert "footprint verdict" not in "\n".join(f for f in lines if "--require" in f)


def test_json_github_and_markdown_name_the_law_and_the_distribution(repo: Path) -> None:
    lock(repo, torchlike="2.12.0")
    doc = json.loads(review("--env", "requirements.txt", "--json").stdout)
    found = [f for f in doc["findings"] if f["kind"] == "environment"]
    assert len(found) == 1 and found[0]["path"] == "laws/host.yaml"
    assert "sampling (sample_s)" in found[0]["message"] and "torchlike" in found[0]["message"]
    assert [f["kind"] for f in doc["findings"]] == ["environment"]
    assert doc["footprints"][0]["environment"]["changes"][0]["name"] == "torchlike"
    assert {law["name"]: law["verdict"] for law in doc["laws"]} == {
        "sampling": "steps", "scheduling": "untouched"}
    github = review("--env", "requirements.txt", "--format", "github").stdout
    error = next(line for line in github.splitlines() if line.startswith("::error"))
    assert "file=laws/host.yaml" in error and "torchlike" in error and "sampling" in error
    markdown = review("--env", "requirements.txt", "--format", "markdown").stdout
    assert markdown.startswith("❌")
    assert any("sampling (sample\\_s)" in line and "torchlike" in line
               for line in markdown.splitlines() if line.startswith("- ❌")), markdown


def test_the_config_names_the_default_target_and_without_one_nothing_is_compared(
        repo: Path) -> None:
    lock(repo, torchlike="2.12.0")
    result = review()
    assert result.exit_code == 0 and "torchlike" not in result.stdout
    config = (repo / "lawkit.toml").read_text()
    (repo / "lawkit.toml").write_text('environment = "requirements.txt"\n' + config)
    result = review()
    assert result.exit_code == 1 and "torchlike" in result.stdout
    assert review("--env", "current").exit_code == 1  # the Python differs: every law moves


def test_without_require_the_verdicts_show_the_environment_and_nothing_is_a_finding(
        repo: Path) -> None:
    lock(repo, torchlike="2.12.0")
    result = runner.invoke(app, ["review", "--base", "HEAD~1", "--env", "requirements.txt"])
    assert result.exit_code == 0, result.output
    assert f"      {MOVED}" in result.stdout.splitlines()


def test_a_malformed_lock_file_is_exit_2_naming_it(repo: Path) -> None:
    (repo / "requirements.txt").write_text("torchlike==2.12.0\n./some/path\n")
    result = review("--env", "requirements.txt")
    assert result.exit_code == 2 and "requirements.txt" in result.output
