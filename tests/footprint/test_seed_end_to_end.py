"""The shape of the engine the seed comes from, end to end: the engine's sampler region
calls a helper distribution installed editable (as ROCm/ATOM installs aiter) and reads an
environment variable; its footprint is recorded for real, its two laws (the sampler's and the
scheduler's) are fitted on it, and the helper, the variable and the engine then change.
Against ``current``, each change moves exactly the laws whose regions ran what changed, through
``footprint diff``, ``check``, ``rekey --require untouched``, ``review --require untouched``
and ``review --format github``."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from testing.installs import measured_env, write_project
from testing.lawrepo import commit, fit_entry, git, init_repo, law_text
from testing.wheels import make_venv, pip, site_packages

pytestmark = pytest.mark.skipif(sys.version_info < (3, 12),
                                reason="units of dependencies by region: sys.monitoring")

HELPER = '''def pick(logits, mode):
    if mode == "greedy":
        return max(logits)
    return logits[0]


def warm():
    return 0
'''
ENGINE = {
    "atom/__init__.py": "",
    "atom/sched.py": "def schedule(queue):\n    return queue[:8]\n",
    "atom/sample.py": ("import os\n\nimport helper.core\n\n\ndef sample(logits):\n"
                       "    mode = os.getenv(\"ATOM_SAMPLER_MODE\", \"greedy\")\n"
                       "    return helper.core.pick(logits, mode)\n"),
}
HARNESS = """
import lawkit.footprint as fp
from atom.sample import sample
from atom.sched import schedule

fp.phase("steps")
for _ in range(3):
    with fp.region("schedule_s"):
        schedule([3, 1, 2])
    with fp.region("sample_s"):
        sample([0.1, 0.7, 0.2])
"""
LAWS = [{"name": "sampling", "target": "sample_s", "terms": {"1": 0.0011}},
        {"name": "scheduling", "target": "schedule_s", "terms": {"1": 0.0021}}]
CONFIG = 'laws = "laws"\nenvironment = "current"\n\n[digest]\nroot = "."\npackages = ["atom"]\n'
VARIABLE = {"ATOM_SAMPLER_MODE": "greedy"}


@dataclass
class Seed:
    """The engine's repository (fitted at ``fitted``, a comment edit re-keyed at HEAD), the
    helper's project folder, and the environment lawkit judges in (the helper's venv on its
    search path)."""

    repo: Path
    helper: Path
    fitted: str
    env: dict[str, str]

    def lawkit(self, *args: str, env: dict[str, str] | None = None
               ) -> subprocess.CompletedProcess[str]:
        """Run lawkit in the repository, judging against the venv the helper is installed in."""
        return subprocess.run([sys.executable, "-m", "lawkit", *args], cwd=self.repo,
                              env={**self.env, **(env or {})}, capture_output=True, text=True,
                              check=False)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Seed:
    """Record the harness in a venv with the helper installed editable, fit the two laws on
    that footprint, commit; then a comment in the scheduler, re-keyed, committed."""
    base = tmp_path_factory.mktemp("seed")
    python = make_venv(base / "venv")
    helper = write_project(base / "helper", "helper", "0.1", {"helper/core.py": HELPER})
    pip(python, "install", "-e", str(helper))
    repo = init_repo(base / "repo", CONFIG)
    commit(repo, {**ENGINE, "harness.py": HARNESS}, "the engine")
    recorded = subprocess.run([sys.executable, "-m", "lawkit", "footprint", "record", "--out",
                               "fp.json", "--", str(python), "harness.py"], cwd=repo,
                              env={**measured_env(), **VARIABLE}, capture_output=True, text=True,
                              check=False)
    assert recorded.returncode == 0, recorded.stderr
    raw = (repo / "fp.json").read_bytes()
    digest = json.loads(raw)["digest"]
    name, fit = fit_entry(digest, LAWS)
    fit = {**fit, "footprint": {"path": "fp.json", "sha256": hashlib.sha256(raw).hexdigest()}}
    fitted = commit(repo, {"laws/host.yaml": law_text(digest, "a", laws=LAWS,
                                                      provenance=[(name, fit)])}, "fitted")
    env = {**os.environ, **VARIABLE,
           "PYTHONPATH": os.pathsep.join([str(site_packages(base / "venv")),
                                          *filter(None, [os.environ.get("PYTHONPATH")])])}
    seed = Seed(repo, helper, fitted, env)
    (repo / "atom/sched.py").write_text("# keeps the first eight\n" + ENGINE["atom/sched.py"])
    rekeyed = seed.lawkit("rekey", "--why", "a comment", "--require", "untouched")
    assert rekeyed.returncode == 0, rekeyed.stdout + rekeyed.stderr
    commit(repo, {}, "a comment in the scheduler, re-keyed")
    return seed


@pytest.fixture
def seed(built: Seed) -> Iterator[Seed]:
    """The built seed, its helper as installed put back after the test."""
    try:
        yield built
    finally:
        (built.helper / "helper/core.py").write_text(HELPER)


def edit_helper(seed: Seed, old: str, new: str) -> None:
    """Edit the helper's installed source (an editable install: its project folder)."""
    path = seed.helper / "helper/core.py"
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


