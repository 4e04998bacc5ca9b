"""Capture records written by the engine's own run (DESIGN.md section 12): one row per step.

    from lawkit import capture

    with capture.open("captures/run1.csv", features=("batch_size", "num_tokens"),
                      regions=("schedule_s", "sample_s")) as cap:
        ...                                       # start-up
        cap.steps()                               # = lawkit.footprint.phase("steps")
        for batch in batches:
            with cap.step(batch_size=len(batch), num_tokens=n):
                with cap.region("schedule_s"):
                    ...
                with cap.region("sample_s"):
                    ...

Columns, in this order: `step` (0, 1, ... counting on from an appended file's last row), the
features as declared, the regions as declared, then the key column (`atom`) holding the digest
computed at `open` from the workspace config found from the working directory (or `digest=`),
so that `lawkit fit` needs no `--captured-on`. A region's cell is its seconds in that step
(`time.perf_counter_ns`, summed when it is entered twice), empty when it was not entered: `fit`
and `score` then leave that row out of the laws on that region. A feature may also be given
inside the step with `cap.set(name=value)` (a batch size known once the scheduler has run).

`.csv` and `.jsonl` are written with the standard library: whole rows, in one `write` each
time, at least every second (a background thread) and at close, so a run killed at any moment
leaves whole rows, and at most a torn last line, which lawkit's reader drops and names.
`.parquet` is written at close with pyarrow (imported then, and only then); it is never appended
to. An existing `.csv`/`.jsonl` is appended to only when its header is this capture's and its
rows name the same digest.

Every misuse is a `CaptureError` (a `LawkitError`: the CLI's exit 2) naming the step: a feature
missing from a step or not declared, a feature that is not a finite number, a region not
declared, a region entered outside a step or before `cap.steps()`. The rows already finished are
written out before it is raised, so nothing already captured is lost; the step that failed has
no row.

Cost: the region markers are `lawkit.footprint.enter_region`/`exit_region`, which record the
footprint's regions when `lawkit footprint record` runs the process; `cap.region(name)` returns
one reusable context object per name, so an enter plus exit allocates nothing of its own
(`bench/capture.py` measures it). A capture is driven from one thread, the one running the
steps. Standard library only: importing this module loads no numpy, pandas, scipy or pyarrow.
"""

from __future__ import annotations

import builtins
import collections
import importlib.util
import json
import math
import numbers
import operator
import os
import threading
import weakref
from array import array
from collections.abc import Sequence
from pathlib import Path
from time import perf_counter_ns
from types import TracebackType
from typing import Literal

import lawkit.footprint as _footprint
from lawkit.errors import CaptureError
from lawkit.footprint import RegionError, enter_region, exit_region

__all__ = ["Capture", "CaptureError", "open"]

Format = Literal["csv", "jsonl", "parquet"]
_SUFFIXES: dict[str, Format] = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
                                ".parquet": "parquet", ".pq": "parquet"}
FLUSH_SECONDS = 1.0
"""Rows finished are written at least this often (and at close)."""
_MAX_HEAD = 1 << 20  # the longest header (or first JSON Lines row) read back when appending


def open(  # named as gzip.open and tarfile.open are: `capture.open(...)`
    path: str | os.PathLike[str],
    *,
    features: Sequence[str],
    regions: Sequence[str] = (),
    digest: str | None = None,
    key: str | None = None,
) -> Capture:
    """A capture writing one row per step to `path` (`.csv`, `.jsonl` or `.parquet`).

    `digest` (default: computed from the workspace config found from the working directory)
    fills the key column, named `key` (default: the workspace's `key`, `atom`).
    """
    return Capture(path, features=features, regions=regions, digest=digest, key=key)


