"""Each way a change could make a footprint's verdict wrong, on a recorded engine.

One footprint of the stand-in engine (tests/footprint_engine) is recorded for the module; each
test edits a fresh copy of the engine and compares it with the footprint.
"""

from __future__ import annotations

import dis
import sys
import types
from pathlib import Path

import pytest
from footprint_engine import copy_engine, edit
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from lawkit.config import Workspace, load_workspace
from lawkit.footprint.document import Footprint
from lawkit.footprint.record import record_footprint
from lawkit.footprint.trees import SourceTree, work_tree_sources
from lawkit.footprint.units import units_of
from lawkit.footprint.verdict import FootprintDiff, diff_footprint


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Footprint]:
    """The pristine engine and its footprint."""
    root = copy_engine(tmp_path_factory.mktemp("recorded") / "engine")
    ws = load_workspace(config=root / "lawkit.toml")
    report = record_footprint(ws, [sys.executable, "run.py"], root / "fp.json", cwd=root)
    return root, report.footprint


def _diff(engine: Path, footprint: Footprint, pristine: Path | None = None) -> FootprintDiff:
    ws: Workspace = load_workspace(config=engine / "lawkit.toml")
    old = None
    if pristine is not None:
        def old(relpath: str, sha256: str) -> bytes | None:
            return (pristine / relpath).read_bytes()
    return diff_footprint(footprint, work_tree_sources(ws.digest), old)


def _changes(diff: FootprintDiff) -> dict[tuple[str, str], tuple[str, str]]:
    return {(u.path, u.unit): (u.change, u.counts_as) for u in diff.units}


def test_the_footprint_says_what_ran_and_when(recorded: tuple[Path, Footprint]) -> None:
    _, fp = recorded
    units = {(p, n): u.phases for p, f in fp.files.items() for n, u in f.units.items()}
    assert units["atom/runner.py", "Runner.__init__"] == ("startup",)
    assert units["atom/runner.py", "Runner.run"] == ("steps",)
    assert units["atom/runner.py", "step"] == ("steps",)
    assert units["atom/base.py", "<module>"] == ("startup",)
    assert units["atom/base.py", "Base.idle"] == ()
    assert units["atom/worker.py", "in_subprocess"] == ("steps",)  # another process: steps
    assert fp.processes == 4  # the harness, its subprocess, two pool workers


def test_an_unchanged_engine_is_untouched(recorded: tuple[Path, Footprint],
                                          engine: Path) -> None:
    diff = _diff(engine, recorded[1])
    assert (diff.verdict, diff.units) == ("untouched", ())


def test_a_new_method_overriding_an_executed_base_method_counts_as_steps(
        recorded: tuple[Path, Footprint], engine: Path) -> None:
    edit(engine / "atom/runner.py", "    def run(self):",
         "    def prepare(self):\n        return 'runner'\n\n    def run(self):")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "steps"
    assert _changes(diff)["atom/runner.py", "Runner.prepare"] == ("new", "steps")
    assert _changes(diff)["atom/runner.py", "Runner"] == ("changed", "startup")


def test_a_module_level_constant_changed_is_startup(recorded: tuple[Path, Footprint],
                                                    engine: Path) -> None:
    edit(engine / "atom/base.py", "LIMIT = 3", "LIMIT = 4")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "startup"
    assert _changes(diff) == {("atom/base.py", "<module>"): ("changed", "startup")}


def test_a_default_argument_changed_counts_as_steps_and_changes_the_body_that_evaluated_it(
        recorded: tuple[Path, Footprint], engine: Path) -> None:
    edit(engine / "atom/runner.py", "factor=2", "factor=3")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "steps"
    assert _changes(diff) == {("atom/runner.py", "scale"): ("changed", "steps"),
                              ("atom/runner.py", "<module>"): ("changed", "startup")}


def test_a_decorator_changed_counts_as_steps(recorded: tuple[Path, Footprint],
                                             engine: Path) -> None:
    edit(engine / "atom/runner.py", "@traced\ndef step", "@functools.cache\ndef step")
    edit(engine / "atom/runner.py", "from atom.base", "import functools\nfrom atom.base")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "steps"
    assert _changes(diff)["atom/runner.py", "step"] == ("changed", "steps")


