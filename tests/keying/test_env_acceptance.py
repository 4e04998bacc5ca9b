"""The environment's target and its acceptance, one spelling in every command (docs/commands.md,
docs/footprints.md "The environment"): `--env current|FILE` names the target, `rekey
--accept-env --why TEXT` accepts it; each law is judged on the footprint of its own fit; and
under a policy, `review` finds a change that would vouch for its own environment.

The laws are `testing.environments`': `torchlike` ran at start-up and in steps inside
`sample_s`, `tokenlike` only at start-up, `idle` never.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from lawkit.footprint.document import DistRecord
from testing.cli import invoke as lawkit
from testing.environments import (
    BASE,
    DIGEST,
    LAWS,
    EnvRepo,
    footprint_bytes,
    make_env_repo,
    write_lock,
)
from testing.lawrepo import body_of, commit, init_repo, law_text

DISTS = {
    "torchlike": DistRecord("2.11.0", "r1", None, ("startup", "steps"), ("sample_s",),
                            ("sample_s",)),
    "tokenlike": DistRecord("0.20.0", "r2", None, ("startup",), (), ("*",)),
    "idle": DistRecord("1.0", "r3", None, (), (), ()),
}
LOCK = {"torchlike": "2.11.0", "tokenlike": "0.20.0", "idle": "1.0"}
SAMPLING, SCHEDULING = "sampling (sample_s)", "scheduling (schedule_s)"


@pytest.fixture
def repo(env_repo: EnvRepo) -> Path:
    """The laws fitted with their footprint and committed; the lock beside them, uncommitted."""
    return env_repo(DISTS, LOCK)


def test_env_without_a_value_says_in_one_line_to_use_accept_env(repo: Path) -> None:
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    before = (repo / "laws/host.yaml").read_bytes()
    result = lawkit("rekey", "--env", "--why", "torch upgrade")
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        "lawkit: error: --env names the target environment (--env current|FILE); to accept it "
        "as the laws' new baseline, use lawkit rekey --accept-env --why TEXT"]
    assert (repo / "laws/host.yaml").read_bytes() == before


def test_rekey_env_names_the_target_and_target_env_stays_its_alias(repo: Path) -> None:
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    for flag in ("--env", "--target-env"):
        result = lawkit("rekey", "--to", "0123abcd", flag, "requirements.txt", "--why", "w",
                        "--dry-run", "--json")
        assert result.exit_code == 0, result.output
        laws = {f'{law["name"]} ({law["target"]})': law["verdict"]
                for law in json.loads(result.stdout)["laws"]}
        assert laws == {SAMPLING: "steps", SCHEDULING: "untouched"}, flag


def test_check_fix_after_check_env_file_names_that_file_and_makes_check_pass(repo: Path) -> None:
    """The fix line after `check --env FILE` named `rekey --env`, which read the config's
    environment instead (none here): `nothing to rekey`, and check kept failing."""
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    result = lawkit("check", "--env", "requirements.txt")
    assert result.exit_code == 1, result.output
    fix = result.stdout.splitlines()[-1]
    assert fix == ("fix: lawkit fit CAPTURE... --out laws/host.yaml, or if the laws still hold: "
                   "lawkit rekey --accept-env --env requirements.txt --why TEXT laws/host.yaml")
    args = fix.split("if the laws still hold: lawkit ", 1)[1].split()
    args[args.index("TEXT")] = "torch 2.12 moves no host time"
    done = lawkit(*args)
    assert done.exit_code == 0, done.output
    assert "accepted the environment requirements.txt in 1 law file" in done.stdout
    assert lawkit("check", "--env", "requirements.txt").exit_code == 0


def test_the_config_s_environment_gives_a_fix_that_names_it_and_works(repo: Path) -> None:
    config = repo / "lawkit.toml"
    config.write_text('environment = "requirements.txt"\n' + config.read_text())
    write_lock(repo, {**LOCK, "tokenlike": "0.21.0"})
    fix = lawkit("check").stdout.splitlines()[-1]
    assert fix.endswith("lawkit rekey --accept-env --env requirements.txt --why TEXT "
                        "laws/host.yaml")
    assert lawkit("rekey", "--accept-env", "--why", "tokenizer").exit_code == 0
    assert lawkit("check").exit_code == 0


def test_under_a_policy_that_refuses_it_the_fix_names_only_the_refit(repo: Path) -> None:
    config = repo / "lawkit.toml"
    config.write_text(config.read_text() + '\n[rekey]\nrequire = "startup"\n')
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    fix = lawkit("check", "--env", "requirements.txt").stdout.splitlines()[-1]
    assert fix == "fix: lawkit fit CAPTURE... --out laws/host.yaml"


def test_accept_env_judges_under_the_policy_only_the_files_it_edits(repo: Path) -> None:
    """A law file fitted without a footprint (unknown, which the policy refuses) beside the
    one accepted: as a re-key, accepting judges only the files it writes; it refused them all."""
    config = repo / "lawkit.toml"
    config.write_text(config.read_text() + '\n[rekey]\nrequire = "startup"\n')
    other = repo / "laws/other.yaml"
    other.write_text(law_text(DIGEST, "b"))
    before = other.read_bytes()
    write_lock(repo, {**LOCK, "tokenlike": "0.21.0"})  # ran only at start-up: startup
    done = lawkit("rekey", "--accept-env", "--env", "requirements.txt", "--why", "w")
    assert done.exit_code == 0, done.output
    assert "accepted the environment in laws/host.yaml: tokenlike 0.20.0 -> 0.21.0" in done.stdout
    assert other.read_bytes() == before
    assert lawkit("check", "--env", "requirements.txt").exit_code == 0


def test_accept_env_refuses_a_malformed_law_file_and_writes_nothing(repo: Path) -> None:
    """A law file that is not YAML was counted as already at the environment, exit 0."""
    (repo / "laws/broken.yaml").write_text("host: [\n")
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    before = (repo / "laws/host.yaml").read_bytes()
    result = lawkit("rekey", "--accept-env", "--env", "requirements.txt", "--why", "w")
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("lawkit: error: laws/broken.yaml"), result.stderr
    assert (repo / "laws/host.yaml").read_bytes() == before


def two_footprints(root: Path) -> Path:
    """Sampling fitted with a footprint in which torchlike never ran, then scheduling with one
    in which it ran in steps with no region open: the file's first footprint is sampling's."""
    first = footprint_bytes({"torchlike": DistRecord("2.11.0", "r1", None, (), (), ())})
    second = footprint_bytes({"torchlike": DistRecord("2.11.0", "r1", None, ("steps",),
                                                      ("*",), ())})
    fits = [("fit", {"digest": DIGEST, "at": "2026-11-10T09:12:44Z", "records": 100,
                     "body": body_of(LAWS), "laws": [law["name"]], "captures": [],
                     "footprint": {"path": path, "sha256": hashlib.sha256(raw).hexdigest()}})
            for law, path, raw in zip(LAWS, ("fp1.json", "fp2.json"), (first, second),
                                      strict=True)]
    init_repo(root)
    commit(root, {**BASE, "fp1.json": first, "fp2.json": second,
                  "laws/host.yaml": law_text(DIGEST, "a", laws=LAWS, provenance=fits)}, "fit")
    write_lock(root, {"torchlike": "2.12.0"})
    return root


def test_check_and_accept_env_judge_each_law_on_its_own_footprint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Both took the file's first footprint's environment: torchlike never ran there, so
    check passed and rekey --env had nothing to accept, while the scheduling law's own
    footprint ran it in every region."""
    monkeypatch.chdir(two_footprints(tmp_path / "repo"))
    result = lawkit("check", "--env", "requirements.txt")
    assert result.exit_code == 1, result.output
    problem = result.stdout.splitlines()[0]
    assert problem.startswith("laws/host.yaml: environment: changed  dist torchlike 2.11.0 -> "
                              "2.12.0  ran in steps")
    assert problem.endswith(f": {SCHEDULING} steps")
    done = lawkit("rekey", "--accept-env", "--env", "requirements.txt", "--why", "w")
    assert done.exit_code == 0, done.output
    assert "accepted the environment in laws/host.yaml: torchlike 2.11.0 -> 2.12.0" in \
        done.stdout
    assert lawkit("check", "--env", "requirements.txt").exit_code == 0


