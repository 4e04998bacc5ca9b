"""Soundness on generated engines, run for real (issues 21 and 22): a verdict of `untouched`,
for the footprint or for a law's region, never stands beside a step whose output changed.

Each example builds a module from blocks in a random order (constants, functions whose
defaults read them, registering decorators, a class), runs it as an engine does (import, then
a step with two regions), and builds its footprint with the document model from what ran: a
profile hook sees each code object start, and counts it for the innermost unit that holds it,
in the phase and the regions open. Then it edits the module (moves a statement across defs,
retags a decorator, changes a default, a constant or a body), runs it again, and compares.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lawkit.footprint.document import Footprint, sort_phases
from lawkit.footprint.trees import SourceTree
from lawkit.footprint.units import MODULE, units_of
from lawkit.footprint.verdict import diff_footprint
from testing.footprints import model_footprint

PATH = "atom/gen.py"
FILENAME = "/generated/atom/gen.py"
REGIONS = ("sample_s", "schedule_s")

PRELUDE = '''K = 0
TOP = 0
REGISTRY = {}
def register(name):
    def deco(fn):
        REGISTRY[name] = fn
        return fn
    return deco
'''
BLOCKS = {
    "k1": "K = 1\n",
    "k2": "K = 2\n",
    "top": "TOP = 10\n",
    "scale": "def scale(x, k=K):\n    return x * k\n",
    "pick_one": '@register("a")\ndef pick_one():\n    return 1\n',
    "pick_two": '@register("b")\ndef pick_two():\n    return 2\n',
    "sampler": "class Sampler:\n    top = TOP\n    lim = 1\n    def run(self, k=K, lim=lim):\n"
               "        return k + self.top + lim\n    lim = 2\n    def idle(self):\n"
               "        return 0\n",
    "helper": "def helper(x):\n    return x + 3\n",
    "unused": "def unused():\n    return 99\n",
}
STEP = '''def step():
    with region("sample_s"):
        a = (scale(1), REGISTRY.get("a", unused)(), Sampler().run())
    with region("schedule_s"):
        b = helper(2)
    c = REGISTRY.get("b", unused)()
    return {"sample_s": a, "schedule_s": b, "*": c}
'''
EDITS = {  # (block, old, new): one exact replacement within a block
    "retag one": ("pick_one", '"a"', '"b"'),
    "retag two": ("pick_two", '"b"', '"a"'),
    "default scale": ("scale", "k=K", "k=K + 1"),
    "default run": ("sampler", "k=K", "k=K * 2"),
    "annotate run": ("sampler", "k=K", "k: int = TOP"),
    "constant": ("k2", "2", "3"),
    "class attribute": ("sampler", "top = TOP", "top = TOP + 1"),
    "class move": ("sampler",
                   "    def run(self, k=K, lim=lim):\n        return k + self.top + lim\n"
                   "    lim = 2\n",
                   "    lim = 2\n    def run(self, k=K, lim=lim):\n"
                   "        return k + self.top + lim\n"),
    "helper body": ("helper", "x + 3", "x + 4"),
    "idle body": ("sampler", "return 0", "return 5"),
    "unused body": ("unused", "99", "98"),
}


@dataclass
class _Tracer:
    """Which units ran, in which phases and regions: a profile hook on code object starts."""

    names: set[str]
    phase: str = "startup"
    regions: list[str] = field(default_factory=list)
    ran: dict[str, tuple[set[str], set[str]]] = field(default_factory=dict)

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call" or frame.f_code.co_filename != FILENAME:
            return
        phases, regions = self.ran.setdefault(self._unit(frame.f_code.co_qualname),
                                              (set(), set()))
        phases.add(self.phase)
        if self.phase == "steps":
            regions.update(self.regions or ["*"])

    def _unit(self, qualname: str) -> str:
        """The innermost unit holding a code object: nested code belongs to its function."""
        name = qualname.split(".<locals>")[0]
        if name.rpartition(".")[2].startswith("<"):
            name = name.rpartition(".")[0]
        return name if name in self.names else MODULE

    @contextmanager
    def region(self, name: str) -> Iterator[None]:
        self.regions.append(name)
        try:
            yield
        finally:
            self.regions.pop()


def _run(source: str) -> tuple[dict[str, Any], _Tracer]:
    """The step's output by region, and what ran (the prelude defines every name a block
    reads, so any order of the blocks runs)."""
    tracer = _Tracer({u.qualname for u in units_of(source.encode())})
    namespace: dict[str, Any] = {"region": tracer.region, "__name__": "gen"}
    sys.setprofile(tracer)
    try:
        exec(compile(source, FILENAME, "exec"), namespace)
        tracer.phase = "steps"
        output: dict[str, Any] = namespace["step"]()
    finally:
        sys.setprofile(None)
    return output, tracer


def _footprint(source: bytes, tracer: _Tracer) -> Footprint:
    ran = {(PATH, unit): (sort_phases(phases), tuple(sorted(regions)))
           for unit, (phases, regions) in tracer.ran.items()}
    seen = sorted({r for phases, regions in tracer.ran.values() for r in regions})
    return model_footprint(SourceTree("d1", {PATH: source}, "recorded"), ran, regions=tuple(seen))


def _module(order: list[str], edit: tuple[str, str, str] | None = None) -> str:
    blocks = dict(BLOCKS)
    if edit is not None:
        block, old, new = edit
        blocks[block] = blocks[block].replace(old, new, 1)
    return PRELUDE + "".join(blocks[name] for name in order) + STEP


_ORDER = st.permutations(sorted(BLOCKS))


@settings(max_examples=300, deadline=None)
@given(order=_ORDER, data=st.data())
def test_no_move_across_defs_and_no_header_edit_is_untouched_when_the_step_changes(
        order: list[str], data: st.DataObject) -> None:
    output, tracer = _run(_module(order))
    fp = _footprint(_module(order).encode(), tracer)
    moved = list(order)
    block = moved.pop(data.draw(st.integers(0, len(moved) - 1), label="from"))
    moved.insert(data.draw(st.integers(0, len(moved)), label="to"), block)
    edit = data.draw(st.sampled_from([None, *EDITS]), label="edit")
    edited = _module(moved, EDITS[edit] if edit else None)
    after = _run(edited)
    diff = diff_footprint(fp, SourceTree("d2", {PATH: edited.encode()}, "edited"))
    if after[0] != output:
        assert diff.verdict != "untouched", (order, moved, edit, after[0], output)
    for region in REGIONS:
        if after[0][region] != output[region]:
            assert diff.law(region)[1] != "untouched", (region, moved, edit)


_TEXT = st.text(alphabet=st.sampled_from(list("abcxyz_01 ()[]:=+-#'\"\\\t.,@")), max_size=12)


@settings(max_examples=300, deadline=None)
@given(order=_ORDER, data=st.data())
def test_any_edit_of_a_unit_that_ran_in_a_region_makes_that_regions_laws_steps(
        order: list[str], data: st.DataObject) -> None:
    source = _module(order).encode()
    fp = _footprint(source, _run(_module(order))[1])
    recorded = fp.files[PATH].units
    unit = data.draw(st.sampled_from([u for u in units_of(source)
                                      if recorded[u.qualname].phases and u.lines]), label="unit")
    lines = source.splitlines(keepends=True)
    n = data.draw(st.sampled_from(sorted(unit.lines)), label="line") - 1
    kind = data.draw(st.sampled_from(["insert", "replace", "delete", "duplicate"]), label="kind")
    text = data.draw(_TEXT, label="text").encode()
    if kind == "insert":
        at = data.draw(st.integers(0, len(lines[n].rstrip(b"\r\n"))), label="column")
        lines[n] = lines[n][:at] + text + lines[n][at:]
    elif kind == "replace":
        lines[n] = text + b"\n"
    elif kind == "delete":
        del lines[n]
    else:
        lines.insert(n, lines[n])
    edited = b"".join(lines)
    assume(edited != source)
    diff = diff_footprint(fp, SourceTree("d2", {PATH: edited}, "edited"))
    ran = recorded[unit.qualname]
    for region in REGIONS:
        verdict = diff.law(region)
        if region in ran.regions or "*" in ran.regions:
            assert verdict == (region, "steps"), (unit.qualname, region, kind, text, n + 1)
        elif "startup" in ran.phases:
            assert verdict[1] != "untouched", (unit.qualname, region, kind, text, n + 1)


def test_the_generated_engine_runs_units_in_the_regions_a_recorder_would_see() -> None:
    order = ["k1", "top", "scale", "pick_one", "pick_two", "sampler", "helper", "unused", "k2"]
    ran = _run(_module(order))
    fp = _footprint(_module(order).encode(), ran[1])
    units = fp.files[PATH].units
    assert (units["scale"].phases, units["scale"].regions) == (("steps",), ("sample_s",))
    assert units["helper"].regions == ("schedule_s",)
    assert units["pick_two"].regions == ("*",)
    assert units["Sampler"].phases == ("startup",) and units["Sampler.idle"].phases == ()
    assert units[MODULE].phases == ("startup",) and units["step"].regions == ("*",)
    assert fp.regions == ("*", "sample_s", "schedule_s")
    assert ran[0] == {"sample_s": (1, 1, 12), "schedule_s": 5, "*": 2}
