"""Code that ran must never be `untouched`: code run from a copy of its code object (a PEP 523
frame evaluator such as TorchDynamo), a symlinked module re-pointed, hashed data files, code
compiled from its source (a JIT), threads and profilers that hide runs, other tools that share
sys.monitoring, and workers that check in late. Each test runs on every Python; what a
version cannot do is skipped."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from footprint_engine import edit, lawkit, recorded

PY = sys.executable
SYSMON = sys.version_info >= (3, 12)


def _unit(doc: dict[str, Any], path: str, name: str) -> tuple[list[str], list[str]]:
    u = doc["files"][path]["units"][name]
    return u["phases"], u["regions"]


def _verdict(engine: Path) -> str:
    result = lawkit("footprint", "diff", "fp.json", "--json", cwd=engine)
    assert result.returncode in (0, 1), result.stderr
    verdict: str = json.loads(result.stdout)["verdict"]
    return verdict


COPY_ENGINE = """\
X = 1


def step():
    return X + 1
"""
# A frame evaluator (PEP 523: TorchDynamo) runs a transformed copy of a function's code, built
# with types.CodeType or code.replace, from C: no audit event names the copy when it runs.
# ctypes' PyEval_EvalCode stands in for it (torch is not installed here).
COPY_HARNESS = """\
import ctypes, sys, types
import lawkit.footprint as fp
from atom import compiled
code = compiled.step.__code__
if sys.argv[1] == "replace":
    copy = code.replace(co_consts=code.co_consts)
else:
    copy = types.CodeType(*[getattr(code, "co_" + k) for k in (
        "argcount", "posonlyargcount", "kwonlyargcount", "nlocals", "stacksize", "flags",
        "code", "consts", "names", "varnames", "filename", "name", "qualname", "firstlineno",
        "linetable", "exceptiontable", "freevars", "cellvars")])
run = ctypes.pythonapi.PyEval_EvalCode
run.restype = ctypes.py_object
run.argtypes = [ctypes.py_object, ctypes.py_object, ctypes.py_object]
fp.phase("steps")
for i in range(3):
    with fp.region("forward_s"):
        run(copy, compiled.__dict__, compiled.__dict__)
"""


@pytest.mark.parametrize("how", ["replace", "CodeType"])
def test_a_copy_of_engine_code_run_by_a_frame_evaluator_counts_as_its_unit(
        engine: Path, how: str) -> None:
    (engine / "atom" / "compiled.py").write_text(COPY_ENGINE)
    (engine / "harness.py").write_text(COPY_HARNESS)
    result = lawkit("footprint", "record", "--out", "fp.json", "--", PY, "harness.py", how,
                    cwd=engine)
    assert result.returncode == 0, result.stderr
    doc = json.loads((engine / "fp.json").read_text())
    assert _unit(doc, "atom/compiled.py", "step") == (["steps"], ["forward_s"])
    edit(engine / "atom" / "compiled.py", "X + 1", "X + 2")
    assert _verdict(engine) == "steps"


def test_a_symlinked_module_re_pointed_is_never_untouched(engine: Path) -> None:
    (engine / "atom" / "impl_v1.py").write_text("def fast(x):\n    return x + 1\n")
    (engine / "atom" / "impl_v2.py").write_text("def fast(x):\n    return x + 2\n")
    os.symlink("impl_v1.py", engine / "atom" / "fast.py")
    doc = recorded(engine, "import lawkit.footprint as fp\nfrom atom.fast import fast\n"
                           "fp.phase('steps')\nwith fp.region('sample_s'):\n    fast(1)\n")
    phases, regions = _unit(doc, "atom/fast.py", "<module>")
    assert "steps" in phases and "sample_s" in regions
    (engine / "atom" / "fast.py").unlink()
    os.symlink("impl_v2.py", engine / "atom" / "fast.py")
    assert _verdict(engine) == "steps"


DATA_HARNESS = """\
import json, os
import lawkit.footprint as fp
import atom
here = os.path.dirname(atom.__file__)
fp.phase("steps")
with fp.region("sample_s"):
    json.load(open(os.path.join(here, "params.json")))
