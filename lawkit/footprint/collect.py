"""Reading what the measured processes left: their markers and their coverage data files.

Every process the start-up hook measured wrote a marker ``markers/<pid>-<random>.json`` when it
started and ``<pid>-<random>.done`` once its data was saved. A marker without its ``.done`` is
a process that left no data (killed with SIGKILL, crashed, or still running when the command
ended): `record` refuses it. Every data file in ``data/`` must then be readable.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from lawkit.footprint.errors import RecordRefused

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


def read_markers(folder: Path) -> list[tuple[Process, bool]]:
    """Each process that announced itself, and whether it said its data was saved."""
    found: list[tuple[Process, bool]] = []
    for path in sorted((folder / "markers").glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            proc = Process(int(doc["pid"]), bool(doc["main"]), tuple(map(str, doc["argv"])),
                           doc.get("error"))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RecordRefused(f"a measured process left an unreadable marker {path.name} "
                                f"({exc}): record again") from None
        found.append((proc, path.with_suffix(".done").exists()))
    return found


def collect(folder: Path) -> Measurement:
    """Every process's marker and data; a refusal naming the first process without data."""
    from coverage import CoverageData
    from coverage.exceptions import CoverageException

    markers = read_markers(folder)
    for proc, _ in markers:
        if proc.error:
            raise RecordRefused(f"{proc.label()} was not measured: {proc.error}")
    for proc, saved in markers:
        if not saved:
            raise RecordRefused(f"{proc.label()} left no coverage data (killed with SIGKILL, "
                                "crashed, or still running when the command ended): nothing "
                                "written; record again")
    measurement = Measurement([proc for proc, _ in markers])
    for path in sorted((folder / "data").iterdir()):
        data = CoverageData(basename=str(path))
        try:
            data.read()
            _add_arcs(data, measurement)
        except (CoverageException, OSError) as exc:
            raise RecordRefused(f"a measured process left unreadable coverage data "
                                f"({path.name}: {exc}): nothing written; record again") from None
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
