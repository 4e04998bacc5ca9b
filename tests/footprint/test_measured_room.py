"""The rules of `lawkit.footprint.measured`, the code that runs inside the engine's processes:
the standard library only, nothing imported after start-up, no module ``global``, no ``id()``,
and what the process keeps on one object a test can build and drop."""

from __future__ import annotations

import ast
import gc
import json
import subprocess
import sys
import weakref
from pathlib import Path

import pytest
from footprint_engine import recorded

import lawkit.footprint.measured as measured
from lawkit.footprint.measured import sitehook
from lawkit.footprint.measured.markers import Markers
from lawkit.footprint.measured.process import MeasuredProcess

ROOM = Path(measured.__file__).parent
CAPTURE = ROOM.parents[1] / "capture"
RECORDERS = {"coverage": {"cover.py", "process.py"}}
"""Outside the standard library, only coverage.py, and only where the 3.11 recorder uses it."""
needs_sysmon = pytest.mark.skipif(sys.version_info < (3, 12),
                                  reason="the process object's recorder is sys.monitoring here")


def _modules(folder: Path) -> list[tuple[Path, ast.Module]]:
    return [(p, ast.parse(p.read_text(encoding="utf-8"))) for p in sorted(folder.glob("*.py"))]


def test_the_room_imports_only_the_standard_library_and_itself_lazily_too() -> None:
    wrong = []
    for path, tree in _modules(ROOM):
        for node in ast.walk(tree):  # top-level, lazy and TYPE_CHECKING imports alike
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "__future__" \
                        or name.startswith("lawkit.footprint.measured") \
                        or path.name in RECORDERS.get(top, ()):
                    continue
                wrong.append(f"{path.name}:{node.lineno} imports {name}")
    assert wrong == []


def test_the_packages_above_the_room_import_nothing_but_the_room() -> None:
    # importing lawkit.footprint.measured runs lawkit's and lawkit.footprint's __init__ first
    footprint_init = ast.parse((ROOM.parent / "__init__.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(footprint_init) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"lawkit.footprint.measured.markers", "__future__"}
    code = ("import sys\nimport lawkit.footprint.measured.process\n"
            "print('\\n'.join(m for m in sys.modules if m.split('.')[0] in ('lawkit', "
            "'src_digest')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert all(m.startswith(("lawkit.footprint.measured", "lawkit._version"))
               or m in ("lawkit", "lawkit.footprint") for m in result.stdout.split()), \
        result.stdout


def test_no_module_of_the_room_calls_id() -> None:
    """``id()`` raises the ``builtins.id`` audit event, a call of every audit hook, ours among
    them, per use (the 3.11 recorder's profile hook called it for every hashed call)."""
    for path, tree in _modules(ROOM):
        calls = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id == "id"]
        assert not calls, (path.name, calls)


@pytest.mark.parametrize("folder", [ROOM, CAPTURE], ids=["measured", "capture"])
def test_no_module_of_the_room_or_the_capture_writer_rebinds_a_module_name(folder: Path) -> None:
    for path, tree in _modules(folder):
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Global)], path.name
        bound: list[str] = []
        for node in tree.body:
            if isinstance(node, ast.Assign):
                bound += [t.id for t in node.targets if isinstance(t, ast.Name)]
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and \
                    isinstance(node.target, ast.Name):
                bound.append(node.target.id)
        assert len(bound) == len(set(bound)), (path.name, sorted(bound))


