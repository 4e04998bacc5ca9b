"""Bounded runs, the shape of an error and crash trials: for the tests and bench/crash_trials.py.

`run_bounded` runs `python -m lawkit ...` in a subprocess with a wall-clock timeout and an
address-space limit (RLIMIT_AS), and measures its time and peak memory (from wait4), so that a
test can assert that a hostile input costs bounded time and memory, not only that it fails.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import subprocess
import sys
import threading
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from typer.testing import Result

LAWKIT = (sys.executable, "-m", "lawkit")
MAX_MESSAGE = 2100  # errors.MAX_MESSAGE and the path and line before it


@dataclass(frozen=True)
class Outcome:
    """How a bounded run ended."""

    code: int
    stdout: str
    stderr: str
    seconds: float
    max_rss_mb: float

    def error_line(self) -> str:
        """The one `lawkit: error: ...` line of stderr, asserting that it is all there is."""
        assert "Traceback" not in self.stderr, self.stderr
        lines = self.stderr.splitlines()
        assert len(lines) == 1, self.stderr
        assert lines[0].startswith("lawkit: error: "), self.stderr
        assert len(lines[0]) <= MAX_MESSAGE + len("lawkit: error: "), len(lines[0])
        return lines[0]


# BLAS and OpenMP reserve address space per thread (OpenBLAS some 32 MB each): on a machine of
# many cores that alone would exceed a limit on the address space, whatever the input.
_ONE_THREAD = {name: "1" for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
                                      "MKL_NUM_THREADS")}


def run_bounded(args: list[str], *, cwd: Path, timeout: float = 30.0, memory_mb: int = 1024,
                stdin: bytes = b"", env: dict[str, str] | None = None) -> Outcome:
    """Run lawkit with `args` (and `env` added to the environment); kill it past `timeout`
    seconds (the test fails: a hang)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    start = time.monotonic()
    proc = subprocess.Popen([*LAWKIT, *args], cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limit,
                            env={**os.environ, **_ONE_THREAD, **(env or {})})
    streams: dict[str, bytes] = {}
    readers = [threading.Thread(target=_drain, args=(stream, name, streams))
               for name, stream in (("out", proc.stdout), ("err", proc.stderr))]
    for reader in readers:
        reader.start()
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(stdin)
    proc.stdin.close()
    # The child's peak RSS is read from /proc while it runs (VmHWM of its own, exec'd memory):
    # wait4's ru_maxrss would start from the forking test process's size, which a fork copies.
    peak_kb = 0
    while True:
        peak_kb = max(peak_kb, _vm_hwm_kb(proc.pid))
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() - start > timeout:
            proc.kill()
            os.wait4(proc.pid, 0)
            proc.returncode = -9
            for reader in readers:
                reader.join()
            raise AssertionError(f"lawkit {' '.join(args)} still running after {timeout} s")
        time.sleep(0.005)
    seconds = time.monotonic() - start
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    for reader in readers:
        reader.join()
    err = streams["err"].decode("utf-8", "replace")
    assert code >= 0, f"killed by {signal.Signals(-code).name}: {err}"
    # A child gone before the first look: fall back to wait4's figure, an upper bound.
    peak_kb = peak_kb or usage.ru_maxrss
    return Outcome(code, streams["out"].decode("utf-8", "replace"), err, seconds, peak_kb / 1024)


