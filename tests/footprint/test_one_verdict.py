"""One verdict for each law, everywhere: `check`, `footprint diff`, `rekey` and `review` give
the same per-law verdicts for the same change, by the rule of docs/footprints.md (start-up runs
narrowed to their regions only for units that also ran in steps).

The engine: a sampler whose `sample` ran in the warm-up and in steps, each time inside
`sample_s`; a scheduler whose `schedule` ran likewise inside `schedule_s`; a `setup` that ran
only at start-up, inside `sample_s`; the module bodies at start-up with no region open. The
footprint is written by hand, as the recorder writes it, and committed with the fit.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from testing.cli import invoke as lawkit
from testing.footprints import engine_footprint_bytes
from testing.lawrepo import (
    ENGINE,
    commit,
    commit_fitted_with_footprint,
    engine_digest,
    init_repo,
)

SAMPLER = {"atom/sampler.py": "def sample(logits):\n    return logits[0]\n\n\n"
                              "def setup(n):\n    return [0] * n\n"}
BASE = {**ENGINE, **SAMPLER}
OLD = engine_digest(BASE)
LAWS: list[dict[str, Any]] = [
    {"name": "sampling", "target": "sample_s", "terms": {"1": 0.0011}},
    {"name": "scheduling", "target": "schedule_s", "terms": {"1": 0.0021}},
    {"name": "whole step", "target": "step_s", "terms": {"1": 0.0051}},
]
RAN: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    # unit: (phases, regions in steps, regions at start-up)
    "sample": (("startup", "steps"), ("sample_s",), ("sample_s",)),
    "setup": (("startup",), (), ("sample_s",)),
    "schedule": (("startup", "steps"), ("schedule_s",), ("schedule_s",)),
    "<module>": (("startup",), (), ("*",)),
}
EDITS = {
    # a sampler edit that ran in the warm-up and in steps, only in the sampler's region
    "sample": ("return logits[0]", "return max(logits)"),
    # code that ran only at start-up, even inside a region, may set state every region reads
    "setup": ("return [0] * n", "return [1] * n"),
}
EXPECTED = {
    "sample": {"sampling": "steps", "scheduling": "untouched", "whole step": "steps"},
    "setup": {"sampling": "startup", "scheduling": "startup", "whole step": "startup"},
}


def footprint_bytes() -> bytes:
    return engine_footprint_bytes(BASE, OLD, RAN, regions=("sample_s", "schedule_s"))


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Laws fitted on OLD with the footprint, committed."""
    root = init_repo(tmp_path / "repo")
    commit_fitted_with_footprint(root, BASE, OLD, LAWS, footprint_bytes())
    monkeypatch.chdir(root)
    return root


def _by_name(laws: list[dict[str, Any]]) -> dict[str, str]:
    return {law["name"]: law["verdict"] for law in laws}


@pytest.mark.parametrize("unit", sorted(EDITS))
def test_check_footprint_diff_rekey_and_review_give_each_law_one_verdict(
        repo: Path, unit: str) -> None:
    old, new = EDITS[unit]
    path = repo / "atom/sampler.py"
    path.write_text(path.read_text().replace(old, new))
    base = commit(repo, {}, "an engine change")  # review's head; check and rekey: the work tree
    expected = EXPECTED[unit]

    checked = json.loads(lawkit("check", "--json").stdout)
    assert _by_name(checked["verdicts"]["laws/host.yaml"]["laws"]) == expected

    diffed = lawkit("footprint", "diff", "fp.json", "--json")
    assert diffed.exit_code == 1, diffed.output
    regions = json.loads(diffed.stdout)["regions"]
    assert {law["name"]: regions.get(law["target"], json.loads(diffed.stdout)["verdict"])
            for law in LAWS} == expected

    rekeyed = lawkit("rekey", "--why", "an engine change", "--dry-run", "--json")
    assert rekeyed.exit_code == 0, rekeyed.output
    assert _by_name(json.loads(rekeyed.stdout)["laws"]) == expected

    reviewed = lawkit("review", "--base", f"{base}~1", "--format", "json")
    assert _by_name(json.loads(reviewed.stdout)["laws"]) == expected

    # check's fix line names each law with its own verdict, as the others do: a start-up
    # change is re-keyed with --why if the person judges it cannot move the steps' time, or
    # refitted; a steps change refitted
    fix = lawkit("check").stdout.splitlines()[-1]
    worst = "steps" if "steps" in expected.values() else "startup"
    touched = ", ".join(f"{law['name']} ({law['target']}) {expected[law['name']]}"
                        for law in LAWS if expected[law["name"]] != "untouched")
    said = f"(footprint verdict {worst}: {touched})"
    assert fix == (f"fix: refit laws/host.yaml {said}: lawkit fit CAPTURE... --out "
                   "laws/host.yaml" if worst == "steps" else
                   f'fix: lawkit rekey --why "..." laws/host.yaml {said} if the start-up change '
                   "cannot move the steps' time (you judge), else refit: lawkit fit CAPTURE... "
                   "--out laws/host.yaml")


