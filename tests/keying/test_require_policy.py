"""One re-key policy (docs/footprints.md, "What a verdict lets you do"): `--require untouched`
or `startup`, else the workspace's `[rekey] require`, judged the same way by `rekey`, `fit`'s
kept laws and `review`; with no policy, a re-key over a `steps` law is let through with one
warning line naming the laws.

The laws are `testing.environments`': fitted with a footprint in which `torchlike` ran at
start-up and in steps inside `sample_s`, and `tokenlike` only at start-up. A lock file that
bumps `tokenlike` makes every law `startup`; one that bumps `torchlike` makes the sampling law
`steps` and the scheduling law `untouched`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lawkit.config import load_workspace
from lawkit.errors import ConfigError, LawkitError
from lawkit.footprint.document import DistRecord
from lawkit.footprint.require import Require
from testing.cli import invoke as lawkit
from testing.environments import EnvRepo, write_lock

DISTS = {
    "torchlike": DistRecord("2.11.0", "r1", None, ("startup", "steps"), ("sample_s",),
                            ("sample_s",)),
    "tokenlike": DistRecord("0.20.0", "r2", None, ("startup",), (), ("*",)),
}
LOCK = {"torchlike": "2.11.0", "tokenlike": "0.20.0"}
TO = "0123abcd"
SAMPLING, SCHEDULING = "sampling (sample_s)", "scheduling (schedule_s)"


@pytest.fixture
def repo(env_repo: EnvRepo) -> Path:
    """The laws fitted with their footprint, the config naming the lock file as the target."""
    root = env_repo(DISTS, LOCK)
    config = root / "lawkit.toml"
    config.write_text('environment = "requirements.txt"\n' + config.read_text())
    return root


def policy(root: Path, level: str) -> None:
    with (root / "lawkit.toml").open("a") as f:
        f.write(f'\n[rekey]\nrequire = "{level}"\n')


@pytest.mark.parametrize(("level", "passing"), [
    ("untouched", {"untouched"}), ("startup", {"untouched", "startup"})])
def test_each_level_passes_its_verdicts_and_fails_unknown_and_steps(level: str,
                                                                    passing: set[str]) -> None:
    require = Require.of(level)
    assert require is not None
    assert {v for v in ("untouched", "startup", "steps", "unknown") if require.passes(v)} == \
        passing


def test_a_require_that_is_no_level_is_refused_from_the_option_and_the_config(
        repo: Path) -> None:
    with pytest.raises(LawkitError, match="--require 'steps': expected one of untouched, "
                       "startup"):
        Require.of("steps")
    policy(repo, "steps")
    with pytest.raises(ConfigError, match=r'rekey\.require: expected "untouched" or "startup"'):
        load_workspace()
    result = lawkit("check")
    assert result.exit_code == 2 and len(result.output.splitlines()) == 1, result.output


def test_the_option_wins_over_the_config_and_the_config_is_named_in_messages(
        repo: Path) -> None:
    policy(repo, "startup")
    ws = load_workspace()
    assert Require.of(None, ws) == Require("startup", '[rekey] require = "startup" '
                                                      "(lawkit.toml)")
    assert Require.of("untouched", ws) == Require("untouched")


def test_pyproject_sets_the_policy_under_tool_lawkit_rekey(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.lawkit]\nlaws = "laws"\n\n'
                                             '[tool.lawkit.rekey]\nrequire = "untouched"\n')
    ws = load_workspace(cwd=tmp_path)
    assert Require.of(None, ws) == Require("untouched", '[tool.lawkit.rekey] require = '
                                                        '"untouched" (pyproject.toml)')


def test_a_startup_change_is_re_keyed_under_the_startup_policy_with_its_verdicts(
        repo: Path) -> None:
    policy(repo, "startup")
    write_lock(repo, {**LOCK, "tokenlike": "0.21.0"})
    result = lawkit("rekey", "--to", TO, "--why", "the tokenizer runs only at start-up")
    assert result.exit_code == 0, result.output
    assert f"  laws/host.yaml  {SAMPLING}  startup" in result.stdout.splitlines()
    assert "warning" not in result.output


def test_a_steps_law_is_refused_by_the_workspace_policy_naming_the_law_and_the_refit(
        repo: Path) -> None:
    policy(repo, "startup")
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    before = (repo / "laws/host.yaml").read_bytes()
    result = lawkit("rekey", "--to", TO, "--why", "torch upgrade")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith('lawkit: error: laws/host.yaml: [rekey] require = "startup" '
                                    "(lawkit.toml): 1 law not untouched or startup: "
                                    f"{SAMPLING} steps; ")
    assert "refit from captures taken there" in result.stderr
    assert result.stderr.rstrip().endswith("nothing was written")
    assert (repo / "laws/host.yaml").read_bytes() == before


def test_require_untouched_refuses_a_startup_law_naming_the_acceptance_of_that_target(
        repo: Path) -> None:
    write_lock(repo, {**LOCK, "tokenlike": "0.21.0"})
    result = lawkit("rekey", "--to", TO, "--why", "w", "--require", "untouched", "--env",
                    "requirements.txt")
    assert result.exit_code == 2, result.output
    assert f"2 laws not untouched: {SAMPLING} startup, {SCHEDULING} startup" in result.stderr
    assert "lawkit rekey --accept-env --env requirements.txt --why TEXT" in result.stderr


def test_without_a_policy_a_re_key_over_a_steps_law_warns_in_one_line_naming_it(
        repo: Path) -> None:
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    result = lawkit("rekey", "--to", TO, "--why", "torch upgrade")
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stdout.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and f"({SAMPLING})" in warnings[0], result.stdout
    assert SCHEDULING not in warnings[0] and 'require = "startup"' in warnings[0]


def test_fits_kept_laws_are_judged_with_the_environment_as_rekey_judges_them(
        repo: Path) -> None:
    """A kept law whose distribution changed passed fit's gate and failed rekey's: fit judged
    kept laws with no environment at all."""
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    rows = "".join(f"{TO},{b},{0.001 + 2e-5 * b:.9f}\n" for b in range(1, 25))
    (repo / "new.csv").write_text("atom,batch_size,other_s\n" + rows)
    before = (repo / "laws/host.yaml").read_bytes()
    rekeyed = lawkit("rekey", "--to", TO, "--why", "w", "--require", "untouched")
    fitted = lawkit("fit", "new.csv", "--formula", "other_s ~ 1 + batch_size", "--out",
                    "laws/host.yaml", "--why", "w", "--require", "untouched")
    assert (rekeyed.exit_code, fitted.exit_code) == (2, 2), fitted.output
    assert f"--require untouched: 1 law not untouched: {SAMPLING} steps" in rekeyed.stderr
    assert f"--require untouched: 1 kept law not untouched: {SAMPLING} steps" in fitted.stderr
    assert (repo / "laws/host.yaml").read_bytes() == before
    policy(repo, "startup")  # the workspace's policy holds for fit's kept laws too
    fitted = lawkit("fit", "new.csv", "--formula", "other_s ~ 1 + batch_size", "--out",
                    "laws/host.yaml", "--why", "w")
    assert fitted.exit_code == 2 and "1 kept law not untouched or startup" in fitted.stderr