def regions(seed: Seed, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`footprint diff --env current --json`'s verdict per region."""
    result = seed.lawkit("footprint", "diff", "fp.json", "--env", "current", "--json", env=env)
    assert result.returncode in (0, 1), result.stderr
    doc: dict[str, Any] = json.loads(result.stdout)
    verdicts: dict[str, Any] = doc["regions"]
    return verdicts


def rekey_from_fitted(seed: Seed, env: dict[str, str] | None = None
                      ) -> subprocess.CompletedProcess[str]:
    """`rekey --require untouched --dry-run` of the law file as fitted (stale since the
    comment), the re-keyed one put back after."""
    git(seed.repo, "checkout", seed.fitted, "--", "laws/host.yaml")
    try:
        return seed.lawkit("rekey", "--dry-run", "--why", "a comment", "--require",
                           "untouched", env=env)
    finally:
        git(seed.repo, "checkout", "HEAD", "--", "laws/host.yaml")


def review(seed: Seed, *args: str, env: dict[str, str] | None = None
           ) -> subprocess.CompletedProcess[str]:
    """`review --base FITTED --require untouched` of the re-key commit."""
    return seed.lawkit("review", "--base", seed.fitted, "--require", "untouched", *args,
                       env=env)


def assert_all_untouched(seed: Seed) -> None:
    """Every command passes: both laws untouched."""
    assert regions(seed) == {"sample_s": "untouched", "schedule_s": "untouched"}
    check = seed.lawkit("check")
    assert check.returncode == 0, check.stdout + check.stderr
    rekey = rekey_from_fitted(seed)
    assert rekey.returncode == 0, rekey.stdout + rekey.stderr
    reviewed = review(seed)
    assert reviewed.returncode == 0, reviewed.stdout + reviewed.stderr


def assert_sampler_moved(seed: Seed, env: dict[str, str] | None = None) -> None:
    """The sampler's law is steps, the scheduler's untouched, in every command."""
    assert regions(seed, env) == {"sample_s": "steps", "schedule_s": "untouched"}
    check = seed.lawkit("check", env=env)
    assert check.returncode == 1, check.stdout + check.stderr
    rekey = rekey_from_fitted(seed, env)
    assert rekey.returncode == 2, rekey.stdout + rekey.stderr
    assert "1 law not untouched: sampling (sample_s) steps" in rekey.stderr
    assert "scheduling" not in rekey.stderr
    reviewed = review(seed, env=env)
    assert reviewed.returncode == 1, reviewed.stdout + reviewed.stderr
    assert "sampling" in reviewed.stdout
    github = review(seed, "--format", "github", env=env)
    assert github.returncode == 1
    errors = [line for line in github.stdout.splitlines() if line.startswith("::error")]
    assert errors and all("scheduling" not in line for line in errors), github.stdout
    assert any("sampling" in line for line in errors), github.stdout


def test_nothing_changed_is_untouched(seed: Seed) -> None:
    assert_all_untouched(seed)


def test_a_comment_in_the_helper_function_that_ran_is_layout_only(seed: Seed) -> None:
    edit_helper(seed, '    if mode == "greedy":\n', '    # the common case first\n'
                                                     '    if mode == "greedy":\n')
    assert_all_untouched(seed)


def test_an_edit_to_a_helper_function_that_never_ran_is_untouched(seed: Seed) -> None:
    edit_helper(seed, "def warm():\n    return 0\n", "def warm():\n    return 1\n")
    assert_all_untouched(seed)


def test_an_edit_to_the_helper_function_that_ran_moves_only_the_sampler(seed: Seed) -> None:
    edit_helper(seed, "return max(logits)", "return sorted(logits)[-1]")
    assert_sampler_moved(seed)


def test_the_variable_set_to_another_value_moves_only_the_sampler(seed: Seed) -> None:
    assert_sampler_moved(seed, {"ATOM_SAMPLER_MODE": "random"})
