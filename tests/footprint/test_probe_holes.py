"""Holes an outside probe found in what the recorder sees: code run on a thread created from C
while another thread is in a region (3.12+), a hashed module imported before the recorder
started (by a ``.pth`` file), and a stale timestamp ``.pyc`` that ran instead of the edited
source it is keyed to."""

from __future__ import annotations

import importlib.util
import json
import os
import py_compile
import subprocess
import sys
import time
from pathlib import Path

import pytest
from footprint_engine import record_harness, recorded

from testing.installs import measured_env
from testing.wheels import make_venv, site_packages

FROM_C = """\
import ctypes, threading
import lawkit.footprint as fp
from atom.helpers import helper

libc = ctypes.CDLL(None)
START = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)


def on_c_thread(arg):  # ctypes runs it on the thread pthread_create made: none open there
    helper(2)
    return None


start = START(on_c_thread)


def engine():
    with fp.region("sample_s"):
        helper(1)  # the only live context: turned off once it ran here
        tid = ctypes.c_ulong()
        assert libc.pthread_create(ctypes.byref(tid), None, start, None) == 0
        libc.pthread_join(tid, None)


fp.phase("steps")
thread = threading.Thread(target=engine)
thread.start()
thread.join()
"""


@pytest.mark.skipif(sys.version_info < (3, 12) or not sys.platform.startswith("linux"),
                    reason="sys.monitoring's recorder; pthread_create from glibc")
def test_code_a_thread_created_from_c_runs_with_no_region_open_counts_beyond_the_region(
        engine: Path) -> None:
    doc = recorded(engine, FROM_C)
    helper = doc["files"]["atom/helpers.py"]["units"]["helper"]
    assert helper["regions"] == ["*", "sample_s"]


TEARDOWN = """\
import threading
import lawkit.footprint as fp
from atom.helpers import helper
from atom.held import Held

local = threading.local()


def worker():
    with fp.region("sample_s"):
        helper(1)
        local.held = Held()  # freed as the thread ends, once threading no longer lists it


fp.phase("steps")
thread = threading.Thread(target=worker)
thread.start()
thread.join()
"""


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring's recorder")
def test_a_python_threads_thread_local_freed_at_its_end_is_not_taken_for_a_thread_from_c(
        engine: Path) -> None:
    (engine / "atom" / "held.py").write_text(
        "class Held:\n    def __del__(self):\n        self.gone = True\n")
    doc = recorded(engine, TEARDOWN)
    assert doc["files"]["atom/held.py"]["units"]["Held.__del__"]["phases"] == ["steps"]
    assert doc["files"]["atom/helpers.py"]["units"]["helper"]["regions"] == ["sample_s"]


BEFORE = """\
import lawkit.footprint as fp
from atom.helpers import helper

fp.phase("steps")
with fp.region("sample_s"):
    helper(1)
"""


@pytest.mark.skipif(sys.version_info < (3, 12),
                    reason="the bare venv holds no coverage.py, which 3.11's recorder needs")
def test_a_hashed_module_a_pth_file_imports_before_the_recorder_counts_as_run_everywhere(
        engine: Path, tmp_path: Path) -> None:
    python = make_venv(tmp_path / "venv")
    (site_packages(python.parent.parent) / "early.pth").write_text(
        f"import sys; sys.path.insert(0, {str(engine)!r}); import atom.helpers\n")
    (engine / "harness.py").write_text(BEFORE)
    result = subprocess.run([sys.executable, "-m", "lawkit", "footprint", "record", "--out",
                             "fp.json", "--", str(python), "harness.py"], cwd=engine,
                            env=measured_env(), capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    doc = json.loads((engine / "fp.json").read_text())
    # its code was never armed: helper ran in sample_s unseen, so it counts in every context
    helper = doc["files"]["atom/helpers.py"]["units"]["helper"]
    assert helper["phases"] == ["startup", "steps"]
    assert {"*", "sample_s"} <= set(helper["regions"])


def test_a_stale_timestamp_pyc_that_ran_instead_of_its_edited_source_is_refused(
        engine: Path) -> None:
    module = engine / "atom" / "stale.py"
    module.write_text("def value():\n    return 1\n")
    py_compile.compile(str(module), cfile=importlib.util.cache_from_source(str(module)),
                       invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    kept = module.stat()
    time.sleep(0.05)
    module.write_text("def value():\n    return 2\n")  # same size, and its time set back
    os.utime(module, ns=(kept.st_atime_ns, kept.st_mtime_ns))
    result = record_harness(engine, "from atom.stale import value\nassert value() == 1\n")
    assert result.returncode == 2, result.stderr
    assert "atom/stale.py ran from a .pyc built from other source" in result.stderr


def test_a_pyc_written_from_the_source_on_disk_is_not_refused(engine: Path) -> None:
    module = engine / "atom" / "fresh.py"
    module.write_text("def value():\n    return 1\n")
    py_compile.compile(str(module), cfile=importlib.util.cache_from_source(str(module)),
                       invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    os.chmod(module, 0o644)  # a change of the source's inode after the .pyc, not of its code
    result = record_harness(engine, "from atom.fresh import value\nassert value() == 1\n")
    assert result.returncode == 0, result.stderr