def _vm_hwm_kb(pid: int) -> int:
    """The peak resident set of a running process, in KiB (0 once it has exited)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for line in f:
                if line.startswith(b"VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _drain(stream: IO[bytes] | None, name: str, into: dict[str, bytes]) -> None:
    assert stream is not None
    into[name] = stream.read()
    stream.close()


def assert_one_line(message: str) -> None:
    """A LawkitError message: one line of bounded length, with no control or format character
    nor lone surrogate (errors.printable escapes them)."""
    assert len(message.splitlines()) == 1, repr(message)
    odd = [c for c in message if c != "\t" and
           unicodedata.category(c) in ("Cc", "Cf", "Cs", "Zl", "Zp")]
    assert not odd, repr(message)
    assert len(message) <= MAX_MESSAGE, len(message)


# -- dying at a chosen point of a write ------------------------------------------------------

WRITE_CALLS = ("open", "write", "fsync", "close", "chmod", "replace", "unlink")
"""The os functions a write goes through (fsio): a kill point lies before each call of one."""


def one_line_exit_2(result: Result, *expected: str) -> str:
    """The CLI result's error line, checked: exit 2, one line, holding each `expected` text."""
    assert result.exit_code == 2, (result.output, result.exception)
    line = result.stderr.rstrip("\n")
    assert line.startswith("lawkit: error: "), result.stderr
    assert_one_line(line)
    for text in expected:
        assert text in line, line
    return line