"""


def _hash_json(engine: Path) -> None:
    (engine / "lawkit.toml").write_text('[digest]\npackages = ["atom"]\n'
                                        'include = ["*.py", "*.json"]\n')
    (engine / "atom" / "params.json").write_text('{"scale": 2}\n')
    (engine / "atom" / "native.json").write_text('{"threads": 4}\n')


def test_a_hashed_data_file_opened_in_a_region_ran_there(engine: Path) -> None:
    _hash_json(engine)
    doc = recorded(engine, DATA_HARNESS)
    assert _unit(doc, "atom/params.json", "<module>") == (["steps"], ["sample_s"])
    edit(engine / "atom" / "params.json", "2", "3")
    assert _verdict(engine) == "steps"


def test_a_hashed_data_file_never_seen_opened_counts_as_steps(engine: Path) -> None:
    _hash_json(engine)
    doc = recorded(engine, DATA_HARNESS)
    unit = doc["files"]["atom/native.json"]["units"]["<module>"]
    assert (unit["phases"], unit["regions"], unit["assumed"]) == (["steps"], ["*"], "unseen")
    edit(engine / "atom" / "native.json", "4", "8")
    assert _verdict(engine) == "steps"


JIT_ENGINE = """\
def jit(fn):
    return lambda *a: 0


@jit
def kernel(x):
    return x + 1


def launch(x):
    return kernel(x)
"""


def test_a_function_under_a_source_compiling_decorator_counts_as_steps_when_it_changes(
        engine: Path) -> None:
    (engine / "atom" / "kern.py").write_text(JIT_ENGINE)
    doc = recorded(engine, "import lawkit.footprint as fp\nfrom atom.kern import launch\n"
                           "fp.phase('steps')\nwith fp.region('sample_s'):\n    launch(1)\n")
    unit = doc["files"]["atom/kern.py"]["units"]["kernel"]
    assert (unit["phases"], unit["regions"], unit["assumed"]) == (["steps"], ["*"], "compiled")
    assert "assumed" not in doc["files"]["atom/kern.py"]["units"]["launch"]
    edit(engine / "atom" / "kern.py", "x + 1", "x + 2")
    assert _verdict(engine) == "steps"


def test_a_command_measured_by_coverage_on_sys_monitoring_finishes(engine: Path) -> None:
    """coverage.py's sys.monitoring core calls set_events under its lock, and its PY_START
    callback takes that lock: lawkit's guard of set_events must not be code it measures."""
    (engine / "harness.py").write_text("import lawkit.footprint as fp\n"
                                       "from atom.helpers import helper\n"
                                       "fp.phase('steps')\n"
                                       "with fp.region('sample_s'):\n    helper(1)\n")
    (engine / ".coveragerc").write_text("[run]\ndata_file = cov/.coverage\n")
    result = subprocess.run(
        [PY, "-m", "lawkit", "footprint", "record", "--out", "fp.json", "--", "env",
         "COVERAGE_CORE=sysmon", PY, "-m", "coverage", "run", "harness.py"],
        cwd=engine, capture_output=True, text=True, check=False, timeout=60)
    if not SYSMON:  # coverage.py's sys.monitoring core needs 3.12: its tracer takes lawkit's
        assert result.returncode == 2 and "no hashed engine file ran" in result.stderr
        return
    assert result.returncode == 0, result.stderr
    doc = json.loads((engine / "fp.json").read_text())
    assert _unit(doc, "atom/helpers.py", "helper") == (["steps"], ["sample_s"])


