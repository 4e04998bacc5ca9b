"""`lawkit footprint diff` as a person reads it: the units behind the verdict said plainly,
each region's verdict, and what a schema-1 footprint cannot see."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.config import load_workspace
from lawkit.footprint.document import (
    Footprint,
    encode_footprint,
    write_footprint,
)
from lawkit.footprint.trees import work_tree_sources
from lawkit.footprint.units import MODULE
from lawkit.footprint.verdict import FootprintDiff, UnitChange
from testing.footprints import model_footprint

SAMPLER = b"""TOP_K = 50
def sample(logits, top_k=TOP_K):
    return logits[:top_k]
def debug_dump():
    return 0
"""
SCHEDULER = b"""class Scheduler:
    def schedule(self):
        return 1
    def debug_dump(self):
        return 2
"""
RAN = {
    ("atom/sampler.py", MODULE): (("startup",), ()),
    ("atom/sampler.py", "sample"): (("steps",), ("sample_s",)),
    ("atom/scheduler.py", MODULE): (("startup",), ()),
    ("atom/scheduler.py", "Scheduler"): (("startup",), ()),
    ("atom/scheduler.py", "Scheduler.schedule"): (("steps",), ("schedule_s",)),
}


@pytest.fixture
def engine(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An engine with a footprint built from the document model, as the working directory."""
    (tmp_path / "lawkit.toml").write_text('[digest]\npackages = ["atom"]\n')
    (tmp_path / "atom").mkdir()
    (tmp_path / "atom" / "sampler.py").write_bytes(SAMPLER)
    (tmp_path / "atom" / "scheduler.py").write_bytes(SCHEDULER)
    write_footprint(_footprint(tmp_path), tmp_path / "fp.json")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _footprint(root: Path, schema: int = 2) -> Footprint:
    tree = work_tree_sources(load_workspace(config=root / "lawkit.toml").digest)
    return model_footprint(tree, RAN, regions=("sample_s", "schedule_s"), schema=schema)


def _diff(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["footprint", "diff", "fp.json", *args])
    return result.exit_code, result.stdout, result.stderr


