"""`lawkit footprint record`: the file it writes, and every refusal (exit 2, nothing written)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from footprint_engine import lawkit

from lawkit.footprint.units import NORMAL

PY = sys.executable


def _record(engine: Path, *command: str,
            out: str = "fp.json") -> subprocess.CompletedProcess[str]:
    return lawkit("footprint", "record", "--out", out, "--", *command, cwd=engine)


def test_record_writes_the_schema_of_section_11_with_sorted_keys(engine: Path) -> None:
    result = _record(engine, PY, "run.py")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("fp.json: 21 units ran: 11 at start-up, 3 of them also in "
                                    "steps, 10 only in steps; 4 processes; atom=")
    text = (engine / "fp.json").read_text()
    doc = json.loads(text)
    assert text == json.dumps(doc, sort_keys=True, indent=1, ensure_ascii=False) + "\n"
    assert set(doc) == {"schema", "key", "digest", "command", "processes", "files", "recorder",
                        "python", "regions", "unhashed", "unregioned_threads", "environment",
                        "configuration"}
    assert doc["schema"] == "lawkit-footprint/3"
    assert doc["key"] == "atom" and doc["command"] == [PY, "run.py"]
    digest = lawkit("digest", cwd=engine).stdout.strip()
    assert doc["digest"] == digest
    assert sorted(doc["files"]) == ["atom/__init__.py", "atom/base.py", "atom/helpers.py",
                                    "atom/runner.py", "atom/util.py", "atom/worker.py"]
    base = doc["files"]["atom/base.py"]
    assert set(base) == {"sha256", "units"}
    assert set(base["units"]["only_defined"]) == {"digest", "phases", "regions",
                                                  "startup_regions", "code", "normal"}
    assert base["units"]["only_defined"]["normal"] == NORMAL
    assert base["units"]["only_defined"]["phases"] == []
    assert base["units"]["<module>"]["phases"] == ["startup"]


def test_record_gzips_a_file_named_gz(engine: Path) -> None:
    assert _record(engine, PY, "run.py", out="fp.json.gz").returncode == 0
    doc = json.loads(gzip.decompress((engine / "fp.json.gz").read_bytes()))
    assert doc["schema"] == "lawkit-footprint/3"
    assert lawkit("footprint", "diff", "fp.json.gz", cwd=engine).returncode == 0


def test_record_refuses_a_command_that_fails(engine: Path) -> None:
    result = _record(engine, PY, "-c", "import atom.base; raise SystemExit(3)")
    assert result.returncode == 2
    assert "exited with status 3" in result.stderr
    assert not (engine / "fp.json").exists()


def test_record_refuses_a_worker_killed_with_sigkill_naming_it(engine: Path) -> None:
    (engine / "kill.py").write_text(
        "import multiprocessing, os, signal\n"
        "from atom.worker import work\n"
        "def die(x):\n"
        "    work(x)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
        "if __name__ == '__main__':\n"
        "    p = multiprocessing.get_context('fork').Process(target=die, args=(1,))\n"
        "    p.start(); p.join()\n")
    result = _record(engine, PY, "kill.py")
    assert result.returncode == 2
    assert "left no data" in result.stderr and "kill.py" in result.stderr
    assert not (engine / "fp.json").exists()


def test_record_refuses_when_nothing_hashed_ran(engine: Path) -> None:
    result = _record(engine, PY, "-c", "print('no engine here')")
    assert result.returncode == 2
    assert "no hashed engine file ran" in result.stderr
    assert not (engine / "fp.json").exists()


def test_record_refuses_an_installed_copy_of_the_engine_running_instead(
        engine: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "site"
    shutil.copytree(engine / "atom", elsewhere / "atom")
    code = f"import sys; sys.path.insert(0, {str(elsewhere)!r}); import atom.base"
    result = _record(engine, PY, "-c", code)
    assert result.returncode == 2
    assert f"{elsewhere}/atom/" in result.stderr and "not a hashed engine file" in result.stderr
    assert not (engine / "fp.json").exists()


def test_a_spawned_worker_and_an_exec_are_measured_as_steps(engine: Path) -> None:
    (engine / "spawn.py").write_text(
        "import multiprocessing, os, sys\n"
        "from atom.worker import work\n"
        "if __name__ == '__main__':\n"
        "    with multiprocessing.get_context('spawn').Pool(1) as pool:\n"
        "        pool.map(work, [1])\n"
        "    os.execv(sys.executable, [sys.executable, '-c', "
        "'from atom.util import util_fn; util_fn(1)'])\n")
    result = _record(engine, PY, "spawn.py")
    assert result.returncode == 0, result.stderr
    doc = json.loads((engine / "fp.json").read_text())
    assert doc["files"]["atom/worker.py"]["units"]["work"]["phases"] == ["steps"]
    assert doc["files"]["atom/worker.py"]["units"]["<module>"]["phases"] == ["startup",
                                                                            "steps"]
    assert doc["files"]["atom/util.py"]["units"]["util_fn"]["phases"] == ["startup"]


@pytest.mark.parametrize("exec_line", [
    # raises ValueError once the exec's save began: what ran after it went unsaved (3.12: a
    # unit run in steps recorded as not run) or broke the engine (3.11)
    "os.execv('/bin/true', [])",
    # its Python child was noted twice (before the save and at the os.exec audit event) and
    # forgotten once: record refused it as 'a Python child that never checked in'
    "os.execv('/nonexistent/python3', ['python3', '-c', 'pass'])",
], ids=["bad-argument", "no-such-python"])
def test_a_failed_exec_leaves_the_process_measured_and_no_child(engine: Path,
                                                                 exec_line: str) -> None:
    (engine / "badexec.py").write_text(
        "import os\n"
        "import lawkit.footprint as fp\n"
        "from atom.util import util_fn\n"
        "fp.phase('steps')\n"
        "try:\n"
        f"    {exec_line}\n"
        "except (OSError, ValueError):\n"
        "    pass\n"
        "util_fn(1)\n")
    result = _record(engine, PY, "badexec.py")
    assert result.returncode == 0, result.stderr
    doc = json.loads((engine / "fp.json").read_text())
    assert doc["files"]["atom/util.py"]["units"]["util_fn"]["phases"] == ["steps"]


def test_phase_is_a_no_op_outside_a_recording() -> None:
    import lawkit.footprint

    lawkit.footprint.phase("steps")
    with pytest.raises(ValueError, match="phase must be one of"):
        lawkit.footprint.phase("warmup")


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_a_worker_whose_sigterm_is_taken_by_another_thread_still_ends(engine: Path,
                                                                      method: str) -> None:
    # The recorder saves on SIGTERM with a Python handler, which CPython runs in the main thread
    # between bytecodes. A SIGTERM that another thread's C handler takes (or one that lands just
    # before the main thread blocks) leaves a main thread waiting on a lock for ever: a pool
    # worker idle on its queue's lock never ended, and Pool.terminate() hung in join.
    (engine / "term.py").write_text(
        "import multiprocessing, signal, sys, threading, time\n"
        "from atom.worker import work\n"
        "def child(lock):\n"
        "    work(2)\n"
        "    def poke():\n"
        "        time.sleep(0.2)\n"
        "        signal.pthread_kill(threading.get_ident(), signal.SIGTERM)\n"
        "    threading.Thread(target=poke, daemon=True).start()\n"
        "    lock.acquire()  # never released: only SIGTERM ends this process\n"
        "if __name__ == '__main__':\n"
        f"    context = multiprocessing.get_context({method!r})\n"
        "    lock = context.Semaphore(0)\n"
        "    worker = context.Process(target=child, args=(lock,))\n"
        "    worker.start()\n"
        "    worker.join(20)\n"
        "    if worker.exitcode is None:\n"
        "        worker.kill()\n"
        "        sys.exit('the worker did not end on SIGTERM')\n"
        "    assert worker.exitcode == -signal.SIGTERM, worker.exitcode\n")
    result = _record(engine, PY, "term.py")
    assert result.returncode == 0, result.stderr
    doc = json.loads((engine / "fp.json").read_text())
    assert doc["files"]["atom/worker.py"]["units"]["work"]["phases"] == ["steps"]
