"""A verdict for each law from the region it prices, on footprints built
with the document model: a sampler-only change asks for a refit of the sampler's laws only."""

from __future__ import annotations

import json

from lawkit.footprint.document import FileRecord, Footprint, UnitRecord, decode_footprint
from lawkit.footprint.regions import region_verdicts, worst_verdict
from lawkit.footprint.trees import SourceTree
from lawkit.footprint.units import MODULE
from lawkit.footprint.verdict import FootprintDiff, diff_footprint
from testing.footprints import model_footprint

ENGINE = {
    "atom/sampler.py": b"def sample(x):\n    return x\n\n\ndef debug_dump():\n    return 0\n",
    "atom/scheduler.py": b"class Scheduler:\n    def schedule(self):\n        return 1\n\n"
                         b"    def both(self):\n        return 2\n",
    "atom/step.py": b"def step():\n    return 3\n\n\ndef setup():\n    return 4\n",
}
RAN = {
    ("atom/sampler.py", MODULE): (("startup",), ()),
    ("atom/sampler.py", "sample"): (("steps",), ("sample_s",)),
    ("atom/scheduler.py", MODULE): (("startup",), ()),
    ("atom/scheduler.py", "Scheduler"): (("startup",), ()),
    ("atom/scheduler.py", "Scheduler.schedule"): (("steps",), ("schedule_s",)),
    ("atom/scheduler.py", "Scheduler.both"): (("steps",), ("sample_s", "schedule_s")),
    ("atom/step.py", MODULE): (("startup",), ()),
    ("atom/step.py", "step"): (("steps",), ("*",)),
    ("atom/step.py", "setup"): (("startup",), ()),
}
REGIONS = ("*", "sample_s", "schedule_s")


def _footprint(files: dict[str, bytes], regions: tuple[str, ...] = REGIONS) -> Footprint:
    return model_footprint(SourceTree("d1", files, "recorded"), RAN, regions=regions)


def _diff(fp: Footprint, edits: dict[str, tuple[bytes, bytes]]) -> FootprintDiff:
    files = dict(ENGINE)
    for path, (old, new) in edits.items():
        assert files[path].count(old) == 1
        files[path] = files[path].replace(old, new)
    return diff_footprint(fp, SourceTree("d2", files, "edited"))


def test_a_sampler_only_change_is_steps_for_the_sampler_and_untouched_for_the_scheduler(
) -> None:
    fp = _footprint(ENGINE)
    diff = _diff(fp, {"atom/sampler.py": (b"return x\n", b"return x + 1\n")})
    assert region_verdicts(fp, diff) == {"sample_s": "steps", "schedule_s": "untouched"}
    assert diff.law("sample_s") == ("sample_s", "steps")
    assert diff.law("schedule_s") == ("schedule_s", "untouched")
    assert worst_verdict([diff.law("schedule_s")[1], diff.law("sample_s")[1]]) == "steps"
    assert diff.verdict == "steps"  # the footprint's own verdict stays section 11's


def test_a_unit_that_ran_in_two_regions_counts_for_both() -> None:
    fp = _footprint(ENGINE)
    diff = _diff(fp, {"atom/scheduler.py": (b"return 2", b"return 5")})
    assert region_verdicts(fp, diff) == {"sample_s": "steps", "schedule_s": "steps"}


def test_a_unit_that_ran_in_steps_with_no_region_open_counts_for_every_law() -> None:
    fp = _footprint(ENGINE)
    diff = _diff(fp, {"atom/step.py": (b"return 3", b"return 6")})
    assert region_verdicts(fp, diff) == {"sample_s": "steps", "schedule_s": "steps"}


def test_a_new_unit_that_counts_as_steps_counts_for_every_region() -> None:
    fp = _footprint(ENGINE)
    diff = _diff(fp, {"atom/sampler.py": (b"\n\ndef debug_dump", b"\n\ndef top_p(x):\n"
                                         b"    return x\n\n\ndef debug_dump")})
    assert ("atom/sampler.py", "top_p", "steps") in {(u.path, u.unit, u.counts_as)
                                                      for u in diff.units}
    assert region_verdicts(fp, diff) == {"sample_s": "steps", "schedule_s": "steps"}


def test_a_change_that_ran_only_at_start_up_is_startup_for_every_region() -> None:
    fp = _footprint(ENGINE)
    diff = _diff(fp, {"atom/step.py": (b"return 4", b"return 7")})
    assert region_verdicts(fp, diff) == {"sample_s": "startup", "schedule_s": "startup"}


def test_a_change_to_code_that_never_ran_is_untouched_for_every_region() -> None:
    fp = _footprint(ENGINE)
    diff = _diff(fp, {"atom/sampler.py": (b"return 0", b"return -1")})
    assert region_verdicts(fp, diff) == {"sample_s": "untouched", "schedule_s": "untouched"}
    assert worst_verdict(["untouched", "untouched"]) == "untouched"


def test_a_law_whose_target_is_not_a_region_takes_the_footprints_verdict() -> None:
    fp = _footprint(ENGINE)
    diff = _diff(fp, {"atom/sampler.py": (b"return x\n", b"return x + 1\n")})
    assert diff.law("prepare_s") == (None, "steps")
    assert diff.law("*") == (None, "steps")


def test_a_footprint_without_top_level_regions_has_none_every_law_takes_its_verdict() -> None:
    doc = _footprint(ENGINE).to_json()
    del doc["regions"]
    fp = decode_footprint(json.dumps(doc).encode(), shown="fp.json")
    diff = _diff(fp, {"atom/sampler.py": (b"return x\n", b"return x + 1\n")})
    assert fp.regions == () and region_verdicts(fp, diff) == {}
    assert diff.law("schedule_s") == (None, "steps")


def test_a_changed_unit_that_ran_in_steps_without_its_regions_counts_for_every_region() -> None:
    fp = _footprint(ENGINE)
    units = dict(fp.files["atom/sampler.py"].units)
    units["sample"] = UnitRecord(units["sample"].digest, ("steps",), ())
    files = {**fp.files, "atom/sampler.py": FileRecord(fp.files["atom/sampler.py"].sha256, units)}
    fp = Footprint(fp.key, fp.digest, fp.command, 1, files, regions=REGIONS)
    diff = _diff(fp, {"atom/sampler.py": (b"return x\n", b"return x + 1\n")})
    assert region_verdicts(fp, diff) == {"sample_s": "steps", "schedule_s": "steps"}


def test_the_worst_verdict_orders_untouched_startup_steps_unknown() -> None:
    assert worst_verdict(["startup", "untouched"]) == "startup"
    assert worst_verdict(["startup", "steps", "untouched"]) == "steps"
    assert worst_verdict(["steps", "unknown"]) == "unknown"