IMPORTS_AFTER_START = """\
import os, queue, signal, sys, threading, warnings
import lawkit.footprint as fp
from atom.helpers import helper
from atom.util import util_fn

log = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_APPEND)


def imported(event, args):
    # every module loaded from here on, by the engine or by the recorder, and in a forked
    # child too: the import lock or a module half-imported at fork time would hang it
    if event == "import":
        os.write(log, f"{os.getpid()} {args[0]}\\n".encode())


sys.addaudithook(imported)
# a fork beside the recorder's SIGTERM watch thread warns (3.12+), and a warning shown reads the
# source line (linecache): the harness's own import, not the recorder's
warnings.simplefilter("ignore", DeprecationWarning)
signal.signal(signal.SIGUSR1, lambda *a: helper(3))


def engine(jobs, done):
    while (job := jobs.get()) is not None:
        with fp.region("forward_s"):
            helper(job)
            gen = (util_fn(i) for i in range(2))
            next(gen)
        done.put(job)


jobs, done = queue.Queue(), queue.Queue()
with fp.region("warm_s"):
    helper(0)
fp.phase("steps")
thread = threading.Thread(target=engine, args=(jobs, done))
thread.start()
for step in range(3):
    jobs.put(step)
    done.get()
os.kill(os.getpid(), signal.SIGUSR1)
pid = os.fork()
if pid == 0:
    with fp.region("child_s"):
        helper(4)
    os._exit(0)
os.waitpid(pid, 0)
jobs.put(None)
thread.join()
fp.phase("shutdown")
"""


def test_a_recorded_process_imports_nothing_after_its_start_up_steps_threads_forks_and_exit(
        engine: Path, tmp_path: Path) -> None:
    log = tmp_path / "imports.log"
    doc = recorded(engine, IMPORTS_AFTER_START.replace("sys.argv[1]", repr(str(log))))
    assert doc["processes"] == 2
    assert doc["files"]["atom/helpers.py"]["units"]["helper"]["regions"] == [
        "*", "child_s", "forward_s"]
    assert not log.exists() or log.read_text() == ""


def _hook_free_process(folder: Path, markers: Markers) -> MeasuredProcess:
    return MeasuredProcess(str(folder), main=True, hook=sitehook, site=str(folder),
                           roots=(), names=(), needed={}, markers=markers)


def test_a_process_object_is_built_and_dropped_leaving_nothing_behind(tmp_path: Path) -> None:
    markers = Markers()
    folder = tmp_path / "rec"
    folder.mkdir()
    process = _hook_free_process(folder, markers)
    assert process.phase == "startup" and process.recorder is None and not process.saving
    process.save()  # not installed: nothing to save, nothing written
    assert list(folder.iterdir()) == []
    gone = weakref.ref(process)
    del process
    gc.collect()
    assert gone() is None  # no module of the room kept it
    assert markers.recorder is None and markers.phase == "startup"


INSTALLED_BY_HAND = """\
import json, os, sys
from lawkit.footprint.measured import sitehook
from lawkit.footprint.measured.markers import MARKERS, phase, region
from lawkit.footprint.measured.process import MeasuredProcess

folder, root = sys.argv[1], sys.argv[2]
os.makedirs(os.path.join(folder, "markers"))
process = MeasuredProcess(folder, main=True, hook=sitehook, site=folder, roots=(root,),
                          names=("atom",), needed={})
process.install()
assert MARKERS.recorder is process.recorder
from atom.helpers import helper
phase("steps")
with region("sample_s"):
    helper(1)
"""


@needs_sysmon
def test_a_process_object_installed_by_hand_records_its_process_and_saves_at_exit(
        engine: Path, tmp_path: Path) -> None:
    folder = tmp_path / "rec"
    subprocess.run([sys.executable, "-c", INSTALLED_BY_HAND, str(folder),
                    str((engine / "atom").resolve())], cwd=engine, check=True)
    [done] = (folder / "markers").glob("*.done")
    saved = json.loads(done.read_text())
    ran = {(Path(f).name, q, p, tuple(r)) for f, q, _, p, r in saved["runs"]}
    assert ("helpers.py", "helper", "steps", ("sample_s",)) in ran
    assert "atom.helpers" not in saved["environment"]["before_recorder"]
    assert "lawkit.footprint.measured.process" in saved["environment"]["before_recorder"]