def findings_of(*args: str) -> list[dict[str, str]]:
    result = lawkit("review", "--base", "HEAD~1", "--require", "untouched", "--json", *args)
    return [f for f in json.loads(result.stdout)["findings"] if f["kind"] == "environment"]


@pytest.fixture
def pinned(repo: Path) -> Path:
    """The config names the lock as the environment, both committed, then a commit that moves
    nothing: a review of the next change has a base where all is untouched."""
    config = repo / "lawkit.toml"
    config.write_text('environment = "requirements.txt"\n' + config.read_text())
    commit(repo, {}, "the environment pinned")
    commit(repo, {"notes.txt": "nothing\n"}, "a note")
    assert findings_of() == []
    return repo


def test_a_change_that_edits_the_lock_the_config_names_is_a_finding(pinned: Path) -> None:
    write_lock(pinned, {**LOCK, "idle": "9.9"})  # a distribution that never ran: no verdict moves
    commit(pinned, {}, "bump idle")
    found = findings_of()
    assert [f["path"] for f in found] == ["requirements.txt"], found
    assert "the change edits requirements.txt, the environment the config names" in \
        found[0]["message"]


@pytest.mark.parametrize(("config", "field"), [
    ("", "environment"), ('environment = "current"\n', "environment"),
    ('environment = "requirements.txt"\npython = "3.12.1"\n', "python")])
