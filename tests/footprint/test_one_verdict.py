"""One verdict for each law, everywhere: `check`, `footprint diff`, `rekey` and `review` give
the same per-law verdicts for the same change, by the rule of docs/footprints.md (start-up runs
narrowed to their regions only for units that also ran in steps).

The engine: a sampler whose `sample` ran in the warm-up and in steps, each time inside
`sample_s`; a scheduler whose `schedule` ran likewise inside `schedule_s`; a `setup` that ran
only at start-up, inside `sample_s`; the module bodies at start-up with no region open. The
footprint is written by hand, as the recorder writes it, and committed with the fit.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lawkit.footprint.document import FileRecord, Footprint, UnitRecord, encode_footprint
from lawkit.footprint.units import NORMAL, codes_of, units_of
from testing.cli import invoke as lawkit
from testing.lawrepo import ENGINE, body_of, commit, engine_digest, init_repo, law_text

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
    engine = {k: v for k, v in BASE.items()
              if v is not None and k.startswith("atom/") and k.endswith(".py")}
    files = {rel: FileRecord(hashlib.sha256(text.encode()).hexdigest(), {
        u.qualname: UnitRecord(u.digest, *RAN.get(u.qualname, ((), (), ())),
                               code=(codes_of(text.encode()) or {})[u.qualname], normal=NORMAL)
        for u in units_of(text.encode())}) for rel, text in engine.items()}
    return encode_footprint(Footprint("atom", OLD, ("python", "run.py"), 1, files,
                                      python="3.12.1", regions=("sample_s", "schedule_s")))


@pytest.fixture
def repo(tmp_path: Path) -> Iterator[Path]:
    """Laws fitted on OLD with the footprint, committed."""
    root = init_repo(tmp_path / "repo")
    raw = footprint_bytes()
    fit = ("fit", {"digest": OLD, "at": "2026-11-10T09:12:44Z", "records": 100,
                   "body": body_of(LAWS), "captures": [],
                   "footprint": {"path": "fp.json", "sha256": hashlib.sha256(raw).hexdigest()}})
    commit(root, {**BASE, "fp.json": raw, "laws/host.yaml": law_text(
        OLD, "a", laws=LAWS, provenance=[fit])}, "fitted with a footprint")
    here = os.getcwd()
    os.chdir(root)
    yield root
    os.chdir(here)


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

    # check's fix line names each law with its own verdict, as the others do
    fix = lawkit("check").stdout.splitlines()[-1]
    touched = ", ".join(f"{law['name']} ({law['target']}) {expected[law['name']]}"
                        for law in LAWS if expected[law["name"]] != "untouched")
    assert f": {touched}): lawkit fit CAPTURE... --out laws/host.yaml" in fix


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
