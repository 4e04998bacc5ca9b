"""Each law keeps its own evidence, and a refit's kept laws are re-keyed explicitly
(docs/footprints.md, docs/commands.md `lawkit fit --why`).

The engine is test_review's with a sampler. Two laws are fitted with the footprint of their
capture runs, where the scheduler's `schedule` ran in the region `schedule_s` and the sampler's
`sample` in `sample_s`. The sampler is then edited and its law alone refitted, with a footprint
of new runs in which the scheduler never ran. The scheduler's law, kept, is still judged on its
own footprint: an edit to `schedule` after the refit moves its verdict, wherever it is shown.
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
from lawkit.lawfiles import lawfile
from testing.cli import invoke as lawkit
from testing.lawrepo import ENGINE, commit, engine_digest, fit_entry, init_repo, law_text

SAMPLER = {"atom/sampler.py": "def sample(logits):\n    return logits[0]\n"}
SAMPLER_EDIT = {"atom/sampler.py": "def sample(logits):\n    return max(logits)\n"}
SCHED_EDIT = {"atom/sched.py": "def schedule(queue):\n    return queue[:4]\n"}
BASE = {**ENGINE, **SAMPLER}
OLD = engine_digest(BASE)
NEW = engine_digest(BASE, SAMPLER_EDIT)
RAN_BOTH = {"sample": (("steps",), ("sample_s",)), "schedule": (("steps",), ("schedule_s",)),
            "<module>": (("startup",), ())}
RAN_SAMPLER = {"sample": (("steps",), ("sample_s",)), "<module>": (("startup",), ())}
SAMPLER_FIT = ("--formula", "sample_s ~ 1 + batch_size")
WHY = "the sampler's law is refitted; the scheduler's does not read the sampler"


def footprint_bytes(files: Mapping[str, str | None],
                    ran: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]]) -> bytes:
    """The footprint of the engine `files` with the runs `ran` (unit -> phases, regions)."""
    engine = {k: v for k, v in files.items()
              if v is not None and k.startswith("atom/") and k.endswith(".py")}
    records = {rel: FileRecord(hashlib.sha256(text.encode()).hexdigest(), {
        u.qualname: UnitRecord(u.digest, *ran.get(u.qualname, ((), ())))
        for u in units_of(text.encode())}) for rel, text in engine.items()}
    return encode_footprint(Footprint(
        key="atom", digest=engine_digest(engine), command=("python", "run.py"), processes=1,
        files=records, regions=("sample_s", "schedule_s")))


def captures(digest: str, scale: float) -> str:
    rows = [f"{digest},{b},{scale * (0.001 + 2e-5 * b):.9f},{0.002 + 1e-6 * (b % 3):.9f}"
            for b in range(1, 25)]
    return "atom,batch_size,sample_s,schedule_s\n" + "\n".join(rows) + "\n"


@dataclass(frozen=True)
class Repo:
    root: Path
    fitted: str
    """The commit where both laws were fitted on OLD with the first footprint."""


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Repo]:
    """Both laws fitted on OLD with their footprint; then the sampler edited (NEW), with a new
    footprint and captures in the work tree, not yet refitted."""
    root = init_repo(tmp_path / "repo")
    here = os.getcwd()
    os.chdir(root)
    try:
        commit(root, {**BASE, "fp/old.json": footprint_bytes(BASE, RAN_BOTH),
                      "old.csv": captures(OLD, 1.0)}, "engine, captures and footprint")
        result = lawkit("fit", "old.csv", *SAMPLER_FIT, "--formula", "schedule_s ~ 1",
                        "--footprint", "fp/old.json", "--out", "laws/host.yaml")
        assert result.exit_code == 0, result.output
        fitted = commit(root, {}, "both laws fitted")
        engine = {**BASE, **SAMPLER_EDIT}
        commit(root, {**SAMPLER_EDIT, "fp/new.json": footprint_bytes(engine, RAN_SAMPLER),
                      "new.csv": captures(NEW, 1.1)}, "the sampler edited, captured again")
        yield Repo(root, fitted)
    finally:
        os.chdir(here)


def refit(*extra: str) -> Any:
    return lawkit("fit", "new.csv", *SAMPLER_FIT, "--footprint", "fp/new.json",
                  "--out", "laws/host.yaml", *extra)


def test_a_refit_that_keeps_laws_and_moves_the_key_is_refused_without_why(repo: Repo) -> None:
    before = (repo.root / "laws/host.yaml").read_bytes()
    result = refit()
    assert result.exit_code == 2, result.output
    assert f"laws/host.yaml: the fit keeps 1 law of the file (schedule_s), keyed to atom={OLD}, " \
        f"and moves its key to atom={NEW}: " in result.stderr
    assert "--why TEXT" in result.stderr and "nothing was written" in result.stderr
    assert "Traceback" not in result.output
    assert (repo.root / "laws/host.yaml").read_bytes() == before


def test_with_why_the_fit_entry_names_its_laws_and_a_rekey_entry_the_kept_ones(
        repo: Repo) -> None:
    result = refit("--why", WHY)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    at = lines.index(f"re-keyed 1 kept law: {OLD} -> {NEW}")
    assert lines[at + 1] == "  laws/host.yaml  schedule_s (schedule_s)  untouched"
    law_file = lawfile.load(repo.root / "laws/host.yaml")
    entries = law_file.host.provenance
    assert [e.kind for e in entries] == ["fit", "fit", "rekey"]
    assert entries[0].fit is not None and entries[0].fit.laws == ["sample_s", "schedule_s"]
    assert entries[1].fit is not None and entries[1].fit.laws == ["sample_s"]
    assert entries[2].rekey is not None
    assert (entries[2].rekey.from_, entries[2].rekey.to, entries[2].rekey.why,
            entries[2].rekey.laws) == (OLD, NEW, WHY, ["schedule_s"])
    assert law_file.host.key["atom"] == NEW
    assert lawkit("check").exit_code == 0
    doc = json.loads(lawkit("fit", "new.csv", *SAMPLER_FIT, "--footprint", "fp/new.json",
                            "--out", "laws/host.yaml", "--json").stdout)
    assert doc["rekey"] is None  # the key stays: nothing to re-key


def test_require_untouched_refuses_a_kept_law_the_change_touched(repo: Repo) -> None:
    (repo.root / "atom/sched.py").write_text(SCHED_EDIT["atom/sched.py"])
    before = (repo.root / "laws/host.yaml").read_bytes()
    result = refit("--why", WHY, "--require", "untouched")
    assert result.exit_code == 2, result.output
    assert "--require untouched: 1 kept law not untouched: schedule_s (schedule_s) steps" \
        in result.stderr
    assert (repo.root / "laws/host.yaml").read_bytes() == before


def _refitted(repo: Repo) -> str:
    assert refit("--why", WHY).exit_code == 0
    return commit(repo.root, {}, "the sampler's law refitted, the scheduler's re-keyed")


def test_a_scheduler_edit_after_the_refit_is_judged_on_the_kept_law_s_own_footprint(
        repo: Repo) -> None:
    refitted = _refitted(repo)
    (repo.root / "atom/sched.py").write_text(SCHED_EDIT["atom/sched.py"])
    before = (repo.root / "laws/host.yaml").read_bytes()
    result = lawkit("rekey", "--why", "a scheduler tweak", "--require", "untouched")
    assert result.exit_code == 2, result.output
    assert "--require untouched: 1 law not untouched: schedule_s (schedule_s) steps" \
        in result.stderr
    assert (repo.root / "laws/host.yaml").read_bytes() == before
    doc = json.loads(lawkit("rekey", "--why", "a scheduler tweak", "--dry-run", "--json").stdout)
    assert [(law["name"], law["verdict"]) for law in doc["laws"]] == [
        ("sample_s", "untouched"), ("schedule_s", "steps")]
    text = lawkit("rekey", "--why", "a scheduler tweak")
    assert text.exit_code == 0, text.output
    assert "  laws/host.yaml  schedule_s (schedule_s)  steps  (footprint fp/old.json)" \
        in text.stdout.splitlines()
    commit(repo.root, {}, "a scheduler tweak, re-keyed")
    assert lawkit("review", "--base", refitted).exit_code == 0
    review = lawkit("review", "--base", refitted, "--require", "untouched", "--format", "json")
    assert review.exit_code == 1, review.output
    found = [f for f in json.loads(review.stdout)["findings"] if f["kind"] == "footprint"]
    assert [f["message"].partition(": footprint verdict")[0] for f in found] == [
        "--require untouched: law schedule_s (schedule_s) is steps"]


def test_review_passes_a_refit_that_re_keys_its_kept_laws(repo: Repo) -> None:
    _refitted(repo)
    result = lawkit("review", "--base", repo.fitted, "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["findings"] == []


def test_review_flags_a_refit_that_re_keys_kept_laws_in_silence(repo: Repo) -> None:
    path = repo.root / "laws/host.yaml"
    _refitted(repo)
    text = path.read_text()
    silent = "".join(line for line in text.splitlines(keepends=True) if "{rekey:" not in line)
    commit(repo.root, {"laws/host.yaml": silent}, "refit, the kept law re-keyed in silence")
    result = lawkit("review", "--base", repo.fitted, "--format", "json")
    assert result.exit_code == 1, result.output
    found = [f for f in json.loads(result.stdout)["findings"] if f["kind"] == "refit-kept"]
    assert len(found) == 1, json.loads(result.stdout)["findings"]
    assert f"keeps schedule_s, keyed to {OLD}, and moves the key to {NEW} with no rekey" \
        in found[0]["message"]


def _legacy_fit(digest: str, footprint: str | None) -> tuple[str, dict[str, Any]]:
    """A `fit` entry as lawkit wrote it before fits named their laws."""
    kind, fields = fit_entry(digest, LEGACY_LAWS)
    del fields["laws"]
    if footprint is not None:
        raw = (Path.cwd() / footprint).read_bytes()
        fields["footprint"] = {"path": footprint, "sha256": hashlib.sha256(raw).hexdigest()}
    return kind, fields


LEGACY_LAWS: list[dict[str, Any]] = [
    {"name": "sample_s", "target": "sample_s", "terms": {"1": 0.001}},
    {"name": "schedule_s", "target": "schedule_s", "terms": {"1": 0.002}}]


def _legacy_verdicts(repo: Repo, second: str | None) -> list[tuple[str, str]]:
    text = law_text(NEW, "a", laws=LEGACY_LAWS, provenance=[_legacy_fit(OLD, "fp/old.json"),
                                                            _legacy_fit(NEW, second)])
    (repo.root / "laws/host.yaml").write_text(text)
    (repo.root / "atom/sched.py").write_text(SCHED_EDIT["atom/sched.py"])
    result = lawkit("rekey", "--why", "a scheduler tweak", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    return [(law["name"], law["verdict"]) for law in json.loads(result.stdout)["laws"]]


def test_in_a_file_whose_fits_do_not_name_their_laws_a_law_takes_the_worst_of_their_verdicts(
        repo: Repo) -> None:
    # the newest fit's footprint alone would call the scheduler's law untouched
    assert _legacy_verdicts(repo, "fp/new.json") == [("sample_s", "steps"),
                                                     ("schedule_s", "steps")]


def test_in_such_a_file_a_fit_that_names_no_footprint_makes_every_law_unknown(
        repo: Repo) -> None:
    assert _legacy_verdicts(repo, None) == [("sample_s", "unknown"), ("schedule_s", "unknown")]
