"""The recorder of `lawkit footprint record`: sys.monitoring on
Python 3.12+ and coverage.py on 3.11, attribution, regions, every process or none, and code that
runs but is not hashed. Each test runs on every Python; what a version cannot do is skipped."""

from __future__ import annotations

import json
import os
import py_compile
import re
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest
from footprint_engine import lawkit, record_harness, recorded

from lawkit.footprint.document import Footprint
from lawkit.footprint.record import summary

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
SYSMON = sys.version_info >= (3, 12)
needs_sysmon = pytest.mark.skipif(not SYSMON, reason="sys.monitoring is Python 3.12+")
needs_coverage = pytest.mark.skipif(SYSMON, reason="coverage.py records on Python 3.11 only")


_record = record_harness
_recorded = recorded


def _unit(doc: dict[str, Any], path: str, name: str) -> tuple[list[str], list[str]]:
    u = doc["files"][path]["units"][name]
    return u["phases"], u["regions"]


def test_the_recorder_is_sys_monitoring_on_3_12_and_coverage_saying_so_on_3_11(
        engine: Path) -> None:
    result = _record(engine, "import atom.base\n")
    assert result.returncode == 0, result.stderr
    doc = json.loads((engine / "fp.json").read_text())
    assert doc["python"] == ".".join(map(str, sys.version_info[:3]))
    if SYSMON:
        assert doc["recorder"] == "sys.monitoring" and result.stderr == ""
    else:
        assert doc["recorder"] == "coverage"
        assert "inflates step times" in result.stderr and "3.12+" in result.stderr
        assert not re.search(r"\d\.\d+x", result.stderr)  # no run figure in a message


def test_a_def_on_a_files_first_line_is_not_credited_when_only_the_module_ran(
        engine: Path) -> None:
    (engine / "atom" / "first.py").write_text("def first(x):\n    return x\n\n\nLATER = 1\n")
    (engine / "atom" / "one.py").write_text("def one(): return 1\nTWO = 2\n")
    doc = _recorded(engine, "import atom.first, atom.one\n")
    assert _unit(doc, "atom/first.py", "first") == ([], [])
    assert _unit(doc, "atom/one.py", "one") == ([], [])
    assert _unit(doc, "atom/first.py", "<module>")[0] == ["startup"]
    doc = _recorded(engine, "import atom.first, atom.one\natom.first.first(1)\natom.one.one()\n")
    assert _unit(doc, "atom/first.py", "first")[0] == ["startup"]
    assert _unit(doc, "atom/one.py", "one")[0] == ["startup"]


def test_nested_code_lambdas_and_genexprs_count_for_the_unit_that_holds_them(
        engine: Path) -> None:
    (engine / "atom" / "nest.py").write_text(
        "SQUARE = lambda x: x * x\n"
        "\n"
        "def outer(xs):\n"
        "    def inner(x):\n"
        "        return x + 1\n"
        "    return sum(inner(x) for x in xs)\n"
        "\n"
        "class K:\n"
        "    ITEMS = [i for i in range(3)]\n"
        "    def method(self):\n"
        "        return 1\n")
    doc = _recorded(engine, "import lawkit.footprint\nfrom atom.nest import SQUARE, outer\n"
                            "lawkit.footprint.phase('steps')\nSQUARE(2)\nouter([1, 2])\n")
    assert _unit(doc, "atom/nest.py", "<module>") == (["startup", "steps"], ["*"])
    assert _unit(doc, "atom/nest.py", "outer") == (["steps"], ["*"])
    assert _unit(doc, "atom/nest.py", "K") == (["startup"], [])
    assert _unit(doc, "atom/nest.py", "K.method") == ([], [])


REGIONS = """\
import threading
import lawkit.footprint as fp
from atom.helpers import helper
from atom.util import util_fn
from atom.worker import work
from atom.gen import numbers, loop

fp.phase("steps")
gen = numbers()
with fp.region("outer"):
    with fp.region("sample_s"):
        helper(1)
        next(gen)
with fp.region("schedule_s"):
    next(gen)
    t = threading.Thread(target=util_fn, args=(1,))
    t.start(); t.join()
loop()
work(2)
"""
GEN = """\
import lawkit.footprint as fp


def numbers():
    yield 1
    yield 2


def spin():
    return 0


def loop():
    for i in range(2):
        with fp.region("tick_s"):
            spin()
"""