class Capture:
    """An open capture file: `steps()`, then `with step(**features)` and `with region(name)`."""

    __slots__ = ("__weakref__", "_closed", "_features", "_finalizer", "_flusher", "_format",
                 "_in_step", "_nones", "_pid", "_region_names", "_regions", "_sink", "_step",
                 "_step_context", "_totals", "_values", "columns", "digest", "key", "path")

    def __init__(self, path: str | os.PathLike[str], *, features: Sequence[str],
                 regions: Sequence[str] = (), digest: str | None = None,
                 key: str | None = None) -> None:
        self.path = Path(path)
        fmt = _format_of(self.path)
        features, regions = _names(features, "features"), _names(regions, "regions")
        key, digest = _key_and_digest(key, digest)
        clash = sorted({"step", key} & {*features, *regions} | set(features) & set(regions))
        if clash:
            raise CaptureError(f"column {clash[0]!r} is named twice: the columns are step, the "
                               "features, the regions and the key column, each once",
                               path=str(self.path))
        self.key, self.digest, self._format = key, digest, fmt
        self.columns: tuple[str, ...] = ("step", *features, *regions, key)
        """The columns written, in order."""
        self._features = features
        self._region_names = regions
        self._nones: list[int | None] = [None] * len(regions)
        self._totals: list[int | None] = list(self._nones)
        """Each region's nanoseconds in the current step (None: not entered), one list reset in
        place, which the region objects hold."""
        self._regions = {name: _Region(self, i, name) for i, name in enumerate(regions)}
        self._values: dict[str, float | int] = {}
        self._in_step = False
        self._closed = False
        self._pid = os.getpid()
        self._step_context = _Step(self)
        self._sink: _Sink = _ColumnsSink(self) if fmt == "parquet" else _TextSink(self)
        self._step = self._sink.next_step
        self._flusher: _Flusher | None = None
        if isinstance(self._sink, _TextSink):
            self._flusher = _Flusher(self._sink)
            self._flusher.start()
        # An engine that never closes its capture still gets its rows at interpreter exit.
        self._finalizer = weakref.finalize(self, self._sink.close)

    # -- the engine's calls ---------------------------------------------------------------

    def steps(self) -> None:
        """Start-up is over: the steps begin (`lawkit.footprint.phase("steps")`)."""
        _footprint.phase("steps")

    def step(self, **features: float) -> _Step:
        """A context for one step, whose row holds `features` (and those `set` inside it)."""
        if self._in_step:
            raise self._error(f"step {self._step} begun inside step {self._step}: steps do "
                              "not nest; end the step before the next")
        if self._closed:
            raise self._error(f"step {self._step} begun after the capture was closed")
        if os.getpid() != self._pid:
            # its rows would be a copy's, written by no one: a silent loss
            raise CaptureError(f"step {self._step} begun in process {os.getpid()}, not the "
                               f"process {self._pid} that opened the capture (a forked worker): "
                               "open a capture file of the worker's own in the worker",
                               path=str(self.path))
        if _footprint.current_phase() != "steps":
            raise self._error(f"step {self._step} begun in the "
                              f"{_footprint.current_phase()} phase: call cap.steps() when "
                              "start-up is over")
        self._values = features
        self._in_step = True
        return self._step_context

    def set(self, **features: float) -> None:
        """Give (or replace) features of the current step, e.g. once the batch is known."""
        if not self._in_step:
            raise self._error(f"features set between steps (before step {self._step}): "
                              "call cap.set(...) inside `with cap.step(...)`")
        self._values.update(features)

    def region(self, name: str) -> _Region:
        """The context timing region `name` of the current step (one object per name)."""
        try:
            return self._regions[name]
        except (KeyError, TypeError):
            raise self._error(f"step {self._step}: region {name!r} was not declared at open "
                              f"(regions: {', '.join(self._region_names) or 'none'})") from None

    def close(self) -> None:
        """Write the rows not yet written and close the file (Parquet: write it)."""
        if self._closed:
            return
        self._closed = True
        if self._flusher is not None:
            self._flusher.stop()
        self._finalizer()

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    # -- internals --------------------------------------------------------------------------

    def _error(self, message: str) -> CaptureError:
        """A CaptureError naming the file, after the rows finished so far are written."""
        self._sink.flush()
        return CaptureError(message, path=str(self.path))

    def _end_step(self, failed: bool) -> None:
        """Close the current step: its row, unless its body raised."""
        totals = self._totals[:]
        values = self._values
        self._in_step = False
        self._values = {}
        self._totals[:] = self._nones
        if failed:
            return
        row = _feature_row(values, self._features)
        if isinstance(row, str):
            raise self._error(f"step {self._step}: {row}")
        self._sink.add(self._step, row, totals)
        self._step += 1


