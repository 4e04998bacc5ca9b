"""Where a capture's finished rows go: a text file appended to (CSV, JSON Lines), or columns
written as Parquet at close.

A text capture's rows are written whole, in one `write` each time where the system allows,
at least every `FLUSH_SECONDS` (a background thread) and at close. A write that fails (the
disk full for a moment) loses nothing: the bytes not written stay held, in order, and the next
flush writes them first, so that a row cut by a short write is completed where it was cut
before any other follows, and a torn row can only be the file's last. While a write fails,
the capture's next step tries again and raises a CaptureError if it fails still; close does
too, and may be called again once the disk has room.
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import json
import math
import os
import threading
import time
from array import array
from pathlib import Path

from lawkit.capture.append import open_for_append
from lawkit.capture.host import METADATA_KEY, Host, host_json, keep_host
from lawkit.errors import CaptureError

FLUSH_SECONDS = 1.0
"""Rows finished are written at least this often (and at close)."""
CLOSE_TRIES = (0.1, 0.5)
"""The pauses between the tries of close's last write, when one fails (a full disk may clear
in a moment, as a log rotates)."""


class Sink:
    """Where finished rows go."""

    next_step = 0
    """The first step's number: 0, or the step after an appended file's last row."""
    closed = False
    failure: str | None = None
    """Why the last write failed, while rows wait to be written (None: none failed)."""

    def add(self, step: int, features: list[float | int], totals: list[int | None]) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """Write out the rows finished so far (a CaptureError when the write fails)."""

    def close(self) -> None:
        """Write every row and close the file; a CaptureError, with every row still held, when
        the write fails (closing again tries again)."""
        raise NotImplementedError


class TextSink(Sink):
    """CSV or JSON Lines: whole rows appended to the file."""

    def __init__(self, path: Path, columns: tuple[str, ...], digest: str, host: Host,
                 *, jsonl: bool) -> None:
        self.shown = str(path)
        self.jsonl = jsonl
        self.digest = digest
        self.rows: collections.deque[str] = collections.deque()
        """Finished rows not yet taken by a flush (appended by the step thread)."""
        self.held = bytearray()
        """Rows taken by a flush and not yet written (a failed or short write leaves them)."""
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.json_names = [f"{json.dumps(c)}: " for c in columns]
        header = b"" if jsonl else (",".join(columns) + "\n").encode()
        existing = open_for_append(path, self.shown, columns, header, digest, jsonl)
        try:
            keep_host(path, self.shown, host, rows_exist=existing.rows_exist)
            existing.prepare()
        except BaseException:
            os.close(existing.fd)
            raise
        self.fd, self.next_step = existing.fd, existing.next_step

    def add(self, step: int, features: list[float | int], totals: list[int | None]) -> None:
        cells = [repr(v) for v in features]
        cells += ["" if t is None else repr(t / 1e9) for t in totals]
        if self.jsonl:
            cells = ["null" if c == "" else c for c in cells]
            names = self.json_names
            body = ", ".join(f"{n}{v}" for n, v in
                             zip(names, [str(step), *cells, f'"{self.digest}"'], strict=True))
            self.rows.append(f"{{{body}}}\n")
        else:
            self.rows.append(f"{step},{','.join(cells)},{self.digest}\n"
                             if cells else f"{step},{self.digest}\n")

    def flush(self) -> None:
        if os.getpid() != self.pid:
            return  # a forked child's copy (whose lock may be held for ever): the parent writes
        with self.lock:
            if self.fd < 0:
                return
            count = len(self.rows)
            if count:
                self.held += "".join([self.rows.popleft() for _ in range(count)]).encode()
            held = self.held
            try:
                while held:
                    del held[:os.write(self.fd, held)]
            except OSError as exc:
                self.failure = exc.strerror or str(exc)
                raise CaptureError(f"cannot write: {self.failure}; {self.waiting()} finished "
                                   "rows are held in memory, not lost", path=self.shown) from None
            self.failure = None

    def waiting(self) -> int:
        """How many finished rows are not on disk yet (one cut by a short write included)."""
        return len(self.rows) + self.held.count(b"\n")

    def close(self) -> None:
        if self.closed:
            return
        for pause in (*CLOSE_TRIES, None):
            try:
                self.flush()
                break
            except CaptureError:
                if pause is None:
                    raise
                time.sleep(pause)
        with self.lock:
            if self.fd >= 0 and os.getpid() == self.pid:
                os.close(self.fd)
            self.fd = -1
            self.closed = True


class ColumnsSink(Sink):
    """Parquet: columns kept in arrays (8 bytes a value), written whole at close."""

    def __init__(self, path: Path, key: str, digest: str, host: Host,
                 features: tuple[str, ...], regions: tuple[str, ...]) -> None:
        self.path, self.key, self.digest, self.host = path, key, digest, host
        if self.path.exists():
            raise CaptureError("exists: a Parquet capture is written whole at close, never "
                               "appended to; name a new file (or remove this one)",
                               path=str(self.path))
        if importlib.util.find_spec("pyarrow") is None:  # found now, imported at close
            raise CaptureError(NO_PYARROW, path=str(self.path))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.steps = array("q")
        self.features = {name: array("d") for name in features}
        self.regions = {name: array("d") for name in regions}
        self.pid = os.getpid()

    def add(self, step: int, features: list[float | int], totals: list[int | None]) -> None:
        self.steps.append(step)
        for column, value in zip(self.features.values(), features, strict=True):
            column.append(value)
        for column, total in zip(self.regions.values(), totals, strict=True):
            column.append(math.nan if total is None else total / 1e9)

    def close(self) -> None:
        if self.closed or os.getpid() != self.pid:
            return
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise CaptureError(NO_PYARROW, path=str(self.path)) from None
        # Arrays from their buffers: `pa.array` would import pandas (to ask whether the values
        # are a Series), which takes half a second, and fails at interpreter exit.
        rows = len(self.steps)
        columns = {"step": pa.Array.from_buffers(pa.int64(), rows, [None, pa.py_buffer(
            self.steps)])}
        for name, values in self.features.items():
            columns[name] = pa.Array.from_buffers(pa.float64(), rows, [None, pa.py_buffer(values)])
        for name, values in self.regions.items():
            valid = bytearray((rows + 7) // 8)
            for i, value in enumerate(values):
                if value == value:  # NaN: the region was not entered
                    valid[i >> 3] |= 1 << (i & 7)
            columns[name] = pa.Array.from_buffers(pa.float64(), rows, [pa.py_buffer(valid),
                                                                       pa.py_buffer(values)])
        width = len(self.digest)
        offsets = array("i", range(0, (rows + 1) * width, width))
        columns[self.key] = pa.Array.from_buffers(pa.string(), rows, [
            None, pa.py_buffer(offsets), pa.py_buffer(self.digest.encode() * rows)])
        table = pa.table(columns).replace_schema_metadata({METADATA_KEY: host_json(self.host)})
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            pq.write_table(table, temp)
            os.replace(temp, self.path)
        except OSError as exc:
            temp.unlink(missing_ok=True)
            self.failure = exc.strerror or str(exc)
            raise CaptureError(f"cannot write: {self.failure}; its {rows} rows are held in "
                               "memory, not lost", path=str(self.path)) from None
        self.closed = True
        self.failure = None


NO_PYARROW = ("writing Parquet needs pyarrow: pip install 'lawkit[fit]' (or pyarrow), or "
              "capture to .csv or .jsonl")


class Flusher(threading.Thread):
    """Writes a text capture's finished rows every FLUSH_SECONDS until stopped; a failed write
    is tried again at the next (the step thread learns of it at its next step)."""

    lawkit_runs_no_engine_code = True
    """It runs no engine code, so the 3.11 recorder need not count it as a thread in steps
    with no region open (`lawkit.footprint.measured.cover`)."""

    def __init__(self, sink: Sink) -> None:
        super().__init__(name="lawkit-capture-flush", daemon=True)
        self.sink = sink
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(FLUSH_SECONDS) and not self.sink.closed:
            # A failed write is held and tried again; the step thread's next step raises it.
            with contextlib.suppress(CaptureError):
                self.sink.flush()

    def stop(self) -> None:
        self.stopped.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join()