def test_regions_are_recorded_per_unit_per_thread_with_generators_and_running_frames(
        engine: Path) -> None:
    (engine / "atom" / "gen.py").write_text(GEN)
    doc = _recorded(engine, REGIONS)
    assert _unit(doc, "atom/helpers.py", "helper") == (["steps"], ["outer", "sample_s"])
    # a generator resumed in another region runs there too
    assert _unit(doc, "atom/gen.py", "numbers") == (["steps"], ["outer", "sample_s",
                                                               "schedule_s"])
    # another thread has no region open: its code counts for every law
    assert "*" in _unit(doc, "atom/util.py", "util_fn")[1]
    assert _unit(doc, "atom/worker.py", "work") == (["steps"], ["*"])
    # a frame already running when a region opens counts in it
    assert _unit(doc, "atom/gen.py", "loop") == (["steps"], ["*", "tick_s"])
    assert _unit(doc, "atom/gen.py", "spin") == (["steps"], ["tick_s"])
    assert doc["regions"] == ["*", "outer", "sample_s", "schedule_s", "tick_s"]
    assert _unit(doc, "atom/helpers.py", "<module>") == (["startup"], [])


def test_an_idle_thread_with_no_region_open_does_not_put_the_main_threads_code_in_every_region(
        engine: Path) -> None:
    """A pool's handler threads (or the capture writer's flusher) have no region open; on 3.11,
    where coverage.py's context is process-wide, they once put every unit in "*"."""
    doc = _recorded(engine, "import threading\nimport lawkit.footprint as fp\n"
                            "from atom.helpers import helper\nfrom atom.worker import work\n"
                            "go, done = threading.Event(), threading.Event()\n"
                            "def idle():\n"
                            "    go.wait()\n"
                            "    work(1)\n"
                            "    done.set()\n"
                            "threading.Thread(target=idle, daemon=True).start()\n"
                            "fp.phase('steps')\n"
                            "with fp.region('sample_s'):\n"
                            "    helper(1)\n"
                            "go.set()\n"
                            "done.wait()\n")
    assert _unit(doc, "atom/helpers.py", "helper") == (["steps"], ["sample_s"])
    assert _unit(doc, "atom/worker.py", "work") == (["steps"], ["*"])


CROSS_THREAD = """\
import sys, threading
import lawkit.footprint as fp
from atom.helpers import helper
fp.phase("steps")
ready, go = threading.Event(), threading.Event()
def other():
    if sys.argv[1] == "region":
        with fp.region("schedule_s"):
            ready.set(); go.wait(); helper(2)
    else:
        ready.set(); go.wait(); helper(2)
t = threading.Thread(target=other); t.start()
ready.wait()
with fp.region("sample_s"):
    helper(1)
    go.set()
    t.join()
"""


@pytest.mark.parametrize(("mode", "regions"), [("region", ["sample_s", "schedule_s"]),
                                               ("none", ["*", "sample_s"])])
def test_a_unit_run_by_two_threads_in_two_contexts_counts_in_both(
        engine: Path, mode: str, regions: list[str]) -> None:
    """sys.monitoring's DISABLE turns a code object's event off for every thread: the first
    thread's run in sample_s must not hide the second's in schedule_s (or in no region)."""
    (engine / "harness.py").write_text(CROSS_THREAD)
    result = lawkit("footprint", "record", "--out", "fp.json", "--", PY, "harness.py", mode,
                    cwd=engine)
    assert result.returncode == 0, result.stderr
    doc = json.loads((engine / "fp.json").read_text())
    assert _unit(doc, "atom/helpers.py", "helper") == (["steps"], regions)