def test_a_decorator_added_to_a_function_that_never_ran_changes_the_body_that_ran_it(
        recorded: tuple[Path, Footprint], engine: Path) -> None:
    # a decorator runs with the body holding the def: a registry it fills is read by every step
    edit(engine / "atom/base.py", "def only_defined():", "@traced\ndef only_defined():")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "startup"
    assert _changes(diff) == {("atom/base.py", "only_defined"): ("changed", "not run"),
                              ("atom/base.py", "<module>"): ("changed", "startup")}


def test_a_nested_function_changed_counts_as_steps_for_its_holder(
        recorded: tuple[Path, Footprint], engine: Path) -> None:
    edit(engine / "atom/runner.py", "return j + 1", "return j + 2")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "steps"
    assert _changes(diff) == {("atom/runner.py", "step"): ("changed", "steps")}


def test_a_function_moved_to_another_file_counts_as_steps(recorded: tuple[Path, Footprint],
                                                          engine: Path) -> None:
    (engine / "atom/util.py").write_text("")
    with (engine / "atom/base.py").open("a") as f:
        f.write("\n\ndef util_fn(x):\n    return x - 1\n")
    edit(engine / "atom/runner.py", "from atom.util import util_fn",
         "from atom.base import util_fn")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "steps"
    changes = _changes(diff)
    assert changes["atom/util.py", "util_fn"] == ("absent", "steps")
    assert changes["atom/base.py", "util_fn"] == ("new", "steps")


def test_a_file_renamed_counts_as_steps(recorded: tuple[Path, Footprint], engine: Path) -> None:
    (engine / "atom/helpers.py").rename(engine / "atom/helper_fns.py")
    edit(engine / "atom/runner.py", "from atom.helpers", "from atom.helper_fns")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "steps"
    changes = _changes(diff)
    assert changes["atom/helpers.py", "helper"] == ("absent", "steps")
    assert changes["atom/helper_fns.py", "helper"] == ("new", "steps")
    assert changes["atom/helper_fns.py", "<module>"] == ("new", "steps")


def test_a_class_attribute_changed_is_startup_never_untouched(
        recorded: tuple[Path, Footprint], engine: Path) -> None:
    edit(engine / "atom/base.py", 'kind = "base"', 'kind = "other"')
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "startup"
    assert _changes(diff) == {("atom/base.py", "Base"): ("changed", "startup")}


def test_a_new_top_level_function_shadowing_an_imported_name_counts_as_steps(
        recorded: tuple[Path, Footprint], engine: Path) -> None:
    edit(engine / "atom/runner.py", "\n\ndef scale", "\n\ndef helper(i):\n    return -i\n\n\n"
         "def scale")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "steps"
    assert _changes(diff)["atom/runner.py", "helper"] == ("new", "steps")


def test_a_decorator_added_to_an_executed_function_counts_as_steps(
        recorded: tuple[Path, Footprint], engine: Path) -> None:
    edit(engine / "atom/runner.py", "def scale", "@traced\ndef scale")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "steps"
    assert _changes(diff)["atom/runner.py", "scale"] == ("changed", "steps")


def test_a_property_setter_changed_beside_its_getter_is_its_own_unit(
        recorded: tuple[Path, Footprint], engine: Path) -> None:
    units = recorded[1].files["atom/runner.py"].units
    assert units["Runner.size"].phases == ("steps",)     # the getter
    assert units["Runner.size#2"].phases == ("startup",)  # the setter, from __init__
    edit(engine / "atom/runner.py", "self._size = value", "self._size = int(value)")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "startup"
    assert _changes(diff) == {("atom/runner.py", "Runner.size#2"): ("changed", "startup")}


def test_a_one_line_function_that_ran_counts_as_steps(recorded: tuple[Path, Footprint],
                                                      engine: Path) -> None:
    assert recorded[1].files["atom/base.py"].units["one"].phases == ("steps",)
    edit(engine / "atom/base.py", "def one(): return 1", "def one(): return 2")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "steps"
    assert _changes(diff) == {("atom/base.py", "one"): ("changed", "steps")}


def test_a_function_only_defined_never_called_is_untouched(recorded: tuple[Path, Footprint],
                                                           engine: Path) -> None:
    edit(engine / "atom/base.py", "defined, imported, never called", "still never called")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "untouched"
    assert _changes(diff) == {("atom/base.py", "only_defined"): ("changed", "not run")}


