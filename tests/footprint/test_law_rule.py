"""The per-law verdict rule (docs/footprints.md), unit by unit: module bodies and class shells
count as run with no region open wherever they ran, start-up regions narrow only a unit that
also ran in steps, a footprint without start-up regions had none open, and a unit that ran only
in shutdown did not run."""

from __future__ import annotations

import json

import pytest

from lawkit.footprint.document import FileRecord, Footprint, UnitRecord, decode_footprint
from lawkit.footprint.trees import SourceTree
from lawkit.footprint.units import MODULE, units_of
from lawkit.footprint.verdict import diff_footprint

SOURCE = (b"LIMIT = 3\n\n\nclass Sampler:\n    top = 1\n\n    def sample(self, x):\n"
          b"        return x\n\n\ndef warm(n):\n    return n\n")
PATH = "atom/sampler.py"
REGIONS = ("*", "sample_s", "schedule_s")
Where = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
"""A unit's phases, regions in steps and regions at start-up."""


def _footprint(ran: dict[str, Where], *, shutdown: tuple[str, ...] = ()) -> Footprint:
    tree = SourceTree("d1", {PATH: SOURCE}, "recorded")
    units = {u.qualname: UnitRecord(u.digest, *ran.get(u.qualname, ((), (), ())),
                                    shutdown=u.qualname in shutdown)
             for u in units_of(SOURCE)}
    return Footprint("atom", "d1", ("python", "run.py"), 1,
                     {PATH: FileRecord(tree.sha256(PATH), units)}, python="3.12.1",
                     regions=REGIONS)


def _verdicts(fp: Footprint, old: bytes, new: bytes) -> dict[str, str]:
    assert SOURCE.count(old) == 1
    diff = diff_footprint(fp, SourceTree("d2", {PATH: SOURCE.replace(old, new)}, "edited"))
    return {target: diff.law(target)[1] for target in ("sample_s", "schedule_s")}


def test_a_module_body_that_ran_in_one_region_counts_for_every_law() -> None:
    fp = _footprint({MODULE: (("steps",), ("sample_s",), ())})  # imported inside a region
    assert _verdicts(fp, b"LIMIT = 3", b"LIMIT = 4") == {"sample_s": "steps",
                                                         "schedule_s": "steps"}


def test_a_class_shell_that_ran_at_start_up_in_one_region_counts_for_every_law() -> None:
    fp = _footprint({"Sampler": (("startup", "steps"), ("sample_s",), ("sample_s",))})
    assert _verdicts(fp, b"top = 1", b"top = 2") == {"sample_s": "steps",
                                                     "schedule_s": "steps"}
    fp = _footprint({"Sampler": (("startup",), (), ("sample_s",))})
    assert _verdicts(fp, b"top = 1", b"top = 2") == {"sample_s": "startup",
                                                     "schedule_s": "startup"}


def test_start_up_regions_narrow_a_function_that_also_ran_in_steps() -> None:
    fp = _footprint({"Sampler.sample": (("startup", "steps"), ("sample_s",), ("sample_s",))})
    assert _verdicts(fp, b"return x\n", b"return -x\n") == {"sample_s": "steps",
                                                           "schedule_s": "untouched"}


def test_a_function_that_ran_in_steps_elsewhere_and_at_start_up_in_a_region_narrows() -> None:
    # warmed up in the scheduler's region, in steps only in the sampler's: both are touched
    fp = _footprint({"Sampler.sample": (("startup", "steps"), ("sample_s",), ("schedule_s",))})
    assert _verdicts(fp, b"return x\n", b"return -x\n") == {"sample_s": "steps",
                                                           "schedule_s": "startup"}


def test_a_function_that_ran_only_at_start_up_counts_for_every_law_whatever_its_region(
) -> None:
    fp = _footprint({"warm": (("startup",), (), ("sample_s",))})
    assert _verdicts(fp, b"return n\n", b"return n + 1\n") == {"sample_s": "startup",
                                                              "schedule_s": "startup"}


def test_a_footprint_without_start_up_regions_had_none_open_at_start_up() -> None:
    doc = _footprint({"Sampler.sample": (("startup", "steps"), ("sample_s",), ())}).to_json()
    for unit in doc["files"][PATH]["units"].values():
        del unit["startup_regions"]
    fp = decode_footprint(json.dumps(doc).encode(), shown="fp.json")
    assert fp.files[PATH].units["Sampler.sample"].startup_regions == ("*",)
    assert _verdicts(fp, b"return x\n", b"return -x\n") == {"sample_s": "steps",
                                                           "schedule_s": "startup"}


def test_a_unit_that_ran_only_in_shutdown_did_not_run() -> None:
    fp = _footprint({}, shutdown=("warm",))
    assert _verdicts(fp, b"return n\n", b"return n + 1\n") == {"sample_s": "untouched",
                                                              "schedule_s": "untouched"}


@pytest.mark.parametrize("phases", [("startup",), ("steps",), ("startup", "steps")])
def test_a_removed_class_shell_counts_for_every_law_through_its_module_body(
        phases: tuple[str, ...]) -> None:
    where: Where = (phases, ("sample_s",) if "steps" in phases else (),
                    ("sample_s",) if "startup" in phases else ())
    fp = _footprint({MODULE: where, "Sampler": where})
    verdict = "steps" if "steps" in phases else "startup"
    assert _verdicts(fp, b"class Sampler:\n    top = 1\n\n    def sample(self, x):\n"
                         b"        return x\n", b"") == {"sample_s": verdict,
                                                         "schedule_s": verdict}
