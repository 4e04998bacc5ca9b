"""Crashes, failed writes and concurrent runs never cost a law.

- A `rekey` or `fit --out` killed (SIGKILL) at any point leaves every law file old or new,
  never partial, and the next run leaves no temp file. The kill points are system calls of the
  write (`reliability.die_before_write_call`: the process kills itself just before the Nth
  open/write/fsync/close/chmod/replace/unlink, exactly what a SIGKILL between two calls leaves)
  and random times over the whole run. tests/keying/test_rekey_kill.py kills 1,000-file rekeys from
  outside; bench/crash_trials.py runs every write call and many more random times.
- Two runs started together never interleave: the second waits for the first's lock and then
  finds the files at the target.
- A write that fails part-way (ENOSPC, EIO, EACCES: injected by patching os.write, os.fsync,
  os.open and os.replace, since sessions and CI run as root, where file modes prove nothing)
  fails before any file is replaced, or leaves each file old or new; exit 2, one line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lawkit import fsio
from lawkit.cli import app
from lawkit.fsio import TEMP_PREFIX
from lawkit.keying import rekey
from testing.reliability import LAWKIT, Scenario, one_line_exit_2
from testing.workspaces import make_workspace

runner = CliRunner()
REKEY = ["rekey", "--why", "crash trial"]
CAPTURE = "model,bs,host_s\n" + "".join(f"m{i % 3},{i % 97 + 1},{0.001 * (i % 97 + 1) + 0.01}\n"
                                       for i in range(3000))


def _law_names(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "laws").rglob("*.yaml"))


def _spread(total: int, count: int, rng: random.Random) -> list[int]:
    """`count` kill points of 1..total: the first, the last and others spread between."""
    if total <= count:
        return list(range(1, total + 1))
    middle = rng.sample(range(2, total), count - 2)
    return sorted({1, total, *middle})


def _trials(scenario: Scenario, points: list[int], times: list[float], *,
            idempotent: bool = True) -> dict[str, int]:
    """Kill the command at each point and after each time; after each, the files are old or
    new and the next run cleans up. Returns how the trials ended."""
    ended = {"killed": 0, "finished": 0, "old": 0, "new": 0, "partial": 0}
    for kill in [*(("call", n) for n in points), *(("time", t) for t in times)]:
        scenario.restore()
        killed = scenario.kill_at_write_call(int(kill[1])) if kill[0] == "call" else \
            scenario.kill_after(kill[1])
        ended["killed" if killed else "finished"] += 1
        for state in scenario.states().values():  # raises on a partial file
            ended[state] += 1
        scenario.finish(idempotent=idempotent, in_process=True)
    return ended


# Stress: more kill points and random times of the same rekey (scripts/test leaves it to CI).
@pytest.mark.parametrize(("points", "times"), [(5, 1),
                                               pytest.param(9, 3, marks=pytest.mark.stress)])
def test_a_rekey_killed_before_any_write_call_leaves_each_file_old_or_new(
        tmp_path: Path, points: int, times: int) -> None:
    make_workspace(tmp_path, 3, stale=True)
    scenario = Scenario.make(tmp_path, REKEY, _law_names(tmp_path))
    total = scenario.write_calls
    rng = random.Random(7)
    ended = _trials(scenario, _spread(total, points, rng),
                    [rng.uniform(0.05, scenario.seconds) for _ in range(times)])
    assert ended["partial"] == 0 and ended["killed"] >= points, ended
    assert ended["old"] and ended["new"], ended  # the points fell on both sides of renames


def test_a_rekey_of_many_files_killed_while_its_threads_write_leaves_each_old_or_new(
        tmp_path: Path) -> None:
    """Ten files: the temps are written and fsynced on a thread pool (fsio._PARALLEL_FROM)."""
    make_workspace(tmp_path, 10, stale=True)
    scenario = Scenario.make(tmp_path, REKEY, _law_names(tmp_path))
    total = scenario.write_calls
    ended = _trials(scenario, _spread(total, 5, random.Random(8)), [])
    assert ended["partial"] == 0 and ended["killed"] == 5, ended


@pytest.mark.parametrize(("out", "points"), [("laws/cell00000.yaml", 4), ("laws/new.yaml", 3)])
def test_a_fit_out_killed_at_any_point_leaves_the_file_old_or_new(tmp_path: Path, out: str,
                                                                   points: int) -> None:
    make_workspace(tmp_path, 1, stale=True)
    (tmp_path / "cap.csv").write_text(CAPTURE)
    fit = ["fit", "cap.csv", "--formula", "host_s ~ 1 + bs", "--by", "model",
           "--captured-on", "current", "--out", out, "--why", "kept laws re-keyed"]
    scenario = Scenario.make(tmp_path, fit, [out])
    total = scenario.write_calls
    rng = random.Random(9)
    ended = _trials(scenario, _spread(total, points, rng),
                    [rng.uniform(0.2, scenario.seconds)], idempotent=False)
    assert ended["partial"] == 0 and ended["killed"] >= points, ended


def test_stray_temps_of_a_fit_named_with_glob_characters_are_removed_by_the_next_fit(
        tmp_path: Path) -> None:
    """Regression: the next fit looked for its stray temps with a glob of the file's name,
    so `laws/[x].yaml` matched `laws/.lawkit-tmp-x.yaml.*` and left its own."""
    make_workspace(tmp_path, 0)
    (tmp_path / "cap.csv").write_text(CAPTURE)
    out = tmp_path / "laws" / "[m0].yaml"
    stray = out.parent / f"{TEMP_PREFIX}{out.name}.deadbeef"
    stray.write_text("partial")
    other = out.parent / f"{TEMP_PREFIX}m.yaml.deadbeef"  # what the glob matched instead
    other.write_text("another file's")
    result = runner.invoke(app, ["fit", "cap.csv", "--formula", "host_s ~ 1 + bs",
                                 "--captured-on", "current", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert not stray.exists()
    assert other.exists()


# -- concurrency ----------------------------------------------------------------------------


def test_two_rekeys_started_together_never_interleave(tmp_path: Path) -> None:
    make_workspace(tmp_path, 20, stale=True)
    laws = tmp_path / "laws"
    stale = {p: p.read_bytes() for p in laws.glob("*.yaml")}
    for _trial in range(3):
        for path, data in stale.items():
            path.write_bytes(data)
        procs = [subprocess.Popen([*LAWKIT, *REKEY], cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(2)]
        outs = [proc.communicate(timeout=60) for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0], outs
        summaries = sorted(out.splitlines()[-1] for out, _err in outs)
        assert summaries[0].startswith("nothing to rekey (20 already at"), summaries
        assert summaries[1].startswith("rekeyed 20 law files"), summaries
        for path in stale:
            assert path.read_text().count("{rekey:") == 1, path
        assert list(laws.glob(f"{TEMP_PREFIX}*")) == []
    assert runner.invoke(app, ["check"]).exit_code == 0


@pytest.mark.usefixtures("stale_workspace")
def test_a_rekey_and_a_fit_of_the_same_file_started_together_keep_both_writes(
        tmp_path: Path) -> None:
    (tmp_path / "cap.csv").write_text(CAPTURE)
    law = tmp_path / "laws" / "cell00000.yaml"
    stale = law.read_bytes()
    for _trial in range(2):
        law.write_bytes(stale)
        procs = [subprocess.Popen([*LAWKIT, *args], cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
                 for args in (["fit", "cap.csv", "--formula", "host_s ~ 1 + bs", "--captured-on",
                               "current", "--out", "laws/cell00000.yaml",
                               "--why", "kept laws re-keyed"],  # needed when the fit goes first
                              REKEY)]
        outs = [proc.communicate(timeout=60) for proc in procs]
        assert [proc.returncode for proc in procs] == [0, 0], outs
        text = law.read_text()
        assert "- name: \"host_s\"" in text  # the fit's law
        assert text.count("{fit:") == 2  # the workspace's fit and this one
        assert runner.invoke(app, ["check"]).exit_code == 0  # key and body explained


@pytest.mark.usefixtures("stale_workspace")
def test_a_rekey_that_cannot_get_the_lock_in_time_writes_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = {p: p.read_bytes() for p in (tmp_path / "laws").glob("*.yaml")}
    monkeypatch.setattr(rekey, "LOCK_WAIT_S", 0.2)
    with fsio.locked(tmp_path / "laws"):  # another run holds it
        result = runner.invoke(app, REKEY)
    one_line_exit_2(result, "another lawkit run is writing these law files",
                     "nothing was written")
    assert {p: p.read_bytes() for p in (tmp_path / "laws").glob("*.yaml")} == before


# -- writes that fail part-way --------------------------------------------------------------


@contextlib.contextmanager
def _failing(call: str, error: int, at: int) -> Iterator[None]:
    """The `at`th call of os.`call` on a lawkit temp file (or, for replace, renaming one) fails
    with `error`; the calls on other files go through."""
    temp_fds: set[int] = set()
    seen = {"n": 0}
    real = {name: getattr(os, name) for name in ("open", "write", "fsync", "replace", "close")}

    def fail_now() -> bool:
        seen["n"] += 1
        return seen["n"] == at

    def open_(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        is_temp = os.path.basename(os.fsdecode(path)).startswith(TEMP_PREFIX)
        if is_temp and call == "open" and fail_now():
            raise OSError(error, os.strerror(error))
        fd = int(real["open"](path, flags, *args, **kwargs))
        if is_temp:
            temp_fds.add(fd)
        return fd

    def on_fd(name: str) -> Any:
        def wrapped(fd: int, *args: Any) -> Any:
            if fd in temp_fds and call == name and fail_now():
                raise OSError(error, os.strerror(error))
            return real[name](fd, *args)
        return wrapped

    def close(fd: int) -> None:
        temp_fds.discard(fd)
        real["close"](fd)

    def replace(src: Any, dst: Any, *args: Any, **kwargs: Any) -> None:
        if call == "replace" and os.path.basename(os.fsdecode(src)).startswith(TEMP_PREFIX) \
                and fail_now():
            raise OSError(error, os.strerror(error))
        real["replace"](src, dst, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "open", open_)
        mp.setattr(os, "write", on_fd("write"))
        mp.setattr(os, "fsync", on_fd("fsync"))
        mp.setattr(os, "close", close)
        mp.setattr(os, "replace", replace)
        yield


def _stale_law_bytes(root: Path, files: int) -> dict[Path, bytes]:
    make_workspace(root, files, stale=True)
    return {p: p.read_bytes() for p in (root / "laws").glob("*.yaml")}


@pytest.mark.parametrize("files", [3, 12])  # 12: the temps are written on a thread pool
@pytest.mark.parametrize(("call", "error", "words"), [
    ("write", errno.ENOSPC, "No space left on device: free some space"),
    ("fsync", errno.EIO, "Input/output error"),
    ("fsync", errno.ENOSPC, "No space left on device"),
    ("open", errno.EACCES, "Permission denied: check the folder's permissions"),
])
def test_a_temp_write_that_fails_changes_no_file(tmp_path: Path, files: int, call: str,
                                                 error: int, words: str) -> None:
    before = _stale_law_bytes(tmp_path, files)
    for at in sorted({1, files // 2 + 1, files}):
        with _failing(call, error, at):
            result = runner.invoke(app, REKEY)
        one_line_exit_2(result, words, "no file was changed")
        assert {p: p.read_bytes() for p in before} == before
        assert list((tmp_path / "laws").glob(f"{TEMP_PREFIX}*")) == []
    assert runner.invoke(app, REKEY).exit_code == 0


@pytest.mark.parametrize("error", [errno.EACCES, errno.ENOSPC, errno.EXDEV])
def test_a_rename_that_fails_leaves_the_files_before_it_new_and_the_rest_old(
        tmp_path: Path, error: int) -> None:
    before = _stale_law_bytes(tmp_path, 4)
    with _failing("replace", error, 3):
        result = runner.invoke(app, REKEY)
    one_line_exit_2(result, os.strerror(error), "run again")
    after = {p: p.read_bytes() for p in before}
    changed = [p for p in sorted(before) if after[p] != before[p]]
    assert len(changed) == 2, changed  # two renames made, the third failed, the fourth not tried
    assert list((tmp_path / "laws").glob(f"{TEMP_PREFIX}*")) == []
    again = runner.invoke(app, REKEY)
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines()[-1] == \
        "rekeyed 2 law files to atom=8927e824 (2 already at atom=8927e824)"
    assert runner.invoke(app, ["check"]).exit_code == 0


@pytest.mark.parametrize(("call", "error"), [("write", errno.ENOSPC), ("fsync", errno.EIO),
                                             ("replace", errno.EACCES)])
def test_a_fit_whose_write_fails_leaves_the_out_file_as_it_was(tmp_path: Path, call: str,
                                                               error: int) -> None:
    before = _stale_law_bytes(tmp_path, 1)
    (tmp_path / "cap.csv").write_text(CAPTURE)
    with _failing(call, error, 1):
        result = runner.invoke(app, ["fit", "cap.csv", "--formula", "host_s ~ 1 + bs",
                                     "--captured-on", "current", "--out",
                                     "laws/cell00000.yaml", "--why", "kept laws re-keyed"])
    one_line_exit_2(result, os.strerror(error), "laws/cell00000.yaml")
    assert {p: p.read_bytes() for p in before} == before
    assert list((tmp_path / "laws").glob(f"{TEMP_PREFIX}*")) == []


def test_short_writes_still_write_every_byte(tmp_path: Path) -> None:
    before = _stale_law_bytes(tmp_path, 3)
    real_write = os.write
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(os, "write", lambda fd, data: real_write(fd, bytes(data[:7])))
        result = runner.invoke(app, REKEY)
    assert result.exit_code == 0, result.output
    assert all(p.read_bytes() != before[p] for p in before)
    assert runner.invoke(app, ["check"]).exit_code == 0