def test_a_worker_terminated_by_its_pool_counts_as_steps(recorded: tuple[Path, Footprint],
                                                         engine: Path) -> None:
    assert recorded[1].files["atom/worker.py"].units["work"].phases == ("steps",)
    edit(engine / "atom/worker.py", "return x * x", "return x ** 2")
    diff = _diff(engine, recorded[1])
    assert diff.verdict == "steps"
    assert _changes(diff) == {("atom/worker.py", "work"): ("changed", "steps")}


def test_only_a_docstring_or_comment_changed_is_a_change_classed_layout_only(
        recorded: tuple[Path, Footprint], engine: Path) -> None:
    pristine = recorded[0]
    edit(engine / "atom/base.py", '"""Say what kind of runner this is."""',
         '"""Say which kind of runner this is,\n        in one word."""  # a comment')
    diff = _diff(engine, recorded[1], pristine)
    assert diff.verdict == "untouched"  # the unit ran in steps, but its code is the same
    [unit] = diff.units
    assert (unit.unit, unit.change, unit.layout_only, unit.counts_as) == (
        "Base.prepare", "changed", True, "layout only")
    edit(engine / "atom/base.py", "return self.kind", "return self.kind  # said")
    [unit] = _diff(engine, recorded[1], pristine).units
    assert unit.layout_only
    edit(engine / "atom/base.py", "return self.kind  # said", "return self.kind or 'x'")
    [unit] = _diff(engine, recorded[1], pristine).units
    assert not unit.layout_only


_EDIT_TEXT = st.text(alphabet=st.sampled_from(list("abcxyz_01 ()[]:=+-#'\"\\\t.,")),
                     min_size=0, max_size=12)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_any_edit_inside_an_executed_unit_is_startup_or_steps_never_untouched(
        recorded: tuple[Path, Footprint], data: st.DataObject) -> None:
    root, fp = recorded
    files = {rel: (root / rel).read_bytes() for rel in fp.files}
    executed = [(rel, u) for rel in sorted(files) for u in units_of(files[rel])
                if fp.files[rel].units[u.qualname].phases and u.lines]
    rel, unit = data.draw(st.sampled_from(executed), label="unit")
    lines = files[rel].splitlines(keepends=True)
    n = data.draw(st.sampled_from(sorted(unit.lines)), label="line") - 1
    line = lines[n]
    kind = data.draw(st.sampled_from(["insert", "replace", "delete", "duplicate"]))
    text = data.draw(_EDIT_TEXT, label="text").encode()
    if kind == "insert":
        at = data.draw(st.integers(0, len(line.rstrip(b"\r\n"))), label="column")
        lines[n] = line[:at] + text + line[at:]
    elif kind == "replace":
        lines[n] = text + b"\n"
    elif kind == "delete":
        del lines[n]
    else:
        lines.insert(n, line)
    edited = b"".join(lines)
    assume(edited != files[rel])
    target = SourceTree("edited", {**files, rel: edited}, "edited")
    diff = diff_footprint(fp, target)
    # untouched only where every unit the edit touched kept its code (a comment, a blank
    # line, a docstring), as the bytecode of the two versions says too
    assert diff.verdict in ("startup", "steps") or (
        all(u.counts_as == "layout only" for u in diff.units)
        and _bytecode(files[rel]) == _bytecode(edited)), (rel, unit.qualname, n + 1, kind, text)


def _bytecode(source: bytes) -> object:
    """A module's bytecode without docstrings, line numbers and the no-ops that keep a line's
    place, code objects nested."""
    def walk(code: types.CodeType) -> object:
        # each instruction with its argument resolved (constants by value, not by their index:
        # 3.13 keeps a stripped docstring's slot in co_consts), nested code objects walked;
        # 3.13's class bodies store their first line number (__firstlineno__): a position
        ops = [(i.opname, walk(i.argval) if isinstance(i.argval, types.CodeType)
                else (type(i.argval), repr(i.argval)))
               for i in dis.get_instructions(code) if i.opname not in ("NOP", "RESUME")]
        return tuple(op for n, op in enumerate(ops)
                     if op[0] != "LOAD_CONST" or n + 1 == len(ops)
                     or ops[n + 1] != ("STORE_NAME", (str, "'__firstlineno__'")))
    return walk(compile(source, "unit.py", "exec", optimize=2))