def test_a_thread_started_inside_a_region_counts_its_code_in_no_region(engine: Path) -> None:
    """The thread starts after the last switch, with no region open, and runs code the main
    thread already ran (and disabled) in sample_s."""
    doc = _recorded(engine, "import threading\nimport lawkit.footprint as fp\n"
                            "from atom.helpers import helper\nfp.phase('steps')\n"
                            "with fp.region('sample_s'):\n"
                            "    helper(1)\n"
                            "    t = threading.Thread(target=helper, args=(2,))\n"
                            "    t.start(); t.join()\n"
                            "    helper(3)\n")
    assert _unit(doc, "atom/helpers.py", "helper") == (["steps"], ["*", "sample_s"])


@pytest.mark.parametrize("resume", ["g.throw(KeyError())", "g.close()"])
def test_a_generator_resumed_by_throw_or_close_runs_in_the_region_that_resumed_it(
        engine: Path, resume: str) -> None:
    """``throw`` and ``close`` fire PY_THROW, not PY_RESUME."""
    (engine / "atom" / "gen.py").write_text("def worker():\n"
                                            "    try:\n"
                                            "        yield 1\n"
                                            "    except KeyError:\n"
                                            "        yield 2\n"
                                            "    finally:\n"
                                            "        pass\n")
    doc = _recorded(engine, "import lawkit.footprint as fp\nfrom atom.gen import worker\n"
                            "fp.phase('steps')\n"
                            "with fp.region('sample_s'):\n"
                            "    g = worker(); next(g)\n"
                            "with fp.region('schedule_s'):\n"
                            f"    {resume}\n")
    assert _unit(doc, "atom/gen.py", "worker") == (["steps"], ["sample_s", "schedule_s"])


def test_a_forked_child_starts_in_steps_with_no_region_open(engine: Path) -> None:
    doc = _recorded(engine, "import os\nimport lawkit.footprint as fp\n"
                            "from atom.worker import work\nfp.phase('steps')\n"
                            "with fp.region('sample_s'):\n"
                            "    pid = os.fork()\n"
                            "    if pid == 0:\n"
                            "        work(1)\n"
                            "        os._exit(0)\n"
                            "    os.waitpid(pid, 0)\n")
    assert _unit(doc, "atom/worker.py", "work") == (["steps"], ["*"])


def test_a_thread_from_thread_start_new_thread_is_recorded(engine: Path) -> None:
    doc = _recorded(engine, "import _thread, time\nfrom atom.worker import work\n"
                            "done = []\n"
                            "_thread.start_new_thread(lambda: done.append(work(2)), ())\n"
                            "while not done:\n"
                            "    time.sleep(0.01)\n")
    assert _unit(doc, "atom/worker.py", "work")[0] == ["startup"]


@needs_sysmon
def test_settrace_none_does_not_blind_sys_monitoring(engine: Path) -> None:
    doc = _recorded(engine, "import sys\nsys.settrace(None)\nfrom atom.worker import work\n"
                            "work(1)\n")
    assert _unit(doc, "atom/worker.py", "work")[0] == ["startup"]


@needs_coverage
def test_settrace_none_under_coverage_is_refused(engine: Path) -> None:
    result = _record(engine, "import sys\nt = sys.gettrace()\nsys.settrace(None)\n"
                             "from atom.worker import work\nwork(1)\nsys.settrace(t)\n")
    assert result.returncode == 2
    assert "turned the measurement off (sys.settrace(None))" in result.stderr
    assert not (engine / "fp.json").exists()


@needs_sysmon
@pytest.mark.parametrize("call", ["set_events(4, 0)", "free_tool_id(4)",
                                  "register_callback(4, sys.monitoring.events.PY_START, None)"])
def test_turning_sys_monitoring_off_is_refused_even_when_restored(engine: Path,
                                                                  call: str) -> None:
    result = _record(engine, f"import sys\nsys.monitoring.{call}\nimport atom.base\n")
    assert result.returncode == 2
    assert "turned the measurement off (sys.monitoring." in result.stderr
    assert not (engine / "fp.json").exists()


@pytest.mark.parametrize("how, why", [
    ("env={'PATH': os.environ['PATH']}", "lacks LAWKIT_FOOTPRINT_DIR"),
    ("env={**os.environ, 'PYTHONPATH': ''}", "PYTHONPATH that lacks"),
])
def test_a_python_child_without_the_recordings_environment_is_refused_naming_it(
        engine: Path, how: str, why: str) -> None:
    result = _record(engine, "import os, subprocess, sys\n"
                             "subprocess.run([sys.executable, '-c', 'import atom.util'], "
                             f"{how}, check=True)\n")
    assert result.returncode == 2
    assert "started a Python child that cannot be measured" in result.stderr
    assert "-c import atom.util" in result.stderr and why in result.stderr


