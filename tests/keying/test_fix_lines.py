"""Every fix line `check` prints is a command that, run as printed (TEXT and "..." filled in),
makes the same `check` pass or does what it says (docs/commands.md, `lawkit check`): for a
stale digest, laws written before lawkit, laws edited by hand, and a stale file whose footprint
verdict is `untouched` or `startup` (a re-key the person judges). A refit (`steps`, or no
footprint under a policy) needs fresh captures: its line is asserted, not run. The
environment's fix lines are run in test_env_acceptance.py.
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest

from testing.cli import invoke as lawkit
from testing.footprints import engine_footprint_bytes
from testing.lawrepo import ENGINE, commit_fitted_with_footprint, engine_digest, init_repo
from testing.workspaces import make_workspace

WHY = "the change cannot move host time"


def commands(fix: str) -> list[list[str]]:
    """The commands of a fix line a person runs, in order, each as a shell splits it with its
    placeholders filled in; a refit (which needs fresh captures) is left out."""
    assert fix.startswith("fix: "), fix
    out = []
    for part in re.split(" && |; ", fix.removeprefix("fix: ")):
        # each part is a command, then what it rests on: `(footprint verdict ...)`, `if ...`,
        # or the refit that takes its place
        command = part.split(" (", 1)[0].split(" if ", 1)[0].split(", or ", 1)[0]
        args = [WHY if word in ("...", "TEXT") else word for word in shlex.split(command)]
        if args[:2] != ["lawkit", "fit"]:
            out.append(args)
    return out


def run_fix(*check_args: str) -> None:
    """Run every command the fix line of `check` names as a shell would (`&&` stops at a
    failure, `;` does not), then check again: it passes."""
    result = lawkit("check", *check_args)
    assert result.exit_code == 1, result.output
    fix = result.stdout.splitlines()[-1]
    todo = commands(fix)
    assert todo, result.stdout
    joins = re.findall(" && |; ", fix)
    for i, args in enumerate(todo):
        assert args[0] == "lawkit"
        done = lawkit(*args[1:])
        if i < len(joins) and joins[i] == "; ":
            continue
        assert done.exit_code == 0, (args, done.output)
    after = lawkit("check", *check_args)
    assert after.exit_code == 0, after.output


@pytest.fixture
def here(tmp_path: Path) -> Iterator[Path]:
    here = os.getcwd()
    os.chdir(tmp_path)
    yield tmp_path
    os.chdir(here)


def test_a_stale_digest_s_fix_re_keys_and_check_passes(here: Path) -> None:
    make_workspace(here, 2, stale=True)
    run_fix()


def test_laws_written_before_lawkit_are_adopted_then_re_keyed_by_the_fix(here: Path) -> None:
    make_workspace(here, 2, stale=True, provenance="none")
    run_fix()


def test_laws_edited_by_hand_are_kept_by_the_fix_s_adoption(here: Path) -> None:
    make_workspace(here, 1)
    path = here / "laws" / "cell00000.yaml"
    text = path.read_text()
    path.write_text(text.replace('"1": 0.0002174046967242549', '"1": 0.0003', 1))
    fix = lawkit("check").stdout.splitlines()[-1]
    assert fix == ("fix: lawkit fit CAPTURE... --out laws/cell00000.yaml, or to keep the edit: "
                   'lawkit rekey --adopt --why "..." laws/cell00000.yaml')
    done = lawkit(*[WHY if w == "..." else w for w in shlex.split(fix.split(", or to keep the "
                                                                             "edit: ")[1])][1:])
    assert done.exit_code == 0, done.output
    assert lawkit("check").exit_code == 0


SAMPLER = "def sample(logits):\n    return logits[0]\n\n\ndef setup(n):\n    return [0] * n\n"


@pytest.fixture
def fitted(here: Path) -> Path:
    """Laws fitted with a footprint, committed: `sample` ran in steps inside `sample_s`,
    `setup` only at start-up, the module bodies at start-up."""
    files = {**ENGINE, "atom/sampler.py": SAMPLER}
    digest = engine_digest(files)
    ran = {"sample": (("startup", "steps"), ("sample_s",), ("sample_s",)),
           "setup": (("startup",), (), ("sample_s",)), "<module>": (("startup",), (), ("*",))}
    laws = [{"name": "sampling", "target": "sample_s", "terms": {"1": 0.0011}}]
    commit_fitted_with_footprint(init_repo(here), files, digest, laws,
                                 engine_footprint_bytes(files, digest, ran,
                                                        regions=("sample_s",)))
    return here


@pytest.mark.parametrize(("old", "new", "verdict"), [
    ("return logits[0]", "return logits[0]  # the first", "untouched"),  # layout only
    ("return [0] * n", "return [1] * n", "startup"),  # ran only at start-up
])
def test_a_footprint_verdict_s_fix_run_as_printed_re_keys_and_check_passes(
        fitted: Path, old: str, new: str, verdict: str) -> None:
    path = fitted / "atom/sampler.py"
    path.write_text(path.read_text().replace(old, new))
    assert f"(footprint verdict {verdict}" in lawkit("check").stdout.splitlines()[-1]
    run_fix()


def test_under_a_policy_a_stale_file_with_no_footprint_verdict_is_named_for_a_refit(
        here: Path) -> None:
    """The fix named `lawkit rekey --why`, which the policy refuses for a law with no
    footprint (unknown)."""
    make_workspace(here, 1, stale=True)
    with (here / "lawkit.toml").open("a") as f:
        f.write('\n[rekey]\nrequire = "startup"\n')
    fix = lawkit("check").stdout.splitlines()[-1]
    assert fix == ("fix: refit laws/cell00000.yaml (no footprint verdict, which [rekey] require "
                   "needs for a re-key): lawkit fit CAPTURE... --footprint FOOTPRINT --out "
                   "laws/cell00000.yaml")
    refused = lawkit("rekey", "--why", WHY)
    assert refused.exit_code == 2 and "4 laws not untouched or startup" in refused.stderr
