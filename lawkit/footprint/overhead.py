"""`lawkit footprint overhead`: what recording costs a capture harness's regions, measured
rather than estimated.

The harness (a command whose engine uses ``lawkit.capture``) runs bare (no recorder) and
recorded (as ``footprint record`` records it) in turn, bare first and last: B R B R ... B, N
recorded runs and N + 1 bare ones. Each run's region times are read from the rows it added to
the captures under the working directory (`runcaptures`); a run's time for a region is the
median over its steps. Per region: the recorded/bare ratio, each recorded run against the mean
of the bare runs either side of it (a machine that drifts moves both), and the A/A, each bare
run against the one before it (what the machine's noise alone gives); the median over runs of
each. The captures are put back as they were after every run: these runs only measure.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import math
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lawkit.config import Workspace
from lawkit.footprint.cost import RecordCost, record_cost
from lawkit.footprint.document import ANY_REGION
from lawkit.footprint.errors import RecordRefused
from lawkit.footprint.record import RecordReport, record_footprint
from lawkit.footprint.runcaptures import Kept, RunCaptures, region_seconds


@dataclass(frozen=True)
class RegionOverhead:
    """One region's recorded/bare ratio and A/A (medians over runs), and its bare time."""

    region: str
    bare_ms: float
    ratio: float
    aa: float


@dataclass(frozen=True)
class OverheadReport:
    """Each region's overhead over ``runs`` recorded runs, the recorder, and its own estimate
    from the last recorded run's event counts."""

    runs: int
    recorder: str
    regions: tuple[RegionOverhead, ...]
    cost: RecordCost

    def lines(self) -> list[str]:
        """The table: a region per line, its bare time, recorded/bare and A/A."""
        width = max(len("region"), *(len(r.region) for r in self.regions))
        head = (f"{self.runs} recorded and {self.runs + 1} bare runs, alternated "
                f"({self.recorder}); per region the median over runs of recorded/bare, and of "
                "bare/bare (A/A: the machine's noise)")
        table = [f"{'region':<{width}}  {'bare ms':>9}  {'recorded':>9}  {'A/A':>7}"]
        table += [f"{r.region:<{width}}  {r.bare_ms:>9.3f}  {r.ratio:>8.3f}x  {r.aa:>6.3f}x"
                  for r in self.regions]
        return [head, *table]


def measure_overhead(ws: Workspace, command: Sequence[str], runs: int, *,
                     cwd: Path | None = None) -> OverheadReport:
    """Run ``command`` bare and recorded in turn, ``runs`` recorded runs, and compare each
    region's times in the captures the runs wrote (under ``cwd``, default the working
    directory)."""
    if runs < 1:
        raise RecordRefused(f"--runs {runs}: at least 1 (recorded runs, each between two bare "
                            "ones)")
    if not command:
        raise RecordRefused("no command given: `lawkit footprint overhead -- COMMAND...`, a "
                            "harness that writes captures with lawkit.capture")
    folder = (cwd or Path.cwd()).absolute()
    bare: list[dict[str, list[float]]] = []
    recorded: list[dict[str, list[float]]] = []
    with tempfile.TemporaryDirectory(prefix="lawkit-overhead-") as spare:
        kept = Kept(folder, Path(spare))
        report: RecordReport | None = None
        notes: list[str] = []
        for index in range(2 * runs + 1):
            watch = RunCaptures.before(folder)
            try:
                if index % 2:
                    report = _recorded(ws, command, Path(spare) / "footprint.json", folder,
                                       notes)
                    recorded.append(watch.column_times())
                else:
                    _bare(command, folder)
                    bare.append(watch.column_times())
            finally:
                kept.restore()
    for note in dict.fromkeys(notes):  # each once, not once a run
        sys.stderr.write(note)
    assert report is not None
    regions = tuple(r for r in report.footprint.regions if r != ANY_REGION)
    if not regions:
        raise RecordRefused("the recorded runs entered no region in steps: time the engine's "
                            "regions with lawkit.capture (cap.region) and call cap.steps()")
    found = [r for r in regions if all(r in run for run in (*bare, *recorded))]
    if not found:
        raise RecordRefused(f"the runs wrote no rows timing {', '.join(regions)} to a "
                            "lawkit.capture .csv or .jsonl file in or below "
                            f"{ws.rel(folder)}: overhead reads each run's region times from "
                            "the captures it writes there")
    return OverheadReport(runs, report.footprint.recorder,
                          tuple(_region(name, bare, recorded) for name in found),
                          record_cost(report.events, report.armed_threads,
                                      region_seconds(recorded[-1])))


def _bare(command: Sequence[str], folder: Path) -> None:
    try:
        code = subprocess.run(list(command), cwd=folder, check=False).returncode
    except OSError as exc:
        raise RecordRefused(f"cannot run {command[0]}: {exc.strerror}") from None
    if code != 0:
        raise RecordRefused(f"the command, run bare, exited with status {code}: overhead "
                            "compares runs that worked")


def _recorded(ws: Workspace, command: Sequence[str], out: Path, folder: Path,
              notes: list[str]) -> RecordReport:
    """One recorded run; what `record` says on stderr is kept for `notes`, said once."""
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        report = record_footprint(ws, command, out, cwd=folder)
    notes.extend(line + "\n" for line in said.getvalue().splitlines())
    return report


def _region(name: str, bare: list[dict[str, list[float]]],
            recorded: list[dict[str, list[float]]]) -> RegionOverhead:
    """A region's figures, from each run's median step time (a run whose bare neighbours
    timed it at zero, below the clock's grain, left out; nan when none is left)."""
    bare_runs = [statistics.median(run[name]) for run in bare]
    ratios = [statistics.median(run[name]) / around for i, run in enumerate(recorded)
              if (around := statistics.fmean(bare_runs[i:i + 2]))]
    aa = [b / a for a, b in itertools.pairwise(bare_runs) if a]
    return RegionOverhead(name, statistics.median(bare_runs) * 1e3,
                          statistics.median(ratios) if ratios else math.nan,
                          statistics.median(aa) if aa else math.nan)