@pytest.mark.parametrize("flag", ["-S", "-I", "-E", "-sE"])
def test_a_python_child_started_with_an_isolating_flag_is_refused(engine: Path,
                                                                  flag: str) -> None:
    result = _record(engine, "import subprocess, sys\n"
                             f"subprocess.run([sys.executable, {flag!r}, '-c', "
                             "'import os, sys; sys.path.insert(0, os.getcwd()); "
                             "import atom.util; os._exit(0)'], check=True)\n")
    assert result.returncode == 2, result.stderr
    assert f"{flag} -c import os, sys" in result.stderr
    assert f"started with -{flag[-1]}" in result.stderr


def test_a_python_child_by_os_system_that_never_checked_in_is_refused(engine: Path) -> None:
    other = engine / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("")  # shadows the recording's start-up hook
    result = _record(engine, "import os, sys\n"
                             f"os.environ['PYTHONPATH'] = {str(other)!r} + os.pathsep + "
                             "os.environ['PYTHONPATH']\n"
                             "assert os.system(f'{sys.executable} -c \"import atom.util\"') == 0\n")
    assert result.returncode == 2
    assert "never checked in" in result.stderr and "import atom.util" in result.stderr


def test_a_non_python_child_is_not_asked_to_check_in(engine: Path) -> None:
    doc = _recorded(engine, "import subprocess\nimport atom.base\n"
                            "subprocess.run(['true'], env={}, check=True)\n")
    assert doc["processes"] == 1


@pytest.mark.parametrize("runs", [1, pytest.param(20, marks=[pytest.mark.slow,
                                                              pytest.mark.stress])])
@pytest.mark.parametrize("method", ["spawn", "forkserver", "fork"])
def test_pools_record_every_time(engine: Path, method: str, runs: int) -> None:
    script = ("import multiprocessing\nfrom atom.worker import work\n"
              "if __name__ == '__main__':\n"
              f"    with multiprocessing.get_context({method!r}).Pool(2) as pool:\n"
              "        assert pool.map(work, range(4)) == [0, 1, 4, 9]\n")
    for _ in range(runs):
        doc = _recorded(engine, script)
        assert _unit(doc, "atom/worker.py", "work")[0] == ["steps"]


