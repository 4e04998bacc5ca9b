"""Reading what the measured processes left: their markers and their coverage data files.

Every process the start-up hook measured wrote a marker naming its pid; coverage.py wrote one
data file per measuring instance, named ``.coverage.<host>.pid<PID>.X<random>x`` (newer
versions add ``.<hash>``). A marker with no data file of its pid is a process that left no data
(killed with SIGKILL, crashed before it could save): `record` refuses it. A pid reused by the
system during one recording is matched once.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lawkit.footprint.errors import RecordRefused

_PID_IN_NAME = re.compile(r"\.pid(\d+)\.X[A-Za-z0-9]+x(?:\.[A-Za-z0-9]+)?\Z")
_PHASE_OF_CONTEXT = {"startup": "startup", "steps": "steps"}


@dataclass(frozen=True)
class Process:
    """One measured process, as its marker names it."""

    pid: int
    main: bool
    argv: tuple[str, ...]
    error: str | None = None

    def label(self) -> str:
        """``process 123 (python run.py)``: how messages name it."""
        shown = " ".join(self.argv)
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return f"process {self.pid} ({shown})"


@dataclass
class Measurement:
    """The processes measured and the arcs each measured file ran, by phase."""

    processes: list[Process]
    arcs: dict[str, dict[str, set[tuple[int, int]]]] = field(default_factory=dict)


def read_markers(folder: Path) -> list[Process]:
    """The processes that announced themselves, one per pid (an error wins)."""
    by_pid: dict[int, Process] = {}
    for path in sorted((folder / "markers").glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            proc = Process(int(doc["pid"]), bool(doc["main"]), tuple(map(str, doc["argv"])),
                           doc.get("error"))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RecordRefused(f"a measured process left an unreadable marker {path.name} "
                                f"({exc}): record again") from None
        if proc.pid not in by_pid or proc.error:
            by_pid[proc.pid] = proc
    return [by_pid[pid] for pid in sorted(by_pid)]


def data_files(folder: Path) -> Iterator[tuple[int, Path]]:
    """Each coverage data file with the pid of the process that wrote it."""
    for path in sorted((folder / "data").iterdir()):
        match = _PID_IN_NAME.search(path.name)
        if match:
            yield int(match.group(1)), path


def collect(folder: Path) -> Measurement:
    """Every process's marker and data; a refusal naming the first process without data."""
    from coverage import CoverageData
    from coverage.exceptions import CoverageException

    processes = read_markers(folder)
    for proc in processes:
        if proc.error:
            raise RecordRefused(f"{proc.label()} was not measured: {proc.error}")
    files = list(data_files(folder))
    have = {pid for pid, _ in files}
    for proc in processes:
        if proc.pid not in have:
            raise RecordRefused(f"{proc.label()} left no coverage data (killed with SIGKILL, "
                                "or it crashed): nothing written; record again")
    measurement = Measurement(processes)
    for pid, path in files:
        data = CoverageData(basename=str(path))
        try:
            data.read()
            _add_arcs(data, measurement)
        except (CoverageException, OSError) as exc:
            who = next((p.label() for p in processes if p.pid == pid), f"process {pid}")
            raise RecordRefused(f"the coverage data of {who} is unreadable ({path.name}: "
                                f"{exc}): nothing written; record again") from None
    return measurement


def _add_arcs(data: object, measurement: Measurement) -> None:
    from coverage import CoverageData

    assert isinstance(data, CoverageData)
    if not data.has_arcs() and data.measured_files():
        raise RecordRefused("coverage data without arcs: a process measured lines only "
                            "(another coverage config?): record again")
    for context in sorted(data.measured_contexts()):
        phase = _PHASE_OF_CONTEXT.get(context, "steps")  # a wrong steps only costs a refit
        data.set_query_contexts([f"^{re.escape(context)}$"])
        for filename in data.measured_files():
            arcs = data.arcs(filename) or []
            if arcs:
                by_phase = measurement.arcs.setdefault(os.path.abspath(filename), {})
                by_phase.setdefault(phase, set()).update(arcs)
    data.set_query_contexts(None)