def test_a_change_that_deletes_or_re_points_the_environment_is_a_finding(
        pinned: Path, config: str, field: str) -> None:
    text = (pinned / "lawkit.toml").read_text().replace('environment = "requirements.txt"\n', "")
    commit(pinned, {"lawkit.toml": config + text}, "the environment moved")
    found = findings_of("--env", "requirements.txt")
    assert any(f"edits the workspace config's {field}" in f["message"] for f in found), found


def test_a_change_that_carries_its_own_environment_acceptance_is_a_finding(
        pinned: Path) -> None:
    write_lock(pinned, {**LOCK, "idle": "9.9"})
    commit(pinned, {}, "bump idle")
    write_lock(pinned, {**LOCK, "idle": "9.9", "torchlike": "2.12.0"})
    assert lawkit("rekey", "--accept-env", "--why", "torch").exit_code == 0
    commit(pinned, {}, "torch upgrade, accepted in the same change")
    found = findings_of()
    assert any(f["path"] == "laws/host.yaml" and "appends a rekey entry accepting an "
               "environment" in f["message"] for f in found), found


def test_footprint_diff_says_it_compares_the_footprint_as_recorded_and_names_check(
        repo: Path) -> None:
    """`footprint diff` still said steps after rekey --accept-env accepted the difference, while
    check passed, and said nothing of why."""
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    assert lawkit("rekey", "--accept-env", "--env", "requirements.txt", "--why", "w").exit_code == 0
    assert lawkit("check", "--env", "requirements.txt").exit_code == 0
    diffed = lawkit("footprint", "diff", "fp.json", "--env", "requirements.txt")
    assert diffed.exit_code == 1
    assert diffed.stderr.splitlines() == [
        "note: this compares the environment the footprint recorded, not the baselines law "
        "files accepted (rekey --accept-env): lawkit check judges the law files"]


