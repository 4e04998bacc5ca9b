"""SIGTERM during a streamed fit removes its spill before the process ends as SIGTERM ends a
process, or hands the signal to the handler the program had (a killed fit leaves no spill
behind)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import numpy as np
import pytest

from lawkit.config import Workspace, load_workspace
from lawkit.fitting import spill
from lawkit.fitting.fit import FitRequest, fit_laws
from testing.workspaces import make_fit_folder

PAUSING_FIT = textwrap.dedent("""
    import sys, time
    from lawkit.cli import main
    from lawkit.fitting import spill

    read = spill.Spill.chunks

    def pausing(self):
        # the second pass: the columns and the first law's design are spilled
        print("spilled", flush=True)
        time.sleep(60)
        yield from read(self)

    spill.Spill.chunks = pausing
    sys.argv = ["lawkit", "fit", "caps.csv", "--formula", "host_s ~ 1 + num_seqs",
                "--out", "laws/h.yaml"]
    main()
""")


def _workspace(root: Path) -> Workspace:
    make_fit_folder(root)
    seqs = np.arange(1, 301)
    lines = ["num_seqs,host_s,atom", *(f"{n},{1e-3 + 2e-5 * n:.9f},5e1f00d2" for n in seqs)]
    (root / "caps.csv").write_text("\n".join(lines) + "\n")
    return load_workspace(config=root / "lawkit.toml")


@pytest.fixture
def temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return folder


def test_sigterm_during_a_fit_removes_the_spill_and_ends_the_process_as_sigterm_does(
        tmp_path: Path, temp: Path) -> None:
    _workspace(tmp_path)
    env = {**os.environ, "LAWKIT_IN_MEMORY_BYTES": "0"}
    with subprocess.Popen([sys.executable, "-c", PAUSING_FIT], cwd=tmp_path, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as fit:
        assert fit.stdout is not None and fit.stdout.readline() == "spilled\n"
        assert len(list(temp.iterdir())) == 2  # the columns and the law's design
        fit.send_signal(signal.SIGTERM)
        _out, err = fit.communicate(timeout=30)
    assert fit.returncode == -signal.SIGTERM, err  # killed by it: 143 in a shell
    assert err == ""
    assert list(temp.iterdir()) == []
    assert list((tmp_path / "laws").iterdir()) == []


def _terminated_at_the_second_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    read = spill.Spill.chunks
    sent: list[int] = []

    def terminating(self: spill.Spill) -> Iterator[spill.SpilledChunk]:
        if not sent:
            sent.append(1)
            signal.raise_signal(signal.SIGTERM)
        yield from read(self)

    monkeypatch.setattr(spill.Spill, "chunks", terminating)


def test_sigterm_goes_on_to_the_programs_own_handler_which_finds_the_spill_gone_and_is_put_back(
        tmp_path: Path, temp: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ws = _workspace(tmp_path)
    seen: list[list[Path]] = []

    def programs(signum: int, frame: FrameType | None) -> None:
        seen.append(list(temp.iterdir()))

    _terminated_at_the_second_pass(monkeypatch)
    before = signal.signal(signal.SIGTERM, programs)
    try:
        request = FitRequest(captures=[tmp_path / "caps.csv"], out=tmp_path / "laws" / "h.yaml",
                             formulas=["host_s ~ 1 + num_seqs"], method="huber", chunk_rows=50)
        report = fit_laws(request, ws)
        assert signal.getsignal(signal.SIGTERM) is programs
    finally:
        signal.signal(signal.SIGTERM, before)
    assert seen == [[]]
    # the handler let the fit go on: it read its unlinked files through their descriptors
    assert report.laws[0].n == 300 and list(temp.iterdir()) == []


def test_a_fit_in_another_thread_leaves_sigterm_alone(
        tmp_path: Path, temp: Path) -> None:
    ws = _workspace(tmp_path)
    before = signal.getsignal(signal.SIGTERM)
    request = FitRequest(captures=[tmp_path / "caps.csv"], out=tmp_path / "laws" / "h.yaml",
                         formulas=["host_s ~ 1 + num_seqs"], chunk_rows=50)
    done: list[object] = []
    thread = threading.Thread(target=lambda: done.append(fit_laws(request, ws)))
    thread.start()
    thread.join()
    assert len(done) == 1 and signal.getsignal(signal.SIGTERM) is before