def die_before_write_call(n: int) -> None:
    """From the moment lawkit enters `fsio.replace_files` (or removes a stray temp file), count
    the calls of WRITE_CALLS and SIGKILL this process just before the `n`th: exactly what a
    SIGKILL landing between two system calls leaves on disk. `n = 0` only counts, and prints
    `write calls: N` on stderr at exit. For `lawkit_until_killed`, in the child process."""
    import atexit
    import functools

    from lawkit import fsio

    state = {"armed": False, "calls": 0}
    lock = threading.Lock()

    def counted(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(real)
        def call(*args: Any, **kwargs: Any) -> Any:
            if state["armed"]:
                with lock:
                    state["calls"] += 1
                    if state["calls"] == n:
                        os.kill(os.getpid(), signal.SIGKILL)
            return real(*args, **kwargs)

        return call

    for name in WRITE_CALLS:
        setattr(os, name, counted(name, getattr(os, name)))

    def arming(real: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(real)
        def call(*args: Any, **kwargs: Any) -> Any:
            state["armed"] = True
            return real(*args, **kwargs)

        return call

    fsio.replace_files = arming(fsio.replace_files)  # type: ignore[method-assign]
    fsio.remove_stray_temps = arming(fsio.remove_stray_temps)  # type: ignore[method-assign]
    if n == 0:
        atexit.register(lambda: sys.stderr.write(f"write calls: {state['calls']}\n"))


def lawkit_until_killed(args: list[str], n: int, *, cwd: Path, timeout: float = 60.0,
                        ) -> subprocess.CompletedProcess[str]:
    """`lawkit ARGS` in a subprocess that dies before its `n`th write call (0: none)."""
    root = str(Path(__file__).resolve().parent.parent)  # the repository root, above testing/
    code = (f"import sys; sys.path.insert(0, {root!r}); from testing import reliability; "
            f"reliability.die_before_write_call({n}); from lawkit.cli import app; "
            f"sys.argv = ['lawkit', *{args!r}]; app()")
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False)


def count_write_calls(args: list[str], *, cwd: Path) -> int:
    """How many write calls `lawkit ARGS` makes (it runs to the end)."""
    done = lawkit_until_killed(args, 0, cwd=cwd)
    assert done.returncode == 0, done.stderr
    return int(done.stderr.rsplit("write calls: ", 1)[1])


# -- crash trials: a command killed at some point leaves each file old or new -----------------

_AT = re.compile(rb'at: "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"')


def _normalized(data: bytes) -> bytes:
    """The bytes with the time of each provenance entry blanked (a rerun writes another)."""
    return _AT.sub(b'at: "T"', data)


@dataclass
class Scenario:
    """A lawkit command that writes law files, with what each file holds before and after it.

    `old` maps each file the command may write (relative to `root`) to its bytes before the
    run (None: absent); `new` to its bytes after a complete run, times blanked.
    """

    root: Path
    args: list[str]
    old: dict[str, bytes | None]
    new: dict[str, bytes]
    seconds: float
    """How long a complete run took."""
    write_calls: int = 0
    """How many write calls it made (`count_write_calls`, from the same run)."""

    @classmethod
    def make(cls, root: Path, args: list[str], files: list[str]) -> Scenario:
        """Record the files, run the command to the end in a copy of `root`, record them again."""
        import shutil

        old = {f: (root / f).read_bytes() if (root / f).exists() else None for f in files}
        reference = root.with_name(root.name + "-reference")
        shutil.rmtree(reference, ignore_errors=True)
        shutil.copytree(root, reference, symlinks=True)
        start = time.monotonic()
        done = lawkit_until_killed(args, 0, cwd=reference)  # to the end, counting write calls
        seconds = time.monotonic() - start
        assert done.returncode == 0, done.stderr
        write_calls = int(done.stderr.rsplit("write calls: ", 1)[1])
        new = {f: _normalized((reference / f).read_bytes()) for f in files}
        assert all(new[f] != (_normalized(old[f]) if old[f] is not None else None)
                   for f in files), "the command changed nothing: no crash trial to run"
        shutil.rmtree(reference)
        return cls(root, args, old, new, seconds, write_calls)

    def restore(self) -> None:
        """Put every file back as it was before the command, and remove stray temp files."""
        from lawkit.fsio import TEMP_PREFIX

        for name, data in self.old.items():
            if data is None:
                (self.root / name).unlink(missing_ok=True)
            else:
                (self.root / name).write_bytes(data)
        for temp in self.root.rglob(f"{TEMP_PREFIX}*"):
            temp.unlink()

    def states(self) -> dict[str, str]:
        """'old' or 'new' for each file; AssertionError naming a file that is neither."""
        out = {}
        for name, old in self.old.items():
            path = self.root / name
            data = path.read_bytes() if path.exists() else None
            if data == old:
                out[name] = "old"
            elif data is not None and _normalized(data) == self.new[name]:
                out[name] = "new"
            else:
                tail = data[-200:] if data is not None else None
                raise AssertionError(f"{name} is neither old nor new (a partial file): {tail!r}")
        return out

    def temps(self) -> list[Path]:
        """Stray temp files below the root."""
        from lawkit.fsio import TEMP_PREFIX

        return sorted(self.root.rglob(f"{TEMP_PREFIX}*"))

    def kill_at_write_call(self, n: int) -> bool:
        """Run the command, killed before its `n`th write call; whether it was killed."""
        done = lawkit_until_killed(self.args, n, cwd=self.root)
        assert done.returncode in (0, -signal.SIGKILL), done.stderr
        return done.returncode == -signal.SIGKILL

    def kill_after(self, seconds: float) -> bool:
        """Run the command and SIGKILL it after `seconds`; whether it was killed."""
        proc = subprocess.Popen([*LAWKIT, *self.args], cwd=self.root,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
        err = proc.communicate()[1].decode("utf-8", "replace")
        assert proc.returncode in (0, -signal.SIGKILL), err
        return proc.returncode == -signal.SIGKILL

    def finish(self, *, idempotent: bool = True, in_process: bool = False) -> None:
        """The next run, to the end: no temp file left, and every file new (a command that is
        not idempotent, `fit`, writes a newer file still: then each file reads back valid,
        its provenance explaining its key and laws). `in_process`: run it here (CliRunner),
        without a start-up's cost."""
        if in_process:
            from typer.testing import CliRunner

            from lawkit.cli import app

            with contextlib.chdir(self.root):
                result = CliRunner().invoke(app, self.args)
            assert result.exit_code == 0, (result.output, result.exception)
        else:
            done = subprocess.run([*LAWKIT, *self.args], cwd=self.root, capture_output=True,
                                  text=True, check=False)
            assert done.returncode == 0, done.stderr
        assert self.temps() == [], self.temps()
        if idempotent:
            states = self.states()
            assert set(states.values()) == {"new"}, states
            return
        from lawkit.keying.check import integrity_problems
        from lawkit.lawfiles.lawfile import load

        for name in self.old:
            law_file = load(self.root / name)
            assert integrity_problems(law_file, "atom") == [], name
