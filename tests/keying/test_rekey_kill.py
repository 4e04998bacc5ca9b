"""A rekey killed at many points of a 1,000-file run leaves every file old or new.

Each run is a real `python -m lawkit rekey` subprocess. It is frozen (SIGSTOP) at a few points
of its progress and the folder inspected, which is exactly what a SIGKILL at that instant would
leave on disk, then killed (SIGKILL) at a last point; the next run must finish the job. The
points are chosen by watching the folder: elapsed time (start-up and parsing), hidden temp
files appearing (the write phase), law files replaced by rename (the commit phase).
"""

from __future__ import annotations

import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lawkit.cli import app
from lawkit.fsio import TEMP_PREFIX
from testing.workspaces import OLD, body_of, make_workspace

NEW = "8927e824"
FILES = 1000
RUNS = 5  # 31 points: 3 runs frozen 8 times then killed while renaming, 2 killed early
LAW = {"name": "step", "target": "host_s", "terms": {"1": 0.0021, "num_seqs": 0.00012}}
TEMPLATE = f"""\
schema: lawkit/1
labels: {{cell: "CELL"}}
host:
  key:
    atom: "{OLD}"
  laws:
    - name: step
      target: host_s
      terms: {{"1": 0.0021, num_seqs: 0.00012}}
  provenance:
    - {{fit: {{digest: "{OLD}", at: "2026-10-02T11:20:00Z", records: 10, body: "BODY"}}}}
""".replace("BODY", body_of([LAW]))
ENTRY = re.compile(rb'    - \{rekey: \{from: "' + OLD.encode() + rb'", to: "' + NEW.encode()
                   + rb'", at: "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", why: "kill", refs: \[\]\}\}\n\Z')


class Folder:
    """The law files, what each was before the rekey, and what each may be after it."""

    def __init__(self, laws: Path) -> None:
        self.laws = laws
        self.old = {f"c{i:04d}.yaml": TEMPLATE.replace("CELL", f"c{i:04d}").encode()
                    for i in range(FILES)}
        self.restore()

    def restore(self) -> None:
        for name, data in self.old.items():
            (self.laws / name).write_bytes(data)

    def is_new(self, name: str, data: bytes) -> bool:
        head = self.old[name].replace(f'atom: "{OLD}"'.encode(), f'atom: "{NEW}"'.encode())
        return data.startswith(head) and ENTRY.match(data, len(head)) is not None

    def inspect(self) -> tuple[int, int]:
        """(old files, new files); fails on any file that is neither, or missing, or extra."""
        seen, new = set(), 0
        for entry in os.scandir(self.laws):
            if entry.name.startswith(TEMP_PREFIX):
                continue
            data = Path(entry.path).read_bytes()
            if data != self.old.get(entry.name) and not self.is_new(entry.name, data):
                raise AssertionError(f"{entry.name} is neither old nor new: {data[-120:]!r}")
            new += data != self.old[entry.name]
            seen.add(entry.name)
        assert seen == set(self.old)
        return len(seen) - new, new

    def progress(self, inodes: dict[str, int]) -> tuple[int, int]:
        """(hidden temp files, law files replaced since `inodes`)."""
        temps = replaced = 0
        for entry in os.scandir(self.laws):
            if entry.name.startswith(TEMP_PREFIX):
                temps += 1
            elif entry.name in inodes and entry.inode() != inodes[entry.name]:
                replaced += 1
        return temps, replaced


def _run(folder: Folder, root: Path, points: list[tuple[str, float]]) -> tuple[int, bool]:
    """Start a rekey; freeze and inspect it at each point but the last, kill it at the last.

    Returns the points reached and whether the run was killed (it may finish first).
    """
    inodes = {e.name: e.inode() for e in os.scandir(folder.laws) if e.name in folder.old}
    proc = subprocess.Popen([sys.executable, "-m", "lawkit", "rekey", "--why", "kill"],
                            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    start = time.monotonic()
    try:
        for i, (kind, threshold) in enumerate(points):
            while True:
                if proc.poll() is not None:
                    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
                    return i, False
                if kind == "time":  # no need to scan the folder: leave the CPUs to the run
                    wait = start + threshold - time.monotonic()
                    if wait <= 0:
                        break
                    time.sleep(min(wait, 0.01))
                    continue
                temps, replaced = folder.progress(inodes)
                if (temps if kind == "temps" else replaced) >= threshold:
                    break
                time.sleep(0.001)
            if i == len(points) - 1:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                folder.inspect()
                return i + 1, True
            proc.send_signal(signal.SIGSTOP)
            try:
                folder.inspect()
            finally:
                proc.send_signal(signal.SIGCONT)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        if proc.stderr:
            proc.stderr.close()
    raise AssertionError("unreachable")


@pytest.mark.stress
def test_a_rekey_killed_at_many_points_leaves_every_file_old_or_new_and_a_rerun_finishes(
        tmp_path: Path) -> None:
    make_workspace(tmp_path, 0)
    folder = Folder(tmp_path / "laws")
    rng = random.Random(3)
    kills = reached = 0
    for run in range(RUNS):
        left, _new = folder.inspect()
        if left < 100:  # too few left to kill in the middle: start over
            folder.restore()
            left = FILES
        points: list[tuple[str, float]] = [("time", rng.uniform(0.05, 0.3))]
        if run % 2:  # killed while starting or parsing
            points.append(("time", rng.uniform(0.3, 0.8)))
        else:  # frozen while writing temps and while renaming, killed while renaming
            points += [("temps", k) for k in sorted(rng.sample(range(1, left // 2), 3))]
            points += [("replaced", k) for k in sorted(rng.sample(range(1, left), 5))]
        points_reached, killed = _run(folder, tmp_path, points)
        reached += points_reached
        kills += killed
    assert kills >= RUNS - 1 and reached >= 30, (kills, reached)
    done = subprocess.run([sys.executable, "-m", "lawkit", "rekey", "--why", "kill"],
                          cwd=tmp_path, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert folder.inspect() == (0, FILES)
    assert not [p.name for p in folder.laws.iterdir() if p.name.startswith(".")]
    assert CliRunner().invoke(app, ["check"]).exit_code == 0
