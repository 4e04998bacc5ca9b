"""Helpers of the reliability suite (issue 7): bounded runs and the shape of an error.

`run_bounded` runs `python -m lawkit ...` in a subprocess with a wall-clock timeout and an
address-space limit (RLIMIT_AS), and measures its time and peak memory (from wait4), so that a
test can assert that a hostile input costs bounded time and memory, not only that it fails.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import threading
import time
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import IO

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


def run_bounded(args: list[str], *, cwd: Path, timeout: float = 30.0, memory_mb: int = 1024,
                stdin: bytes = b"") -> Outcome:
    """Run lawkit with `args`; kill it past `timeout` seconds (the test fails: a hang)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_mb << 20, memory_mb << 20))

    start = time.monotonic()
    proc = subprocess.Popen([*LAWKIT, *args], cwd=cwd, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=limit)
    streams: dict[str, bytes] = {}
    readers = [threading.Thread(target=_drain, args=(stream, name, streams))
               for name, stream in (("out", proc.stdout), ("err", proc.stderr))]
    for reader in readers:
        reader.start()
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError):
        proc.stdin.write(stdin)
    proc.stdin.close()
    # wait4, not Popen.wait: it gives this child's own peak RSS.
    while True:
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
    return Outcome(code, streams["out"].decode("utf-8", "replace"), err, seconds,
                   usage.ru_maxrss / 1024)


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
