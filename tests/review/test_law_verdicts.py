"""A verdict for each law in `rekey` and `review`: a law takes its verdict
from the footprint's region named after its target, a file the worst of its laws', and `--require
untouched` names each law that is not `untouched`, in every format each command has.

The engine is test_review's with a sampler; the footprint is written by hand: the sampler's
`sample` ran in steps inside the region `sample_s`, the scheduler's `schedule` inside
`schedule_s`, the module bodies at start-up. A law file holds one law for each region and one
for a target that is no region. The change edits `sample`'s body.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lawkit.footprint.document import FileRecord, Footprint, UnitRecord, encode_footprint
from lawkit.footprint.units import units_of
from testing.cli import invoke as lawkit
from testing.lawrepo import (
    ENGINE,
    body_of,
    commit,
    engine_digest,
    git,
    init_repo,
    law_text,
)

SAMPLER = {"atom/sampler.py": "def sample(logits):\n    return logits[0]\n"}
SAMPLER_EDIT = {"atom/sampler.py": "def sample(logits):\n    return max(logits)\n"}
BASE_ENGINE = {**ENGINE, **SAMPLER}
OLD = engine_digest(BASE_ENGINE)
NEW = engine_digest(BASE_ENGINE, SAMPLER_EDIT)
LAWS: list[dict[str, Any]] = [
    {"name": "sampling", "target": "sample_s", "terms": {"1": 0.0011, "batch_size": 2.0e-05}},
    {"name": "scheduling", "target": "schedule_s", "terms": {"1": 0.0021}},
    {"name": "whole step", "target": "step_s", "terms": {"1": 0.0051}},
]
RAN = {"sample": (("steps",), ("sample_s",)), "schedule": (("steps",), ("schedule_s",)),
       "<module>": (("startup",), ())}


def footprint_bytes(files: Mapping[str, str | None]) -> bytes:
    """The footprint of the engine `files` with the runs of `RAN`."""
    engine = {k: v for k, v in files.items()
              if v is not None and k.startswith("atom/") and k.endswith(".py")}
    records = {rel: FileRecord(hashlib.sha256(text.encode()).hexdigest(), {
        u.qualname: UnitRecord(u.digest, *RAN.get(u.qualname, ((), ())))
        for u in units_of(text.encode())}) for rel, text in engine.items()}
    return encode_footprint(Footprint(
        key="atom", digest=engine_digest(engine), command=("python", "run.py"), processes=1,
        files=records, regions=("sample_s", "schedule_s")))


@dataclass(frozen=True)
class Repo:
    root: Path
    base: str


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    """Laws fitted on OLD with the footprint, then `sample` edited in the work tree."""
    root = init_repo(tmp_path / "repo")
    raw = footprint_bytes(BASE_ENGINE)
    fit = ("fit", {"digest": OLD, "at": "2026-11-10T09:12:44Z", "records": 100,
                   "body": body_of(LAWS), "captures": [],
                   "footprint": {"path": "fp.json", "sha256": hashlib.sha256(raw).hexdigest()}})
    base = commit(root, {**BASE_ENGINE, "fp.json": raw.decode(),
                         "laws/host.yaml": law_text(OLD, "a", laws=LAWS, provenance=[fit])},
                  "fitted with a footprint")
    for name, text in SAMPLER_EDIT.items():
        (root / name).write_text(text)
    here = os.getcwd()
    os.chdir(root)
    yield Repo(root, base)
    os.chdir(here)


EXPECTED = [("sampling", "sample_s", "sample_s", "steps"),
            ("scheduling", "schedule_s", "schedule_s", "untouched"),
            ("whole step", "step_s", None, "steps")]


def test_rekey_gives_each_law_its_region_s_verdict_as_text_and_json(repo: Repo) -> None:
    result = lawkit("rekey", "--why", "the sampler", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert [(law["file"], law["name"], law["target"], law["region"], law["verdict"])
            for law in doc["laws"]] == [("laws/host.yaml", *e) for e in EXPECTED]
    assert [v["verdict"] for v in doc["verdicts"]] == ["steps"]  # the worst of its laws'
    result = lawkit("rekey", "--why", "the sampler")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"rekeyed laws/host.yaml: {OLD} -> {NEW}"
    assert lines[1].startswith("  footprint verdict steps: footprint fp.json, ")
    assert lines[2:5] == ["  laws/host.yaml  sampling (sample_s)  steps",
                          "  laws/host.yaml  scheduling (schedule_s)  untouched",
                          "  laws/host.yaml  whole step (step_s)  steps"]


def test_rekey_require_untouched_refuses_naming_each_law_that_is_not(repo: Repo) -> None:
    before = (repo.root / "laws/host.yaml").read_bytes()
    result = lawkit("rekey", "--why", "the sampler", "--require", "untouched")
    assert result.exit_code == 2, result.output
    assert "laws/host.yaml: --require untouched: 2 laws not untouched: sampling (sample_s) " \
        "steps, whole step (step_s) steps; footprint verdict steps: " in result.stderr
    assert "scheduling" not in result.stderr
    assert "nothing was written" in result.stderr
    assert (repo.root / "laws/host.yaml").read_bytes() == before


def _reviewed(repo: Repo) -> None:
    assert lawkit("rekey", "--why", "the sampler").exit_code == 0
    git(repo.root, "commit", "-qam", "the sampler, laws re-keyed")


def test_review_gives_each_law_s_verdict_in_every_format(repo: Repo) -> None:
    _reviewed(repo)
    text = lawkit("review", "--base", repo.base)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    at = lines.index("law verdicts at head (3 laws):")
    assert lines[at + 1:at + 4] == ["  laws/host.yaml  sampling (sample_s)  steps",
                                    "  laws/host.yaml  scheduling (schedule_s)  untouched",
                                    "  laws/host.yaml  whole step (step_s)  steps"]
    doc = json.loads(lawkit("review", "--base", repo.base, "--format", "json").stdout)
    assert [(law["file"], law["name"], law["target"], law["region"], law["verdict"])
            for law in doc["laws"]] == [("laws/host.yaml", *e) for e in EXPECTED]
    markdown = lawkit("review", "--base", repo.base, "--format", "markdown").stdout
    assert "| `laws/host.yaml` | `scheduling` (`schedule_s`) | `schedule_s` | ✅ untouched |" \
        in markdown.splitlines()
    assert "| `laws/host.yaml` | `whole step` (`step_s`) | — | ❌ steps |" in markdown
    github = lawkit("review", "--base", repo.base, "--format", "github").stdout
    notice = next(line for line in github.splitlines() if "file=laws/host.yaml" in line)
    assert "%0Alaws/host.yaml  scheduling (schedule_s)  untouched" in notice
    assert "%0Achanged atom/sampler.py: 1 unit changed; changed sample" in github


def test_review_require_untouched_finds_each_law_that_is_not_naming_it(repo: Repo) -> None:
    _reviewed(repo)
    result = lawkit("review", "--base", repo.base, "--require", "untouched", "--format", "json")
    assert result.exit_code == 1, result.output
    found = [f for f in json.loads(result.stdout)["findings"] if f["kind"] == "footprint"]
    assert [(f["path"], f["message"].partition(": footprint verdict")[0]) for f in found] == [
        ("laws/host.yaml", "--require untouched: law sampling (sample_s) is steps"),
        ("laws/host.yaml", "--require untouched: law whole step (step_s) is steps")]


def test_rekey_require_untouched_names_the_laws_of_every_file_it_refuses(repo: Repo) -> None:
    (repo.root / "laws/plain.yaml").write_text(law_text(OLD, "b"))  # fitted without footprint
    result = lawkit("rekey", "--why", "the sampler", "--require", "untouched")
    assert result.exit_code == 2, result.output
    assert "laws/host.yaml: --require untouched: 4 laws not untouched: sampling (sample_s) " \
        "steps, whole step (step_s) steps; in laws/plain.yaml: prefill (host_s) unknown, " \
        "decode (host_s) unknown; footprint verdict steps: " in result.stderr


def test_check_s_fix_line_names_the_refit_with_the_verdict_and_the_laws_it_touches(
        repo: Repo) -> None:
    result = lawkit("check")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines() == [
        f"laws/host.yaml:6: stale: names {OLD}, the engine is at {NEW}",
        "fix: refit laws/host.yaml (footprint verdict steps: sampling (sample_s) steps, "
        "whole step (step_s) steps): lawkit fit CAPTURE... --out laws/host.yaml"]
    document = json.loads(lawkit("check", "--json").stdout)
    assert document["verdicts"] == {"laws/host.yaml": {"verdict": "steps", "laws": [
        {"file": "laws/host.yaml", "name": name, "target": target, "region": region,
         "verdict": verdict, "footprints": ["fp.json"]}
        for name, target, region, verdict in EXPECTED]}}


def test_check_s_fix_line_is_the_rekey_when_the_change_touches_nothing_that_ran(
        repo: Repo) -> None:
    (repo.root / "atom/sampler.py").write_text(SAMPLER["atom/sampler.py"])
    (repo.root / "atom/engine/step.py").write_text(
        ENGINE["atom/engine/step.py"].replace("return batch", "return batch[:1]"))
    result = lawkit("check")
    assert result.exit_code == 1, result.output
    assert result.stdout.splitlines()[-1] == (
        'fix: lawkit rekey --why "..." (footprint verdict untouched: no code the captured runs '
        "executed changed)")