class _Step:
    """The context of a step: `with cap.step(...):` (one object per capture)."""

    __slots__ = ("_capture",)

    def __init__(self, capture: Capture) -> None:
        self._capture = capture

    def __enter__(self) -> _Step:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._capture._end_step(kind is not None)


class _Region:
    """The context timing one region (one object per region name, reused every step)."""

    __slots__ = ("_capture", "_depth", "_index", "_name", "_start", "_totals")

    def __init__(self, capture: Capture, index: int, name: str) -> None:
        self._capture = capture
        self._totals = capture._totals
        self._index = index
        self._name = name
        self._depth = 0
        self._start = 0

    def __enter__(self) -> None:
        if not self._capture._in_step:
            capture = self._capture
            raise capture._error(f"region {self._name!r} entered between steps (before step "
                                 f"{capture._step}): enter regions inside `with cap.step(...)`")
        # The footprint's marker only while recording (the region stack is the recorder's);
        # else the phase check alone: half a region's cost on 3.12 (bench/capture.py).
        if _footprint._recorder is not None or _footprint._phase != "steps":
            try:
                enter_region(self._name)
            except RegionError as exc:
                raise self._capture._error(f"step {self._capture._step}: {exc}") from None
        depth = self._depth = self._depth + 1
        if depth == 1:  # a region entered inside itself is timed once, from the outside
            self._start = perf_counter_ns()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        end = perf_counter_ns()
        if _footprint._recorder is not None:
            exit_region(self._name)
        depth = self._depth = self._depth - 1
        if not depth:
            totals, index = self._totals, self._index
            before = totals[index]
            totals[index] = end - self._start if before is None else before + end - self._start


# -- validation -----------------------------------------------------------------------------


def _format_of(path: Path) -> Format:
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise CaptureError("a capture is written as .csv, .jsonl or .parquet (no .gz: a "
                           "compressed stream cut by a kill loses its last rows)", path=str(path))
    return fmt


def _names(names: Sequence[str], what: str) -> tuple[str, ...]:
    if isinstance(names, str):
        raise CaptureError(f"{what}: expected a sequence of column names, got the string "
                           f"{names!r} (write ({names!r},))")
    out = tuple(names)
    for name in out:
        if not isinstance(name, str) or not name.isidentifier():
            raise CaptureError(f"{what}: {name!r} is not a column name (letters, digits and "
                               "_, not starting with a digit, as formulas name columns)")
    if len(set(out)) < len(out):
        twice = next(n for n in out if out.count(n) > 1)
        raise CaptureError(f"{what}: {twice!r} is named twice")
    return out


def _feature_row(values: dict[str, float | int], declared: tuple[str, ...],
                 ) -> list[float | int] | str:
    """A step's features as plain ints and floats in declared order, or what is wrong with
    them, in words."""
    row: list[float | int] = []
    for name in declared:
        if name not in values:
            return f"feature {name!r} missing (give it to cap.step(...) or cap.set(...))"
        value = _plain_number(values[name])
        if value is None:
            return f"feature {name}={values[name]!r}: expected a number"
        if not math.isfinite(value):
            return f"feature {name}={values[name]!r}: expected a finite number"
        row.append(value)
    if len(values) > len(declared):
        extra = sorted(set(values) - set(declared))
        return (f"feature {extra[0]!r} was not declared at open (features: "
                f"{', '.join(declared) or 'none'})")
    return row


def _plain_number(value: object) -> float | int | None:
    """`value` as a plain int or float, whose repr is the number (numpy's scalars, an IntEnum
    and other int or float subclasses print otherwise); None for a bool or a non-number."""
    kind = type(value)
    if kind is float or kind is int:
        return value  # type: ignore[return-value]
    if isinstance(value, bool) or kind.__name__ == "bool_":  # numpy's bool too
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        pass
    return float(value) if isinstance(value, numbers.Real) else None


