"""A capture's regions behave the same whether or not a footprint is being recorded: asyncio
tasks interleaving the regions of one step raise the documented CaptureError in both, and leave
no region open and no nesting counter stuck."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import lawkit.footprint
from lawkit import capture
from lawkit.capture import CaptureError
from lawkit.footprint.measured.markers import MARKERS

REGIONS = ("schedule_s", "sample_s")
MISNESTED = (r"step 0: region 'schedule_s' exited while region 'sample_s', entered after it, is "
             r"still open: regions nest")


class _Recorder:
    """A recorder's seat taken: the markers tell it every switch, as in a recorded process."""

    def __init__(self) -> None:
        self.switches: list[tuple[str, ...]] = []

    def switched_regions(self, regions: tuple[str, ...]) -> None:
        self.switches.append(regions)

    def __getattr__(self, name: str) -> Any:
        return lambda *args: None


async def _interleaved(cap: capture.Capture) -> None:
    """Task a enters schedule_s and awaits; task b enters sample_s; a leaves schedule_s while
    b is still in sample_s."""
    a_in, b_in = asyncio.Event(), asyncio.Event()

    async def a() -> None:
        with cap.region("schedule_s"):
            a_in.set()
            await b_in.wait()

    async def b() -> None:
        await a_in.wait()
        with cap.region("sample_s"):
            b_in.set()
            await asyncio.sleep(0.01)

    await asyncio.gather(a(), b())


@pytest.mark.parametrize("recorded", [False, True], ids=["not recorded", "recorded"])
def test_asyncio_tasks_interleaving_regions_raise_the_same_capture_error_recorded_or_not(
        tmp_path: Path, workspace: str, monkeypatch: pytest.MonkeyPatch, recorded: bool) -> None:
    recorder = _Recorder()
    if recorded:
        monkeypatch.setattr(MARKERS, "recorder", recorder)
    path = tmp_path / "run.csv"
    with capture.open(path, features=("n",), regions=REGIONS) as cap:
        cap.steps()
        with pytest.raises(CaptureError, match=MISNESTED), cap.step(n=1):
            asyncio.run(_interleaved(cap))
        assert lawkit.footprint.open_regions() == ()
        # no counter stuck: the next step times both regions, once each
        with cap.step(n=2), cap.region("schedule_s"), cap.region("sample_s"):
            time.sleep(0.002)
    rows = [line.split(",") for line in path.read_text().splitlines()[1:]]
    assert [row[:2] for row in rows] == [["0", "2"]]
    assert float(rows[0][2]) >= 0.002 and float(rows[0][3]) >= 0.002
    if recorded:  # the recorder saw schedule_s leave from under sample_s, which stayed open
        assert recorder.switches[:5] == [("schedule_s",), ("schedule_s", "sample_s"),
                                         ("schedule_s",), (), ("sample_s",)]
        assert recorder.switches[-1] == ()


@pytest.mark.parametrize("recorded", [False, True], ids=["not recorded", "recorded"])
def test_a_region_exited_twice_or_left_open_at_the_end_of_its_step_is_a_capture_error(
        tmp_path: Path, workspace: str, monkeypatch: pytest.MonkeyPatch, recorded: bool) -> None:
    if recorded:
        monkeypatch.setattr(MARKERS, "recorder", _Recorder())
    with capture.open(tmp_path / "run.csv", features=("n",), regions=REGIONS) as cap:
        cap.steps()
        region = cap.region("schedule_s")
        with pytest.raises(CaptureError, match=r"step 0: region 'schedule_s' exited, but it is "
                                               r"not open"), cap.step(n=1):
            region.__exit__(None, None, None)
        with pytest.raises(CaptureError, match=r"step 0 ended with region 'schedule_s' still "
                                               r"open"), cap.step(n=1):
            region.__enter__()
        assert lawkit.footprint.open_regions() == ()
        with cap.step(n=2), region:
            pass
    assert (tmp_path / "run.csv").read_text().splitlines()[1].split(",")[2] != ""


HARNESS = """
import asyncio, sys
sys.path.insert(0, "engine")
import atom  # the engine recorded
import lawkit.footprint
from lawkit import capture

async def interleaved(cap):
    a_in, b_in = asyncio.Event(), asyncio.Event()
    async def a():
        with cap.region("schedule_s"):
            a_in.set()
            await b_in.wait()
    async def b():
        await a_in.wait()
        with cap.region("sample_s"):
            b_in.set()
            await asyncio.sleep(0.01)
    await asyncio.gather(a(), b())

with capture.open(sys.argv[1], features=("n",), regions=("schedule_s", "sample_s")) as cap:
    cap.steps()
    try:
        with cap.step(n=1):
            asyncio.run(interleaved(cap))
    except Exception as exc:
        print(type(exc).__name__, exc.detail)
    print("open:", lawkit.footprint.open_regions(), "recording:", lawkit.footprint.recording())
    with cap.step(n=2), cap.region("schedule_s"):
        pass
"""


def test_the_same_harness_says_the_same_under_lawkit_footprint_record(
        tmp_path: Path, workspace: str) -> None:
    (tmp_path / "harness.py").write_text(HARNESS)
    bare = subprocess.run([sys.executable, "harness.py", "bare.csv"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, check=False)
    recorded = subprocess.run([sys.executable, "-m", "lawkit", "footprint", "record", "--out",
                               "fp.json", "--", sys.executable, "harness.py", "recorded.csv"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300,
                              check=False)
    assert bare.returncode == 0, bare.stderr
    assert recorded.returncode == 0, recorded.stderr
    said, open_ = bare.stdout.splitlines()
    assert said.startswith("CaptureError step 0: region 'schedule_s' exited while region "
                           "'sample_s', entered after it, is still open")
    assert recorded.stdout.splitlines()[:2] == [said, open_.replace("False", "True")]
    for name in ("bare.csv", "recorded.csv"):
        assert [r.split(",")[:2] for r in (tmp_path / name).read_text().splitlines()[1:]] == \
            [["0", "2"]]
