"""The ``lawkit.capture`` files a run of a command wrote, found under its working directory, and
each region's seconds in the rows that run added.

A text capture (``.csv``, ``.jsonl``) is known by the host file ``lawkit.capture`` keeps beside
it (``run1.csv.host.json``). Before the run, where every capture ends is noted; after it, the
rows past that point are the run's, so a harness that appends to one file every run is read
right, and a large file is not read again. A torn last line (a run killed mid-row) is no row.
Parquet captures, written by pyarrow, are not read here: ``footprint`` never imports it.

Standard library only: ``footprint record`` and ``footprint overhead`` read these in the
recording's own process, which stays light.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from lawkit.capture.host import SUFFIX, host_path
from lawkit.errors import CaptureError

_SKIPPED = frozenset({"__pycache__", "node_modules", "site-packages"})
MAX_ENTRIES = 50_000
"""Folder entries walked at most when looking for captures (a work tree, not a disk)."""


@dataclass
class RunCaptures:
    """The captures under a folder as they were before a run: where each one's next row will
    begin, and its last line when that has no line break yet."""

    folder: Path
    ends: dict[Path, tuple[int, bytes]] = field(default_factory=dict)

    @classmethod
    def before(cls, folder: Path) -> RunCaptures:
        """Note where every capture under ``folder`` ends, before the run (its last 64 KiB
        read, not its rows)."""
        found = cls(folder)
        for path in _captures_under(folder):
            data = _read(path, max(0, _size(path) - _TAIL))
            found.ends[path] = (_size(path) - len(data) + data.rfind(b"\n") + 1,
                                data[data.rfind(b"\n") + 1:])
        return found

    def column_times(self) -> dict[str, list[float]]:
        """Each column's numbers, step by step, in the rows the run added: a region's seconds
        per step (a column no row of the run has is left out; a step that did not enter a
        region has no value there)."""
        times: dict[str, list[float]] = {}
        for path in _captures_under(self.folder):
            start, last = self.ends.get(path, (0, b""))
            added = _read(path, start)
            if last and added.startswith(last + b"\n"):  # a whole last row, kept by the run
                added = added[len(last) + 1:]
            header = b""
            if path.suffix == ".csv" and start == 0:
                header, _, added = added.partition(b"\n")
            elif path.suffix == ".csv":
                header = _read(path, 0, _TAIL).partition(b"\n")[0]
            for row in _rows(path, header, added):
                for name, value in row.items():
                    if value is not None:
                        times.setdefault(name, []).append(value)
        return times


def region_seconds(times: dict[str, list[float]]) -> dict[str, float]:
    """Each region's seconds in all, over the steps of ``times``."""
    return {name: math.fsum(values) for name, values in times.items()}


class Kept:
    """Copies of the captures under a folder, put back after each run, so that runs made only
    to measure leave the user's captures as they were."""

    def __init__(self, folder: Path, spare: Path) -> None:
        self.folder, self.spare = folder, spare
        self.copies: dict[Path, Path] = {}
        for index, path in enumerate(_captures_under(folder)):
            for original in (path, host_path(path)):
                copy = spare / f"{index}{original.name[len(path.name):]}"
                shutil.copy2(original, copy)
                self.copies[original] = copy

    def restore(self) -> None:
        """Put every capture back as it was, and remove those the run created."""
        for path in _captures_under(self.folder):
            if path not in self.copies:
                path.unlink(missing_ok=True)
                host_path(path).unlink(missing_ok=True)
        for original, copy in self.copies.items():
            shutil.copy2(copy, original)


def _captures_under(folder: Path) -> list[Path]:
    """Every text capture under ``folder`` (by its host file), hidden folders, caches and
    virtual environments left out."""
    found: list[Path] = []
    seen = 0
    for top, dirs, files in os.walk(folder):
        seen += len(dirs) + len(files)
        if seen > MAX_ENTRIES:
            break
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIPPED
                         and not os.path.exists(os.path.join(top, d, "pyvenv.cfg")))
        for name in sorted(files):
            if name.endswith(SUFFIX) and name[:-len(SUFFIX)] in files:
                capture = Path(top, name[:-len(SUFFIX)])
                if capture.suffix in (".csv", ".jsonl", ".ndjson"):
                    found.append(capture)
    return found


_TAIL = 1 << 16  # a row (or a CSV header) is shorter than this


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _read(path: Path, start: int, size: int = -1) -> bytes:
    try:
        with path.open("rb") as file:
            file.seek(start)
            return file.read(size)
    except OSError as exc:
        raise CaptureError(f"cannot read: {exc.strerror or exc}", path=str(path)) from None


def _rows(path: Path, header: bytes, data: bytes) -> Iterator[dict[str, float | None]]:
    """The whole rows in ``data`` (a text capture's bytes after its header or its earlier
    rows), as column -> number (None where empty; a cell that is not a number is left out)."""
    lines = data.decode("utf-8", "replace").splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines.pop()  # torn: a run killed mid-row
    if path.suffix == ".csv":
        names = next(csv.reader([header.decode("utf-8", "replace").rstrip("\r\n")]), [])
        for cells in csv.reader(lines):
            yield {name: _number(cell) for name, cell in zip(names, cells, strict=False)}
        return
    for line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            yield {str(k): float(v) if isinstance(v, int | float) else None
                   for k, v in row.items()}


def _number(cell: str) -> float | None:
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None
