"""Verdicts name the threads that ran code in steps with no region open: a unit that counts for
every law because it ran with none open says which threads the footprint saw there (the
footprint's ``unregioned_threads``), so that a main thread's poll loop outside any region is
seen to be why every law is ``steps`` (issue 40)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from lawkit.config import load_workspace
from lawkit.footprint.document import (
    Footprint,
    decode_footprint,
    encode_footprint,
)
from lawkit.footprint.lawverdict import UnitChange
from lawkit.footprint.record import record_footprint
from lawkit.footprint.verdict import FootprintDiff
from testing.cli import invoke as lawkit
from testing.footprints import engine_footprint_bytes
from testing.lawrepo import (
    ENGINE,
    commit_fitted_with_footprint,
    engine_digest,
    init_repo,
)

# The engine thread waits inside its region while the main thread polls the engine's util_fn
# outside any region: only the main thread runs engine code with no region open.
HARNESS = """\
import threading
import lawkit.footprint as fp
from atom.helpers import helper
from atom.util import util_fn

inside, polled = threading.Event(), threading.Event()


def engine():
    for step in range(50):
        with fp.region("sample_s"):
            if step == 0:
                inside.set()
                polled.wait()
            helper(step)


fp.phase("steps")
thread = threading.Thread(target=engine, name="engine")
thread.start()
inside.wait()
for _ in range(3):
    util_fn(0)
polled.set()
thread.join()
"""


def test_footprint_diff_names_the_main_thread_whose_poll_ran_outside_any_region(
        engine: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (engine / "harness.py").write_text(HARNESS)
    ws = load_workspace(config=engine / "lawkit.toml")
    record_footprint(ws, [sys.executable, "harness.py"], engine / "fp.json", cwd=engine)
    doc = json.loads((engine / "fp.json").read_text())
    assert doc["unregioned_threads"] == ["MainThread"]
    units = doc["files"]["atom/util.py"]["units"]
    # coverage.py's context is process-wide (3.11): util_fn is credited to sample_s too
    assert "*" in units["util_fn"]["regions"]

    util = engine / "atom" / "util.py"
    util.write_text(util.read_text().replace("x - 1", "x - 2"))
    monkeypatch.chdir(engine)
    diffed = lawkit("footprint", "diff", "fp.json")
    assert diffed.exit_code == 1, diffed.output
    assert ("changed  atom/util.py  util_fn  ran in steps: counts as steps (in steps with no "
            "region open (threads: MainThread))") in diffed.stdout.splitlines()
    why = [u["why"] for u in json.loads(lawkit("footprint", "diff", "fp.json",
                                               "--json").stdout)["units"]]
    assert why == ["in steps with no region open (threads: MainThread)"]


FORKED = """\
import os
import lawkit.footprint as fp
from atom.helpers import helper
from atom.util import util_fn

fp.phase("steps")
with fp.region("sample_s"):
    helper(0)
    if os.fork() == 0:  # the child starts in steps with no region open
        util_fn(0)
        os._exit(0)
    os.wait()
"""


def test_a_forked_child_s_thread_is_named_by_its_name_alone(engine: Path) -> None:
    (engine / "harness.py").write_text(FORKED)
    ws = load_workspace(config=engine / "lawkit.toml")
    record_footprint(ws, [sys.executable, "harness.py"], engine / "fp.json", cwd=engine)
    doc = json.loads((engine / "fp.json").read_text())
    assert doc["processes"] == 2
    assert doc["unregioned_threads"] == ["MainThread"]  # the child's; the parent ran in a region


def test_a_unit_run_with_no_region_open_names_the_footprint_s_threads() -> None:
    poll = UnitChange("a.py", "poll", "changed", ("steps",), "steps", regions=("*",),
                      threads=("MainThread", "poller"))
    assert poll.line() == ("changed  a.py  poll  ran in steps: counts as steps (in steps with no "
                           "region open (threads: MainThread, poller))")
    assert FootprintDiff("steps", "d1", "d2", "atom", (poll,)).summary() == (
        "1 unit changed: poll (ran in steps, in steps with no region open (threads: "
        "MainThread, poller))")
    # a unit that ran only in a region is not tied to the threads with none open
    inside = UnitChange("a.py", "sample", "changed", ("steps",), "steps", regions=("sample_s",),
                        threads=("MainThread",))
    assert inside.line().endswith("counts as steps")
    # a footprint that did not record them: the wording of before
    old = UnitChange("a.py", "poll", "changed", ("steps",), "steps", regions=("*",))
    assert old.reason() == "in steps with no region open"


def test_the_field_is_read_and_written_and_an_older_footprint_reads_without_it() -> None:
    fp = Footprint("atom", "d", ("python",), 1, {}, unregioned_threads=("MainThread",))
    assert decode_footprint(encode_footprint(fp), shown="fp.json").unregioned_threads == \
        ("MainThread",)
    doc = fp.to_json()
    del doc["unregioned_threads"]
    older = decode_footprint(json.dumps(doc).encode(), shown="fp.json")
    assert older.unregioned_threads is None
    assert "unregioned_threads" not in older.to_json()


POLLER = {"atom/poller.py": "def poll(queue):\n    return queue[:1]\n\n\n"
                            "def sample(logits):\n    return logits[0]\n"}
BASE = {**ENGINE, **POLLER}
OLD = engine_digest(BASE)
LAWS: list[dict[str, Any]] = [
    {"name": "sampling", "target": "sample_s", "terms": {"1": 0.0011}},
]
RAN: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    # unit: (phases, regions in steps, regions at start-up)
    "poll": (("steps",), ("*",), ()),
    "sample": (("steps",), ("sample_s",), ()),
}


def _footprint_bytes(threads: tuple[str, ...] | None) -> bytes:
    return engine_footprint_bytes(BASE, OLD, RAN, regions=("*", "sample_s"),
                                  unregioned_threads=threads)


@pytest.fixture(params=[("MainThread",), None], ids=["recorded", "older"])
def repo(tmp_path: Path, request: pytest.FixtureRequest,
         monkeypatch: pytest.MonkeyPatch) -> tuple[Path, bool]:
    """Laws fitted on OLD with a footprint whose poll ran with no region open, committed;
    the footprint names the threads that ran there, or (older) does not."""
    root = init_repo(tmp_path / "repo")
    commit_fitted_with_footprint(root, BASE, OLD, LAWS, _footprint_bytes(request.param))
    monkeypatch.chdir(root)
    return root, request.param is not None


def test_rekey_names_the_threads_of_a_poll_that_ran_outside_any_region(
        repo: tuple[Path, bool]) -> None:
    root, named = repo
    path = root / "atom/poller.py"
    path.write_text(path.read_text().replace("queue[:1]", "queue[:2]"))
    why = ("in steps with no region open (threads: MainThread)" if named
           else "in steps with no region open")
    said = f"1 unit changed: poll (ran in steps, {why})"
    rekeyed = lawkit("rekey", "--why", "a poll edit", "--dry-run")
    assert f"footprint verdict steps: footprint fp.json, {said}" in rekeyed.output, \
        rekeyed.output