def test_a_start_up_change_is_re_keyed_as_check_s_fix_says_under_the_startup_policy(
        repo: Path) -> None:
    old, new = EDITS["setup"]
    path = repo / "atom/sampler.py"
    path.write_text(path.read_text().replace(old, new))
    config = repo / "lawkit.toml"
    config.write_text(config.read_text() + '\n[rekey]\nrequire = "startup"\n')
    fix = lawkit("check").stdout.splitlines()[-1]
    args = shlex.split(fix.removeprefix("fix: ").split(" (", 1)[0])
    assert args == ["lawkit", "rekey", "--why", "...", "laws/host.yaml"]
    done = lawkit(*args[1:3], "setup fills a buffer read by no step", *args[4:])
    assert done.exit_code == 0, done.output
    assert "warning" not in done.output
    assert lawkit("check").exit_code == 0
    # under the untouched policy the same change is refused, and the fix names the refit alone
    commit(repo, {}, "re-keyed")
    path.write_text(path.read_text().replace(new, "return [2] * n"))
    config.write_text(config.read_text().replace('"startup"', '"untouched"'))
    fix = lawkit("check").stdout.splitlines()[-1]
    assert fix.startswith("fix: refit laws/host.yaml (footprint verdict startup: ")
    refused = lawkit("rekey", "--why", "setup")
    assert refused.exit_code == 2, refused.output
    assert "re-key with --require startup --why TEXT (you judge), else refit" in refused.stderr


def test_a_re_key_over_a_steps_law_with_no_policy_warns_naming_it(repo: Path) -> None:
    old, new = EDITS["sample"]
    path = repo / "atom/sampler.py"
    path.write_text(path.read_text().replace(old, new))
    done = lawkit("rekey", "--why", "sampler edit")
    assert done.exit_code == 0, done.output
    warnings = [line for line in done.stdout.splitlines() if line.startswith("warning: ")]
    assert warnings == [
        "warning: re-keyed 2 laws whose verdict is steps (sampling (sample_s), whole step "
        "(step_s)): code their capture runs executed in steps changed, so they may no longer "
        "hold; refit them (lawkit fit CAPTURE... --out FILE), and set [rekey] require = "
        '"startup" in the config so that such a re-key is refused']


def test_a_docstring_added_to_a_step_function_moves_no_verdict_and_is_listed_as_layout_only(
        repo: Path) -> None:
    path = repo / "atom/sampler.py"
    path.write_text(path.read_text().replace(
        "def sample(logits):\n", 'def sample(logits):\n    """The first logit."""  # greedy\n\n'))
    assert lawkit("check").stdout.splitlines()[-1] == (
        'fix: lawkit rekey --why "..." (footprint verdict untouched: no code the captured runs '
        "executed changed)")
    diffed = lawkit("footprint", "diff", "fp.json", "--json")
    assert diffed.exit_code == 0, diffed.output
    assert json.loads(diffed.stdout)["units"] == [
        {"path": "atom/sampler.py", "unit": "sample", "change": "changed",
         "phases": ["startup", "steps"], "regions": ["sample_s"], "counts_as": "layout only",
         "layout_only": True}]
    rekeyed = lawkit("rekey", "--why", "a docstring", "--require", "untouched")
    assert rekeyed.exit_code == 0, rekeyed.output
    assert "  footprint verdict untouched: footprint fp.json, 1 unit changed: sample (ran at " \
        "start-up and in steps, layout only)" in rekeyed.stdout.splitlines()
    base = commit(repo, {}, "a docstring, the laws re-keyed")
    reviewed = lawkit("review", "--base", f"{base}~1", "--require", "untouched")
    assert reviewed.exit_code == 0, reviewed.output
    assert "      changed  atom/sampler.py  sample  ran at start-up and in steps: counts as " \
        "layout only" in reviewed.stdout.splitlines()
