"""The environment in the footprint (docs/footprints.md, "The environment"): a distribution that
ran and differs in the target counts like a changed unit in the regions it ran in, the same in
`footprint diff`, `check`, `rekey` and `review`; one that never ran is ignored; a Python that
differs counts as steps for every law; with no target set the environment is not compared and
the reports say so in one line.

The footprint is written by hand, as the recorder writes it: `torchlike` ran in steps only in
the sampler's region, `tokenlike` only at start-up, `idle` never (a listed distribution with no
phases), `native` with no region open.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lawkit.footprint.document import DistRecord
from testing.cli import invoke as lawkit
from testing.environments import EnvRepo, footprint_bytes, write_lock

DISTS = {
    "torchlike": DistRecord("2.11.0", "r1", None, ("startup", "steps"), ("sample_s",),
                            ("sample_s",)),
    "tokenlike": DistRecord("0.20.0", "r2", None, ("startup",), (), ("*",)),
    "idle": DistRecord("1.0", "r3", None, (), (), ()),
    "native": DistRecord("5.0", "r4", None, ("startup", "steps"), ("*",), ("*",)),
}
LOCK = {"torchlike": "2.11.0", "tokenlike": "0.20.0", "idle": "1.0", "native": "5.0"}


def lock(root: Path, **versions: str) -> None:
    write_lock(root, {**LOCK, **versions})


@pytest.fixture
def repo(env_repo: EnvRepo) -> Path:
    """Laws fitted with a footprint that recorded its environment, committed."""
    return env_repo(DISTS, LOCK)


def regions_of(*args: str) -> tuple[int, dict[str, str], dict[str, Any]]:
    result = lawkit("footprint", "diff", "fp.json", "--json", *args)
    doc = json.loads(result.stdout)
    return result.exit_code, doc["regions"], doc


def test_a_version_that_ran_only_in_one_region_moves_only_that_regions_laws(repo: Path) -> None:
    lock(repo, torchlike="2.12.0")
    code, regions, doc = regions_of("--env", "requirements.txt")
    assert code == 1
    assert regions == {"sample_s": "steps", "schedule_s": "untouched"}
    assert [c["name"] for c in doc["environment"]["changes"]] == ["torchlike"]
    text = lawkit("footprint", "diff", "fp.json", "--env", "requirements.txt").stdout
    assert ("changed  dist torchlike 2.11.0 -> 2.12.0  ran at start-up and in steps "
            "(regions sample_s)") in text.splitlines()


def test_a_distribution_that_never_ran_moves_nothing(repo: Path) -> None:
    lock(repo, idle="9.9")
    code, regions, doc = regions_of("--env", "requirements.txt")
    assert (code, doc["environment"]["changes"]) == (0, [])
    assert regions == {"sample_s": "untouched", "schedule_s": "untouched"}


def test_startup_only_and_no_region_open(repo: Path) -> None:
    lock(repo, tokenlike="0.21.0")
    assert regions_of("--env", "requirements.txt")[1] == {"sample_s": "startup",
                                                         "schedule_s": "startup"}
    lock(repo, native="6.0")
    assert regions_of("--env", "requirements.txt")[1] == {"sample_s": "steps",
                                                         "schedule_s": "steps"}


def test_absent_from_the_target_counts_as_changed(repo: Path) -> None:
    (repo / "requirements.txt").write_text("tokenlike===0.20.0\nnative===5.0\n")
    _code, regions, doc = regions_of("--env", "requirements.txt")
    assert regions["sample_s"] == "steps" and regions["schedule_s"] == "untouched"
    assert doc["environment"]["changes"][0]["kind"] == "absent"


def test_a_python_that_differs_moves_every_law(repo: Path) -> None:
    (repo / "lawkit.toml").write_text(_with_top(repo, 'python = "3.12.3"'))
    code, regions, _doc = regions_of()
    assert code == 1 and set(regions.values()) == {"steps"}
    text = lawkit("footprint", "diff", "fp.json").stdout
    assert "changed  python 3.12.1 -> 3.12.3  counts as steps for every law" in text


def test_the_config_names_the_default_target_and_without_it_reports_say_not_compared(
        repo: Path) -> None:
    lock(repo, torchlike="2.12.0")
    text = lawkit("footprint", "diff", "fp.json").stdout
    assert "environment: not compared" in text and "torchlike" not in text
    assert lawkit("footprint", "diff", "fp.json").exit_code == 0
    (repo / "lawkit.toml").write_text(_with_top(repo, 'environment = "requirements.txt"'))
    assert regions_of()[1]["sample_s"] == "steps"


def test_check_lists_each_difference_with_the_laws_it_moves(repo: Path) -> None:
    assert lawkit("check", "--env", "requirements.txt").exit_code == 0
    lock(repo, torchlike="2.12.0", tokenlike="0.21.0", idle="2.0")
    result = lawkit("check", "--env", "requirements.txt")
    assert result.exit_code == 1, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == ("laws/host.yaml: environment: changed  dist tokenlike 0.20.0 -> 0.21.0  "
                        "ran at start-up: sampling (sample_s) startup, scheduling (schedule_s) "
                        "startup")
    assert lines[1].startswith("laws/host.yaml: environment: changed  dist torchlike 2.11.0 -> "
                               "2.12.0") and lines[1].endswith(": sampling (sample_s) steps")
    assert "idle" not in result.stdout
    assert lines[-1] == ("fix: lawkit fit CAPTURE... --out laws/host.yaml, or if the laws still "
                         "hold: lawkit rekey --accept-env --env requirements.txt --why TEXT "
                         "laws/host.yaml")
    doc = json.loads(lawkit("check", "--env", "requirements.txt", "--json").stdout)
    assert [p["kind"] for p in doc["problems"]] == ["environment", "environment"]
    github = lawkit("check", "--env", "requirements.txt", "--format", "github").stdout
    assert github.startswith("::error file=laws/host.yaml")


def test_a_malformed_lock_file_is_exit_2_naming_it(repo: Path) -> None:
    (repo / "requirements.txt").write_text("torchlike==2.12.0\n./some/path\n")
    result = lawkit("footprint", "diff", "fp.json", "--env", "requirements.txt")
    assert result.exit_code == 2 and "requirements.txt" in result.output


def test_bad_config_keys_are_exit_2_naming_the_key(repo: Path) -> None:
    (repo / "lawkit.toml").write_text(_with_top(repo, 'python = "3.12"'))
    result = lawkit("check")
    assert result.exit_code == 2 and "python" in result.output
    (repo / "lawkit.toml").write_text(_with_top(repo, "environment = 3"))
    result = lawkit("check")
    assert result.exit_code == 2 and "environment" in result.output


def _with_top(repo: Path, line: str) -> str:
    text = (repo / "lawkit.toml").read_text()
    return line + "\n" + text


def test_rekey_env_appends_one_entry_and_later_comparisons_start_from_it(repo: Path) -> None:
    (repo / "lawkit.toml").write_text(_with_top(repo, 'environment = "requirements.txt"'))
    lock(repo, torchlike="2.12.0")
    before = (repo / "laws/host.yaml").read_bytes()
    refused = lawkit("rekey", "--accept-env", "--why", "torch upgrade", "--require", "untouched")
    assert refused.exit_code == 2 and "sampling (sample_s) steps" in refused.output
    assert (repo / "laws/host.yaml").read_bytes() == before
    done = lawkit("rekey", "--accept-env", "--why", "torch upgrade, laws still hold")
    assert done.exit_code == 0, done.output
    assert "accepted the environment in laws/host.yaml: torchlike 2.11.0 -> 2.12.0" in done.stdout
    assert "laws/host.yaml  sampling (sample_s)  steps" in done.stdout
    after = (repo / "laws/host.yaml").read_bytes()
    added = after[len(before):].decode()
    assert after.startswith(before) and added.count("\n") == 1, added
    assert "env: {torchlike: [2.11.0, 2.12.0]}" in added.replace('"', "").replace("'", ""), added
    assert lawkit("check").exit_code == 0
    again = lawkit("rekey", "--accept-env", "--why", "again")
    assert again.exit_code == 0 and (repo / "laws/host.yaml").read_bytes() == after
    assert lawkit("footprint", "diff", "fp.json").exit_code == 1  # the footprint itself is old
    lock(repo, torchlike="2.13.0")
    assert "torchlike 2.12.0 -> 2.13.0" in lawkit("check").stdout


def test_a_footprint_recorded_without_its_environment_says_so_when_a_target_is_named(
        repo: Path) -> None:
    (repo / "old.json").write_bytes(footprint_bytes(DISTS, environment=False))
    assert "environment" not in lawkit("footprint", "diff", "old.json").stdout
    result = lawkit("footprint", "diff", "old.json", "--env", "requirements.txt")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == (
        "environment: not compared with requirements.txt: old.json was recorded without its "
        "environment; record it again with lawkit footprint record")
    shown = json.loads(lawkit("footprint", "diff", "old.json", "--env", "requirements.txt",
                              "--json").stdout)
    assert shown["environment"]["target"] is None  # not compared, said in --json too
    assert shown["environment"]["notes"] == [result.stdout.splitlines()[-1]]