def test_check_json_lists_each_file_s_verdict_and_its_laws(repo: Path) -> None:
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    doc = json.loads(lawkit("check", "--json", "--env", "requirements.txt").stdout)
    assert doc["verdicts"]["laws/host.yaml"]["verdict"] == "steps"
    assert {f'{law["name"]} ({law["target"]})': law["verdict"]
            for law in doc["verdicts"]["laws/host.yaml"]["laws"]} == {
        SAMPLING: "steps", SCHEDULING: "untouched"}


def test_a_distribution_imported_at_start_up_with_no_region_open_says_it_moves_every_law(
        repo: Path) -> None:
    """Its line said only `(regions sample_s)` while every other law read startup."""
    (repo / "fp2.json").write_bytes(footprint_bytes({
        "torchlike": DistRecord("2.11.0", "r1", None, ("startup", "steps"), ("sample_s",),
                                ("*",))}))
    write_lock(repo, {**LOCK, "torchlike": "2.12.0"})
    text = lawkit("footprint", "diff", "fp.json", "--env", "requirements.txt").stdout
    assert ("changed  dist torchlike 2.11.0 -> 2.12.0  ran at start-up and in steps (regions "
            "sample_s)") in text.splitlines()  # its start-up run was inside sample_s
    moved = lawkit("footprint", "diff", "fp2.json", "--env", "requirements.txt")
    assert ("changed  dist torchlike 2.11.0 -> 2.12.0  ran at start-up and in steps (regions "
            "sample_s); at start-up with no region open: every law") in \
        moved.stdout.splitlines(), moved.output


def test_review_holds_a_change_that_relaxes_the_policy_to_the_stricter_one(
        pinned: Path) -> None:
    config = pinned / "lawkit.toml"
    commit(pinned, {"lawkit.toml": config.read_text() + '\n[rekey]\nrequire = "untouched"\n'},
           "the untouched policy")
    commit(pinned, {"lawkit.toml": config.read_text().replace('"untouched"', '"startup"')},
           "relaxed to startup")
    write_lock(pinned, {**LOCK, "tokenlike": "0.21.0"})  # every law startup
    result = lawkit("review", "--base", "HEAD~1", "--json")
    found = json.loads(result.stdout)["findings"]
    assert result.exit_code == 1 and found, result.output
    assert all(f["message"].startswith('[rekey] require = "untouched" (lawkit.toml): ')
               for f in found), found
    assert lawkit("review", "--base", "HEAD~1", "--require", "startup").exit_code == 0


def test_check_and_rekey_give_a_law_one_verdict_where_code_from_no_distribution_ran(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """check said startup and rekey --require untouched unknown, for one change: only the
    latter counted the code no target pins."""
    root = tmp_path / "repo"
    make_env_repo(root, DISTS, LOCK)
    raw = footprint_bytes(DISTS, ("/opt/tools/stepper.py",))
    text = (root / "laws/host.yaml").read_text()
    old = json.loads(json.dumps(hashlib.sha256((root / "fp.json").read_bytes()).hexdigest()))
    commit(root, {"fp.json": raw, "laws/host.yaml": text.replace(
        old, hashlib.sha256(raw).hexdigest())}, "a footprint with code from no distribution")
    monkeypatch.chdir(root)
    write_lock(root, {**LOCK, "tokenlike": "0.21.0"})
    checked = json.loads(lawkit("check", "--json", "--env", "requirements.txt").stdout)
    laws = {f'{law["name"]} ({law["target"]})': law["verdict"]
            for law in checked["verdicts"]["laws/host.yaml"]["laws"]}
    refused = lawkit("rekey", "--to", "0123abcd", "--why", "w", "--env", "requirements.txt",
                     "--require", "untouched")
    assert laws == {SAMPLING: "unknown", SCHEDULING: "unknown"}
    assert f"{SAMPLING} unknown, {SCHEDULING} unknown" in refused.stderr, refused.output
    assert "code from no distribution ran: /opt/tools/stepper.py" in refused.stderr