def _key_and_digest(key: str | None, digest: str | None) -> tuple[str, str]:
    """The key column's name and the digest it holds: given, or from the workspace."""
    from lawkit.config import digest_problem, load_workspace
    from lawkit.errors import LawkitError

    if digest is not None and key is not None:
        problem = digest_problem(digest, len(digest)) if isinstance(digest, str) else None
        if not isinstance(digest, str) or problem is not None or not 4 <= len(digest) <= 64:
            raise CaptureError(f"digest={digest!r}: expected 4 to 64 lowercase hex characters")
        return _names((key,), "key")[0], digest
    try:
        ws = load_workspace()
        key = key if key is not None else ws.digest.key
        if digest is None:
            from lawkit.keying.digest import current_digest

            digest = current_digest(ws)
    except LawkitError as exc:
        raise CaptureError(f"cannot compute the engine digest for the key column ({exc}): run "
                           "from the workspace, or pass digest= (and key=)") from None
    problem = digest_problem(digest, ws.digest.length)
    if problem is not None:
        raise CaptureError(f"digest={digest!r}: {problem}")
    return _names((key,), "key")[0], digest


# -- writing ----------------------------------------------------------------------------------


class _Sink:
    """Where finished rows go."""

    next_step = 0
    """The first step's number: 0, or the step after an appended file's last row."""
    closed = False

    def add(self, step: int, features: list[float | int], totals: list[int | None]) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        """Write out the rows finished so far."""

    def close(self) -> None:
        raise NotImplementedError


class _TextSink(_Sink):
    """CSV or JSON Lines: whole rows, one `os.write` per flush, appended to the file."""

    def __init__(self, capture: Capture) -> None:
        self.shown = str(capture.path)
        self.jsonl = capture._format == "jsonl"
        self.digest = capture.digest
        self.rows: collections.deque[str] = collections.deque()
        """Finished rows not yet written (appended by the step thread, taken by a flush)."""
        self.lock = threading.Lock()
        self.pid = os.getpid()
        self.json_names = [f"{json.dumps(c)}: " for c in capture.columns]
        header = b"" if self.jsonl else (",".join(capture.columns) + "\n").encode()
        self.fd, self.next_step = _open_for_append(capture.path, self.shown, capture.columns,
                                                   header, capture.digest, self.jsonl)

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
            if not count:
                return
            data = "".join([self.rows.popleft() for _ in range(count)]).encode()
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(self.fd, view):]
            except OSError as exc:
                raise CaptureError(f"cannot write: {exc.strerror}", path=self.shown) from None

    def close(self) -> None:
        try:
            self.flush()
        finally:
            with self.lock:
                if self.fd >= 0 and os.getpid() == self.pid:
                    os.close(self.fd)
                self.fd = -1
                self.closed = True


class _ColumnsSink(_Sink):
    """Parquet: columns kept in arrays (8 bytes a value), written whole at close."""

    def __init__(self, capture: Capture) -> None:
        # Not the capture itself: the finalizer that closes this sink must not keep it alive.
        self.path, self.key, self.digest = capture.path, capture.key, capture.digest
        if self.path.exists():
            raise CaptureError("exists: a Parquet capture is written whole at close, never "
                               "appended to; name a new file (or remove this one)",
                               path=str(self.path))
        if importlib.util.find_spec("pyarrow") is None:  # found now, imported at close
            raise CaptureError(_NO_PYARROW, path=str(self.path))
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.steps = array("q")
        self.features = {name: array("d") for name in capture._features}
        self.regions = {name: array("d") for name in capture._region_names}
        self.pid = os.getpid()

    def add(self, step: int, features: list[float | int], totals: list[int | None]) -> None:
        self.steps.append(step)
        for column, value in zip(self.features.values(), features, strict=True):
            column.append(value)
        for column, total in zip(self.regions.values(), totals, strict=True):
            column.append(math.nan if total is None else total / 1e9)

    def close(self) -> None:
        if os.getpid() != self.pid:
            return
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise CaptureError(_NO_PYARROW, path=str(self.path)) from None
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
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        pq.write_table(pa.table(columns), temp)
        os.replace(temp, self.path)


_NO_PYARROW = ("writing Parquet needs pyarrow: pip install 'lawkit[fit]' (or pyarrow), or "
               "capture to .csv or .jsonl")


