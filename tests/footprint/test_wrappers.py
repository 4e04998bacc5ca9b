"""Every process, or none, through wrappers: a Python child started by
``env``, a shell command line (``shell=True``, ``os.system``), a shell script (``bash steps.sh``,
``./steps.sh``) or another wrapper is noted as
expected, so one that never checks in is refused naming the command, and one that does is
recorded. And code objects a function gets after its module ran (``fn.__code__ = ...``,
``types.FunctionType``) are recorded when they run."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from footprint_engine import lawkit, record_harness, recorded

from lawkit.footprint.measured.audit import ChildWatch

PY = sys.executable
CODE = ("import sys; sys.path.insert(0, '.'); from atom.util import util_fn; "
        "assert util_fn(2) == 1")
Q = shlex.quote(CODE)


_PRELUDE = ("import os, subprocess, sys\nimport lawkit.footprint\nimport atom.base\n"
            "lawkit.footprint.phase('steps')\n")


def _record(engine: Path, script: str) -> subprocess.CompletedProcess[str]:
    return record_harness(engine, f"{_PRELUDE}PY, CODE, Q = {PY!r}, {CODE!r}, {Q!r}\n{script}")


def _recorded(engine: Path, script: str) -> dict[str, Any]:
    return recorded(engine, f"{_PRELUDE}PY, CODE, Q = {PY!r}, {CODE!r}, {Q!r}\n{script}")


@pytest.mark.parametrize("start, shown, why", [
    ("subprocess.run(['env', '-i', PY, '-c', CODE], check=True)",
     "env -i ", "never checked in"),
    ("subprocess.run(['/usr/bin/env', PY, '-S', '-c', CODE], check=True)",
     "/usr/bin/env ", "started with -S"),
    ("subprocess.run(f'cd . && {PY} -I -c {Q}', shell=True, check=True)",
     "/bin/sh -c cd . && ", "started with -I"),
    ("subprocess.run(f'cd . && env -u PYTHONPATH {PY} -c {Q}', shell=True, check=True)",
     "/bin/sh -c cd . && env -u PYTHONPATH", "never checked in"),
    ("assert os.system(f'env -u PYTHONPATH {PY} -c {Q}') == 0",
     "env -u PYTHONPATH ", "never checked in"),
    ("assert os.system(f'true; timeout 60 env -i python3 -c {Q} 2>&1 | cat') == 0",
     "true; timeout 60 env -i python3", "never checked in"),
    ("assert os.popen(f'nice -n 1 env -i {PY} -c {Q}').close() is None",
     "/bin/sh -c nice -n 1 env -i ", "never checked in"),
    ("os.waitpid(os.posix_spawn('/usr/bin/env', ['env', '-i', PY, '-c', CODE], os.environ),"
     " 0)", "env -i ", "never checked in"),
    ("os.execv('/usr/bin/env', ['env', '-i', PY, '-c', CODE])",
     "env -i ", "never checked in"),
])
def test_a_python_child_a_wrapper_hides_is_refused_naming_the_command(
        engine: Path, start: str, shown: str, why: str) -> None:
    result = _record(engine, start + "\n")
    assert result.returncode == 2, result.stderr
    assert "started a Python child" in result.stderr and why in result.stderr
    assert shown in result.stderr
    assert "record that process itself" in result.stderr and "Traceback" not in result.stderr
    assert not (engine / "fp.json").exists()


@pytest.mark.parametrize("start", [
    "subprocess.run(['env', 'FOO=1', PY, '-c', CODE], check=True)",
    "subprocess.run(['sh', '-c', f'cd . && {PY} -c {Q} 2>&1 | cat'], check=True)",
    "subprocess.run(f'true && exec {PY} -c {Q}', shell=True, check=True)",
    "assert os.system(f'timeout 60 nice -n 1 env FOO=1 {PY} -c {Q}') == 0",
])
def test_a_python_child_a_wrapper_starts_with_the_environment_is_recorded(
        engine: Path, start: str) -> None:
    doc = _recorded(engine, start + "\n")
    assert doc["processes"] == 2
    assert doc["files"]["atom/util.py"]["units"]["util_fn"]["phases"] == ["steps"]


@pytest.mark.parametrize("start", [
    "subprocess.run(['nice', 'echo', 'python'], check=True, stdout=subprocess.DEVNULL)",
    "subprocess.run('command -v python3 >/dev/null; echo python', shell=True, check=True, "
    "stdout=subprocess.DEVNULL)",
    "assert os.system('env -i true python3') == 0",
])
def test_a_wrapper_or_shell_that_only_names_python_is_not_asked_to_check_in(
        engine: Path, start: str) -> None:
    assert _recorded(engine, start + "\n")["processes"] == 1


def _noted(how: str, *args: Any) -> list[list[str]]:
    watch = ChildWatch({}, "/nowhere/site")
    if how == "system":
        watch._hook("os.system", args)
    else:
        watch.exec(*args, None)
    return [child["command"] for child in watch.children]


@pytest.mark.parametrize("how, args, expected", [
    ("system", ("cd /x && PYTHONPATH=/y python3.12 -u a.py > out.txt 2>&1",),
     [["python3.12", "-u", "a.py"]]),
    ("system", ("python a.py; env -i python b.py | cat",), [["python", "a.py"],
                                                             ["python", "b.py"]]),
    ("system", ("bash -lc 'nohup python -m srv &'",), [["python", "-m", "srv"]]),
    ("system", ("echo python; ls python3",), []),
    ("exec", ("/usr/bin/env", ["env", "-u", "PYTHONPATH", "-C", "/tmp", "python3", "x.py"]),
     [["python3", "x.py"]]),
    ("exec", ("/usr/bin/xargs", ["xargs", "-n", "1", "pypy3", "-c", "pass"]),
     [["pypy3", "-c", "pass"]]),
    ("exec", ("/usr/bin/git", ["git", "commit", "-m", "python"]), []),
    ("exec", ("/opt/launcher", ["launcher", "--np", "2", PY, "x.py"]), [[PY, "x.py"]]),
    ("exec", ("/usr/bin/file", ["file", "-b", PY]), []),  # torch.compile's inductor runs it
    ("system", (f"ldd {PY} | grep libpython",), []),
])
def test_the_python_commands_a_shell_line_or_a_wrapper_starts(
        how: str, args: tuple[Any, ...], expected: list[list[str]]) -> None:
    assert _noted(how, *args) == expected


KERNEL = '''\
import types


def retarget(fn):
    fn.__code__ = fn.__code__.replace(co_name=fn.__name__ + "_k")
    return fn


def rebuilt(fn):
    return types.FunctionType(fn.__code__.replace(co_name="rebuilt"), fn.__globals__)


@retarget
def kernel(x):
    def inner(y):
        return y + 1
    return inner(x * 3)


@rebuilt
def other(x):
    return x * 5
'''


def test_a_function_whose_code_object_was_replaced_is_recorded_when_it_runs(
        engine: Path) -> None:
    (engine / "atom" / "k.py").write_text(KERNEL)
    doc = _recorded(engine, "from atom.k import kernel, other\n"
                            "assert kernel(2) == 7 and other(2) == 10\n")
    units = doc["files"]["atom/k.py"]["units"]
    assert units["kernel"]["phases"] == ["steps"]
    assert units["other"]["phases"] == ["steps"]


def _script(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def _record_command(engine: Path, *command: str) -> subprocess.CompletedProcess[str]:
    (engine / "harness.py").write_text(f"{_PRELUDE}from atom.util import util_fn\n"
                                       "assert util_fn(2) == 1\n")
    return lawkit("footprint", "record", "--out", "fp.json", "--", *command, cwd=engine)


@pytest.mark.parametrize("command, shown", [
    (["sh", "-c", f"{PY} harness.py && env -i {PY} -c {Q}"], "env -i "),
    (["env", "-u", "PYTHONPATH", PY, "-c", CODE], "env -u PYTHONPATH "),
    (["sh", "-c", f"{PY} harness.py; nice -n 1 env -i {PY} -c {Q} | cat"], "env -i "),
    (["bash", "steps.sh"], "bash steps.sh"),
    (["./steps.sh"], "./steps.sh"),
    (["sh", "-c", "cd sub && ./steps.sh"], "sh -c cd sub && ./steps.sh"),
])
def test_a_python_the_recorded_command_hides_behind_a_wrapper_or_script_is_refused_naming_it(
        engine: Path, command: list[str], shown: str) -> None:
    # The command is not a measured process, so no audit hook sees what it starts: record
    # reads the command line itself, and the scripts it runs, as the hook reads a measured
    # process's children.
    (engine / "sub").mkdir()
    text = f"#!/bin/sh\n{PY} harness.py\nenv -i {PY} -c {Q}\n"
    _script(engine / "steps.sh", text)
    _script(engine / "sub" / "steps.sh", f"#!/bin/sh\ncd ..\n{text}")
    result = _record_command(engine, *command)
    assert result.returncode == 2, result.stderr
    assert "the recorded command started a Python child that never checked in" in result.stderr
    assert shown in result.stderr and "Traceback" not in result.stderr
    assert not (engine / "fp.json").exists()


def test_a_recorded_command_that_is_a_shell_keeping_the_environment_is_recorded(
        engine: Path) -> None:
    result = _record_command(engine, "sh", "-c", f"true && {PY} harness.py 2>&1 | cat")
    assert result.returncode == 0, result.stderr
    assert (engine / "fp.json").exists()


def test_the_python_commands_a_script_file_starts_through_a_shell_or_its_interpreter_line(
        tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    _script(tmp_path / "sub" / "steps.sh", "#!/bin/sh -e\n# a comment\npython a.py\n"
                                           "env -i python3 b.py | cat\n")
    _script(tmp_path / "run.py", "#!/usr/bin/env -S python3 -I\nprint(1)\n")
    _script(tmp_path / "outer.sh", "#!/bin/bash\ncd sub\n./steps.sh\n")
    steps = [["python", "a.py"], ["python3", "b.py"]]
    assert _noted("system", f"cd {tmp_path} && bash -e sub/steps.sh") == steps
    assert _noted("exec", str(tmp_path / "sub" / "steps.sh"), ["steps.sh"]) == steps
    assert _noted("exec", str(tmp_path / "outer.sh"), [str(tmp_path / "outer.sh")]) == steps
    assert _noted("system", f"nice -n 1 {tmp_path}/run.py x") == \
        [["python3", "-I", f"{tmp_path}/run.py", "x"]]
    assert _noted("system", f"cd {tmp_path} && bash missing.sh; sh < sub/steps.sh") == []


def test_a_script_a_shell_reads_from_a_pipe_is_left_for_the_shell(tmp_path: Path) -> None:
    # bash <(...) runs /dev/fd/N: its lines are the child's to read, not the hook's to take.
    read, write = os.pipe()
    os.write(write, b"python3 -c pass\n")
    try:
        assert _noted("exec", "/bin/bash", ["bash", f"/dev/fd/{read}"]) == []
        assert os.read(read, 100) == b"python3 -c pass\n"
    finally:
        os.close(read)
        os.close(write)


def test_a_python_a_measured_process_starts_through_a_script_file_is_refused(
        engine: Path) -> None:
    _script(engine / "steps.sh", f"#!/bin/sh\nenv -i {PY} -c {Q}\n")
    result = _record(engine, "subprocess.run(['sh', 'steps.sh'], check=True)\n")
    assert result.returncode == 2, result.stderr
    assert "started a Python child that never checked in, sh steps.sh" in result.stderr
    assert not (engine / "fp.json").exists()


def test_a_recorded_script_file_keeping_the_environment_is_recorded(engine: Path) -> None:
    _script(engine / "steps.sh", f"#!/bin/sh\nset -e\n{PY} harness.py 2>&1 | cat\n")
    result = _record_command(engine, "./steps.sh")
    assert result.returncode == 0, result.stderr
    assert (engine / "fp.json").exists()