@pytest.mark.parametrize("runs", [1, pytest.param(6, marks=pytest.mark.stress)])
def test_the_tutorial_harness_records_every_time(tmp_path: Path, runs: int) -> None:
    # Its regions switch while its capture, its worker process and multiprocessing's threads
    # run: walking every thread's frames at each switch (sys._current_frames()) crashed
    # CPython 3.12.1 with SIGSEGV in about every other run ("deallocated BytesIO object has
    # exported buffers").
    shutil.copytree(REPO / "examples" / "engine", tmp_path / "engine")
    (tmp_path / "lawkit.toml").write_text('laws = "laws"\n\n[digest]\nroot = "engine"\n'
                                          'packages = ["atom"]\n')
    for _ in range(runs):
        shutil.rmtree(tmp_path / "captures", ignore_errors=True)
        result = lawkit("footprint", "record", "--out", "fp.json", "--", PY,
                        "engine/run_steps.py", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        doc = json.loads((tmp_path / "fp.json").read_text())
        assert doc["regions"] == ["*", "prepare_inputs_s", "process_model_outputs_s", "sampler_s",
                                  "schedule_s"]


def _harness_importing(name: str) -> str:
    return f"import atom.base\nimport {name}\n"


def test_a_py_file_excluded_from_the_digest_that_runs_is_refused(engine: Path) -> None:
    (engine / "lawkit.toml").write_text('[digest]\npackages = ["atom"]\n'
                                        'exclude = ["atom/extra.py"]\n')
    (engine / "atom" / "extra.py").write_text("X = 1\n")
    result = _record(engine, _harness_importing("atom.extra"))
    assert result.returncode == 2
    assert "atom/extra.py ran from inside a hashed package" in result.stderr


PYK_LOADER = """\
import importlib.abc, importlib.util, os, sys
import atom


class PykLoader(importlib.abc.Loader):
    def __init__(self, path):
        self.path = path

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        with open(self.path) as f:
            exec(compile(f.read(), self.path, "exec"), module.__dict__)


path = os.path.join(atom.__path__[0], "plugin.pyk")
spec = importlib.util.spec_from_file_location("atom.plugin", path, loader=PykLoader(path))
module = sys.modules["atom.plugin"] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
"""


def test_a_module_from_a_custom_loader_is_refused_naming_it(engine: Path) -> None:
    (engine / "atom" / "plugin.pyk").write_text("X = 1\n")
    result = _record(engine, PYK_LOADER)
    assert result.returncode == 2, result.stderr
    assert "atom/plugin.pyk ran from inside a hashed package" in result.stderr
    assert "another loader" in result.stderr


def test_a_sourceless_pyc_is_refused_naming_it(engine: Path) -> None:
    src = engine / "atom" / "gone.py"
    src.write_text("X = 1\n")
    py_compile.compile(str(src), cfile=str(engine / "atom" / "gone.pyc"))
    src.unlink()
    result = _record(engine, _harness_importing("atom.gone"))
    assert result.returncode == 2
    assert "atom/gone.pyc ran from inside a hashed package" in result.stderr


def test_an_unchecked_hash_pyc_of_other_source_is_refused(engine: Path) -> None:
    src = engine / "atom" / "util.py"
    hashed = src.read_text()
    src.write_text("def util_fn(x):\n    return x * 43\n")
    py_compile.compile(str(src), invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    src.write_text(hashed)
    result = _record(engine, "from atom.util import util_fn\nassert util_fn(1) == 43\n")
    assert result.returncode == 2, result.stderr
    assert "atom/util.py ran from an unchecked-hash .pyc" in result.stderr


def test_a_native_extension_inside_the_package_is_listed_as_unhashed(engine: Path) -> None:
    import _bisect

    built = getattr(_bisect, "__file__", None)
    if built is None:
        pytest.skip("_bisect is built into this Python")
    name = os.path.basename(built)
    shutil.copyfile(built, engine / "atom" / name)
    doc = _recorded(engine, _harness_importing("atom._bisect"))
    assert doc["unhashed"] == [f"atom/{name}"]
    assert name.endswith(sysconfig.get_config_var("EXT_SUFFIX"))


def _footprint(phases: list[tuple[str, ...]], processes: int) -> Footprint:
    from lawkit.footprint.document import FileRecord, UnitRecord

    units = {f"u{i}": UnitRecord("d", p) for i, p in enumerate(phases)}
    return Footprint("atom", "x", (), processes, {"a.py": FileRecord("s", units)})


def test_the_summary_says_what_a_person_would() -> None:
    both, start, steps = ("startup", "steps"), ("startup",), ("steps",)
    assert summary(_footprint([both] * 6 + [start], 1)) == \
        "7 units ran: 7 at start-up, 6 of them also in steps; 1 process"
    assert summary(_footprint([both, start, steps, steps, ()], 4)) == \
        "4 units ran: 2 at start-up, 1 of them also in steps, 2 only in steps; 4 processes"
    assert summary(_footprint([both], 2)) == "1 unit ran: 1 at start-up, also in steps; " \
        "2 processes"
    assert summary(_footprint([steps], 1)) == "1 unit ran: 1 in steps; 1 process"
    assert summary(_footprint([both, both], 1)) == \
        "2 units ran: 2 at start-up, all of them also in steps; 1 process"


def test_an_exec_into_python_with_s_is_refused_naming_it(engine: Path) -> None:
    result = _record(engine, "import os, sys\nimport atom.base\n"
                             "os.execv(sys.executable, [sys.executable, '-S', '-c', "
                             "'import atom.util'])\n")
    assert result.returncode == 2
    assert "-S -c import atom.util" in result.stderr and "started with -S" in result.stderr
