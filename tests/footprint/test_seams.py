"""The measured process has one seam: the `Recorder` protocol names everything a recorder is
told, and every process-wide patch lives in `lawkit.footprint.measured.patch`."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

import lawkit.footprint.measured as measured
from lawkit.footprint.measured.cover import CoverageRecorder
from lawkit.footprint.measured.recorder import Recorder
from lawkit.footprint.measured.sysmon import SysMonRecorder

FOLDER = Path(measured.__file__).parent
PATCHED = {"os", "sys", "signal", "_thread", "threading", "mon", "monitoring"}


def _protocol_members() -> set[str]:
    names = {n for n in vars(Recorder) if not n.startswith("_")}
    return names | set(Recorder.__annotations__)


@pytest.mark.parametrize("recorder", [SysMonRecorder, CoverageRecorder])
def test_each_recorder_has_every_member_of_the_protocol(recorder: type) -> None:
    members = _protocol_members()
    assert {"start", "switched_phase", "switched_regions", "executing", "thread_started",
            "forked", "save", "resume", "runs", "name", "regions", "turned_off"} <= members
    source = inspect.getsource(recorder)
    for name in members:
        assert hasattr(recorder, name) or f"self.{name}" in source, (recorder, name)


def test_the_start_up_hook_and_audit_hook_use_no_recorder_member_outside_the_protocol() -> None:
    members = _protocol_members()
    for module in ("process.py", "audit.py", "markers.py"):
        tree = ast.parse((FOLDER / module).read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id in ("_recorder", "recorder"):
                assert node.attr in members, (module, node.attr)
            if isinstance(node, ast.Compare):  # no branch on the recorder's name
                assert "name ==" not in ast.unparse(node) or "_recorder" not in \
                    ast.unparse(node), (module, ast.unparse(node))
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "getattr":
                assert "recorder" not in ast.unparse(node), (module, ast.unparse(node))


def test_every_process_wide_patch_lives_in_the_patch_module() -> None:
    for path in sorted(FOLDER.glob("*.py")):
        if path.name == "patch.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.Call) and ast.unparse(node.func) == "setattr":
                targets = [node.args[0]]
            for target in targets:
                root = target.value if isinstance(target, ast.Attribute) else target
                assert not (isinstance(target, ast.Attribute) and isinstance(root, ast.Name)
                            and root.id in PATCHED), (path.name, ast.unparse(node))
                assert not (isinstance(root, ast.Name) and root.id in PATCHED
                            and isinstance(node, ast.Call)), (path.name, ast.unparse(node))


RECORDER = ("record", "collect", "ran", "document", "regions", "units", "trees")


def test_no_docstring_of_the_recorder_points_at_a_design_section_or_an_issue() -> None:
    for path in [*FOLDER.glob("*.py"), *(FOLDER.parent / f"{n}.py" for n in RECORDER)]:
        text = path.read_text()
        assert "DESIGN" not in text and "issue " not in text.lower(), path.name