DEAD_THREAD = """\
import threading
import lawkit.footprint as fp
from atom.helpers import helper
fp.phase("steps")
kept = []
def held():
    with fp.region("sample_s"):
        yield
def first():
    gen = held()
    next(gen)  # the thread ends inside the region, the generator suspended
    kept.append(gen)
def second(dead):
    if threading.get_ident() == dead:
        kept.append(helper(1))
t = threading.Thread(target=first); t.start(); t.join()
for _ in range(200):  # a thread given the dead one's ident runs the engine's code
    s = threading.Thread(target=second, args=(t.ident,)); s.start(); s.join()
    if len(kept) > 1:
        break
print(len(kept) > 1)
"""


def test_a_dead_threads_regions_do_not_pass_to_the_next_thread_with_its_ident(
        engine: Path) -> None:
    (engine / "harness.py").write_text(DEAD_THREAD)
    result = lawkit("footprint", "record", "--out", "fp.json", "--", PY, "harness.py",
                    cwd=engine)
    assert result.returncode == 0, result.stderr
    doc = json.loads((engine / "fp.json").read_text())
    if "True" not in result.stdout:
        pytest.skip("the second thread did not get the first one's ident")
    assert _unit(doc, "atom/helpers.py", "helper") == (["steps"], ["*"])


PROFILED_THREAD = """\
import cProfile, sys, threading
import lawkit.footprint as fp
from atom.helpers import helper
fp.phase("steps")
def work():
    if sys.argv[1] == "cProfile":
        cProfile.Profile().enable()
    helper(1)
if sys.argv[1] == "threading":
    threading.setprofile(lambda *a: None)
with fp.region("sample_s"):
    t = threading.Thread(target=work); t.start(); t.join()
"""


@pytest.mark.skipif(SYSMON, reason="a profiler hides a thread from coverage.py (3.11) only")
@pytest.mark.parametrize("how", ["cProfile", "threading"])
def test_a_profiler_in_a_worker_thread_is_refused_on_3_11(engine: Path, how: str) -> None:
    (engine / "harness.py").write_text(PROFILED_THREAD)
    result = lawkit("footprint", "record", "--out", "fp.json", "--", PY, "harness.py", how,
                    cwd=engine)
    assert result.returncode == 2
    assert "turned the measurement off" in result.stderr and "profile" in result.stderr


LATE = """\
import os, subprocess, sys
os.environ["LATE_PYTHON"] = sys.executable
subprocess.Popen(["perl", "-e", "sleep 1; exec $ENV{LATE_PYTHON}, 'late.py'"])
"""


@pytest.mark.skipif(shutil.which("perl") is None or not sys.platform.startswith("linux"),
                    reason="needs perl, and Linux (a child subreaper)")
def test_a_worker_that_checks_in_after_the_command_ended_is_waited_for(engine: Path) -> None:
    """perl is a program lawkit does not read: the Python it execs a second after the command
    ended must be measured (record waits for it) or refused, never left out."""
    (engine / "late.py").write_text("from atom.helpers import helper\nhelper(1)\n")
    doc = recorded(engine, "import atom.base\n" + LATE)
    assert _unit(doc, "atom/helpers.py", "helper")[0] == ["steps"]
    assert doc["processes"] == 2


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a child subreaper is Linux's")
def test_a_process_the_command_left_running_is_refused_naming_it(
        engine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lawkit.config import load_workspace
    from lawkit.footprint import record
    from lawkit.footprint.errors import RecordRefused

    monkeypatch.setattr(record, "WAIT_SECONDS", 0.3)
    (engine / "harness.py").write_text("import subprocess\nimport atom.base\n"
                                       "subprocess.Popen(['sleep', '30'])\n")
    ws = load_workspace(config=engine / "lawkit.toml")
    with pytest.raises(RecordRefused, match=r"process (\d+) \(sleep 30\) was still running") \
            as refused:
        record.record_footprint(ws, [PY, "harness.py"], engine / "fp.json", cwd=engine)
    pid = int(str(refused.value).split()[1])
    os.kill(pid, 9)
    os.waitpid(pid, 0)  # this process reaped the orphan
    assert not (engine / "fp.json").exists()