class _Flusher(threading.Thread):
    """Writes a text capture's finished rows every FLUSH_SECONDS until stopped."""

    lawkit_runs_no_engine_code = True
    """It runs no engine code, so the 3.11 recorder need not count it as a thread in steps
    with no region open (`lawkit.footprint.cover`)."""

    def __init__(self, sink: _Sink) -> None:
        super().__init__(name="lawkit-capture-flush", daemon=True)
        self.sink = sink
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(FLUSH_SECONDS) and not self.sink.closed:
            try:
                self.sink.flush()
            except CaptureError:
                return  # the step thread's next flush (or close) raises it

    def stop(self) -> None:
        self.stopped.set()
        if self.is_alive() and threading.current_thread() is not self:
            self.join()


def _open_for_append(path: Path, shown: str, columns: tuple[str, ...], header: bytes,
                     digest: str, jsonl: bool) -> tuple[int, int]:
    """(a descriptor appending to `path`, the next step number): a new file gets the header;
    an existing one must hold this capture's header and digest. A torn last line (a run
    killed mid-row) is cut off first, so that the next row starts on a line of its own."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise CaptureError(f"cannot open for writing: {exc.strerror}", path=shown) from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            os.write(fd, header)
            return fd, 0
        with builtins.open(os.dup(fd), "rb") as f:
            head = f.readline(_MAX_HEAD)
            start = max(0, size - _MAX_HEAD)
            f.seek(start)
            tail = f.read()
        if jsonl:
            if not head.endswith(b"\n"):
                raise CaptureError("exists and holds no whole row: name a new file",
                                   path=shown)
            _check_jsonl_row(head, columns, shown)
        elif head != header:
            raise CaptureError(f"exists with another header ({_clip(head)}): append only "
                               f"captures with the columns {', '.join(columns)}; name a new "
                               "file", path=shown)
        cut = tail.rfind(b"\n") + 1  # the end of the last whole line
        begins = tail.rfind(b"\n", 0, max(cut - 1, 0)) + 1
        rows_start = 0 if jsonl else len(header)
        step = 0
        if start + begins >= rows_start and cut:
            step = _step_of(tail[begins:cut], columns, digest, shown, jsonl) + 1
        if cut < len(tail):
            os.ftruncate(fd, start + cut)
        return fd, step
    except BaseException:
        os.close(fd)
        raise


def _check_jsonl_row(line: bytes, columns: tuple[str, ...], shown: str) -> None:
    row = _jsonl_row(line, shown)
    if tuple(row) != columns:
        raise CaptureError(f"exists with other columns ({', '.join(map(str, row))}): append "
                           f"only captures with the columns {', '.join(columns)}; name a new "
                           "file", path=shown)


def _jsonl_row(line: bytes, shown: str) -> dict[str, object]:
    # A row this writer made holds one object of scalars: anything nested is not one, and is
    # not handed to json (whose recursion a deep line would exhaust).
    if line.count(b"{") + line.count(b"[") > 1:
        raise CaptureError("exists and its rows are not this writer's (nested JSON): name a "
                           "new file", path=shown)
    try:
        row = json.loads(line)
    except ValueError:
        raise CaptureError("exists and its first row is not JSON: name a new file",
                           path=shown) from None
    if not isinstance(row, dict):
        raise CaptureError("exists and its rows are not JSON objects: name a new file",
                           path=shown)
    return row


def _step_of(line: bytes, columns: tuple[str, ...], digest: str, shown: str,
             jsonl: bool) -> int:
    """The step number of a whole row of an existing capture, whose digest must be `digest`."""
    if jsonl:
        row = _jsonl_row(line, shown)
        step, named = row.get("step"), row.get(columns[-1])
    else:
        cells = line.decode("utf-8", "replace").rstrip("\r\n").split(",")
        step, named = (cells[0], cells[-1]) if len(cells) == len(columns) else (None, None)
    if named != digest:
        raise CaptureError(f"exists with rows on {columns[-1]}={named!r}: appending rows on "
                           f"{digest} would mix two engine digests in one file; name a new "
                           "file", path=shown)
    try:
        return int(str(step))
    except ValueError:
        raise CaptureError(f"exists and its last row's step is {step!r}, not a number: name a "
                           "new file", path=shown) from None


def _clip(data: bytes) -> str:
    text = data.decode("utf-8", "replace").rstrip("\r\n")
    return repr(text if len(text) <= 60 else text[:57] + "...")