def _edit(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert data.count(old) == 1
    path.write_bytes(data.replace(old, new))


def test_diff_json_gives_each_regions_verdict_beside_the_footprints(engine: Path) -> None:
    _edit(engine / "atom/sampler.py", b"logits[:top_k]", b"logits[top_k:]")
    code, out, _ = _diff("--json")
    doc = json.loads(out)
    assert (code, doc["verdict"]) == (1, "steps")
    assert doc["regions"] == {"sample_s": "steps", "schedule_s": "untouched"}
    assert doc["units"] == [{"path": "atom/sampler.py", "unit": "sample", "change": "changed",
                             "phases": ["steps"], "regions": ["sample_s"],
                             "counts_as": "steps",
                             "layout_only": False}]
    code, out, _ = _diff()
    assert code == 1
    assert out.splitlines()[1] == "regions: sample_s steps, schedule_s untouched"
    assert out.splitlines()[0].endswith(", 1 unit changed: sample (ran in steps)")


def test_a_footprint_without_regions_gives_diff_an_empty_regions_object(engine: Path) -> None:
    doc = _footprint(engine).to_json()
    del doc["regions"]
    (engine / "fp.json").write_text(json.dumps(doc))
    _edit(engine / "atom/sampler.py", b"logits[:top_k]", b"logits[top_k:]")
    code, out, _ = _diff("--json")
    assert (code, json.loads(out)["regions"]) == (1, {})
    assert not any(line.startswith("regions:") for line in _diff()[1].splitlines())


def test_the_verdict_line_says_what_changed_as_a_person_would(engine: Path) -> None:
    _edit(engine / "atom/scheduler.py", b"return 2", b"return 3")
    code, out, _ = _diff()
    assert code == 0
    assert out.splitlines()[0].startswith("untouched: atom=")
    assert out.splitlines()[0].endswith(", 1 unit changed: Scheduler.debug_dump (never ran)")
    _edit(engine / "atom/scheduler.py", b"    def debug_dump",
          b"    def pause(self):\n        return 4\n    def debug_dump")
    head = _diff()[1].splitlines()[0]
    assert head.startswith("steps: ")
    assert head.endswith(", 2 units changed, 1 new: Scheduler (ran at start-up), "
                         "Scheduler.debug_dump (never ran), Scheduler.pause (new, beside "
                         "Scheduler, which ran)")  # why a never-called method counts: its class


def test_a_unit_that_counts_for_every_region_says_why() -> None:
    """A verdict that moved every law said only `ran in steps`: code run with no region open
    (main-thread code outside any region) counts for every region."""
    outside = UnitChange("a.py", "poll", "changed", ("steps",), "steps", regions=("*",))
    warm = UnitChange("a.py", "warm", "changed", ("startup", "steps"), "startup",
                      regions=("sample_s",), startup_regions=("*",))
    inside = UnitChange("a.py", "sample", "changed", ("steps",), "steps", regions=("sample_s",))
    assert outside.line() == ("changed  a.py  poll  ran in steps: counts as steps (in steps "
                              "with no region open)")
    assert warm.line().endswith("counts as startup (at start-up with no region open)")
    assert inside.line().endswith("counts as steps")
    assert FootprintDiff("steps", "d1", "d2", "atom", (outside,)).summary() == \
        "1 unit changed: poll (ran in steps, in steps with no region open)"


def test_a_summary_of_many_units_counts_them_by_what_they_count_as() -> None:
    units = tuple(UnitChange("a.py", f"f{i}", "changed", ("steps",) if i < 3 else (),
                             "steps" if i < 3 else "not run") for i in range(6))
    gone = UnitChange("a.py", "g", "absent", ("startup",), "startup")
    diff = FootprintDiff("steps", "d1", "d2", "atom", (*units, gone))
    assert diff.summary() == "6 units changed, 1 gone; 3 count as steps, 1 as startup, 3 as " \
        "not run"
    assert FootprintDiff("untouched", "d1", "d1", "atom", ()).summary() == "no unit changed"
    assert FootprintDiff("steps", "d1", "d2", "atom", (gone,)).summary() == \
        "1 unit gone: g (gone, ran at start-up)"
    new = UnitChange("a.py", "h", "new", (), "steps")
    assert FootprintDiff("steps", "d1", "d2", "atom", (new, new)).summary() == \
        "2 new units: h (new), h (new)"


def test_a_schema_1_footprint_is_compared_by_schema_1_and_diff_says_what_it_cannot_see(
        engine: Path) -> None:
    doc = json.loads(encode_footprint(_footprint(engine, schema=1)))
    doc["schema"] = "lawkit-footprint/1"
    for key in ("recorder", "python", "regions", "unhashed"):
        del doc[key]
    for entry in doc["files"].values():
        for unit in entry["units"].values():
            del unit["regions"]
    (engine / "fp.json").write_text(json.dumps(doc))
    assert _diff()[0] == 0
    # TOP_K moved below the def whose default reads it: schema 1 cannot see it
    _edit(engine / "atom/sampler.py", b"TOP_K = 50\ndef sample(logits, top_k=TOP_K):\n"
          b"    return logits[:top_k]\n",
          b"def sample(logits, top_k=TOP_K):\n    return logits[:top_k]\nTOP_K = 50\n")
    code, out, err = _diff()
    assert code == 0 and out.splitlines()[0].endswith(", no unit changed")
    assert err.strip() == ("note: this footprint is schema 1 (lawkit-footprint/1): it cannot "
                           "see a statement moved across a def, nor a changed decorator or "
                           "default of a function that never ran; record it again with "
                           "`lawkit footprint record`")
    code, out, _ = _diff("--json")
    doc = json.loads(out)
    assert (doc["schema"], doc["verdict"], doc["regions"]) == (1, "untouched", {})
    assert doc["note"].startswith("this footprint is schema 1")


def test_a_schema_2_footprint_sees_the_same_move_and_has_no_note(engine: Path) -> None:
    _edit(engine / "atom/sampler.py", b"TOP_K = 50\ndef sample(logits, top_k=TOP_K):\n"
          b"    return logits[:top_k]\n",
          b"def sample(logits, top_k=TOP_K):\n    return logits[:top_k]\nTOP_K = 50\n")
    code, out, err = _diff()
    assert code == 1 and err == ""
    assert out.splitlines()[0].startswith("startup: ")
    assert out.splitlines()[0].endswith(", 1 unit changed: <module> (ran at start-up)")
    doc = json.loads(_diff("--json")[1])
    assert (doc["schema"], doc["note"]) == (2, None)
    assert doc["regions"] == {"sample_s": "startup", "schedule_s": "startup"}
