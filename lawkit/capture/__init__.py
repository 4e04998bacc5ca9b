"""Capture records written by the engine's own run: one row per step.

    from lawkit import capture

    with capture.open("captures/run1.csv", features=("batch_size", "num_tokens"),
                      regions=("schedule_s", "sample_s")) as cap:
        ...                                       # start-up, a warm-up through cap.step too
        cap.steps()                               # = lawkit.footprint.phase("steps")
        for batch in batches:
            with cap.step(batch_size=len(batch), num_tokens=n):
                with cap.region("schedule_s"):
                    ...
                with cap.region("sample_s"):
                    ...
    # closed: once no capture that called steps() is open and no step is open, the process is
    # in lawkit.footprint.phase("shutdown")

Columns, in this order: `step` (0, 1, ... counting on from an appended file's last row), the
features as declared, the regions as declared, then the key column (`atom`) holding the digest
computed at `open` from the workspace config found from the working directory (or `digest=`),
so that `lawkit fit` needs no `--captured-on`. A region's cell is its seconds in that step
(`time.perf_counter_ns`, summed when it is entered twice), empty when it was not entered: `fit`
and `score` then leave that row out of the laws on that region. A feature may also be given
inside the step with `cap.set(name=value)` (a batch size known once the scheduler has run).

Warm-up and shutdown: `step`, `set` and `region` work in start-up as in steps, so that an
engine's warm-up runs its step code unguarded; a capture writes rows only for the steps begun
after its own `steps()` (a warm-up step has no row and no number), and closing one that saw
warm-up steps but never `steps()` is a CaptureError (nothing was captured). The steps end
when the last capture that called `steps()` has closed and no step of any capture is open on
any thread: the capture then calls `lawkit.footprint.phase("shutdown")` (what runs only after
it, such as an engine's `stop()`, counts as not run); a later `steps()` enters steps again.

Rows are written by `lawkit.capture.sink` (`.csv`/`.jsonl` appended whole, at least every
second, a failed write held and tried again, never lost; `.parquet` at close), beside the host
they were taken on (`lawkit.capture.host`).

Every misuse is a `CaptureError` (a `LawkitError`: the CLI's exit 2) naming the step: a feature
missing from a step or not declared, a feature that is not a number lawkit's reader takes back
(finite, at most 1e150 in magnitude), a region not declared, entered outside a step, exited
while a region entered after it is still open (regions nest; asyncio tasks interleaving the
regions of one step do not) or still open when its step ends. The same code raises the same
error whether or not a footprint is being recorded. The rows already finished are written out
before it is raised, so nothing already captured is lost; the step that failed has no row.

Cost: `cap.region(name)` returns one reusable context object per name, so an enter plus exit
allocates nothing of its own (`bench/capture.py` measures it); the footprint's region markers
are called only while `lawkit footprint record` records the process (asked once, at open: the
recorder starts with the process). A capture is driven from one thread, the one running the
steps.

Part of the footprint wing (docs/development.md), whose rule it follows. May import: the
standard library, `lawkit.footprint`'s markers, `src_digest`, `lawkit.errors`, `lawkit.config`
and `lawkit.fsio` (the bounded read of a host file); never numpy, pandas, scipy or pyarrow
(Parquet's writer imports pyarrow at close, and only then), and never another wing.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from time import perf_counter_ns
from types import TracebackType
from typing import Literal

from lawkit.capture.host import Host, this_host
from lawkit.capture.rows import feature_row, names_of
from lawkit.capture.sink import ColumnsSink, Flusher, Sink, TextSink
from lawkit.errors import CaptureError
from lawkit.footprint.measured.markers import (
    RegionError,
    enter_region,
    exit_region,
    phase,
    recording,
)

__all__ = ["Capture", "CaptureError", "open"]

Format = Literal["csv", "jsonl", "parquet"]
_SUFFIXES: dict[str, Format] = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
                                ".parquet": "parquet", ".pq": "parquet"}


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

    __slots__ = ("__weakref__", "_closed", "_features", "_finalizer", "_flusher", "_in_step",
                 "_marking", "_nones", "_open", "_pid", "_region_names", "_regions", "_sink",
                 "_started", "_step", "_step_context", "_totals", "_values", "_warmups",
                 "columns", "digest", "host", "key", "path")

    def __init__(self, path: str | os.PathLike[str], *, features: Sequence[str],
                 regions: Sequence[str] = (), digest: str | None = None,
                 key: str | None = None) -> None:
        self.path = Path(path)
        fmt = _format_of(self.path)
        features, regions = names_of(features, "features"), names_of(regions, "regions")
        key, digest = _key_and_digest(key, digest)
        clash = sorted({"step", key} & {*features, *regions} | set(features) & set(regions))
        if clash:
            raise CaptureError(f"column {clash[0]!r} is named twice: the columns are step, the "
                               "features, the regions and the key column, each once",
                               path=str(self.path))
        self.key, self.digest = key, digest
        self.columns: tuple[str, ...] = ("step", *features, *regions, key)
        """The columns written, in order."""
        self.host: Host = this_host()
        """Where the captures are taken (kept beside the rows: `lawkit.capture.host`)."""
        self._features = features
        self._region_names = regions
        self._nones: list[int | None] = [None] * len(regions)
        self._totals: list[int | None] = list(self._nones)
        """Each region's nanoseconds in the current step (None: not entered), one list reset in
        place, which the region objects hold."""
        self._open: list[_Region] = []
        """The regions open in the current step, innermost last (one list, which the region
        objects hold)."""
        self._marking = recording()
        self._regions = {name: _Region(self, i, name) for i, name in enumerate(regions)}
        self._values: dict[str, float | int] = {}
        self._in_step = False
        self._closed = False
        self._started = False
        self._warmups = 0
        self._pid = os.getpid()
        self._step_context = _Step(self, counted=False)
        self._sink: Sink = (
            ColumnsSink(self.path, key, digest, self.host, features, regions)
            if fmt == "parquet" else
            TextSink(self.path, self.columns, digest, self.host, jsonl=fmt == "jsonl"))
        self._step = self._sink.next_step
        self._flusher: Flusher | None = None
        if isinstance(self._sink, TextSink):
            self._flusher = Flusher(self._sink)
            self._flusher.start()
        # An engine that never closes its capture still gets its rows at interpreter exit.
        self._finalizer = weakref.finalize(self, _finish, self._sink)
        STEPS.opened(self)

    # -- the engine's calls ---------------------------------------------------------------

    def steps(self) -> None:
        """Start-up is over: rows begin with the next step (`lawkit.footprint.phase("steps")`)."""
        if self._closed:
            raise CaptureError("cap.steps() after the capture was closed", path=str(self.path))
        if not self._started:
            self._started = True
            self._step_context = _Step(self, counted=True)
        STEPS.begin(self)

    def step(self, **features: float) -> _Step:
        """A context for one step, whose row holds `features` (and those `set` inside it);
        before `steps()`, a warm-up step, which has no row."""
        if self._in_step:
            step = self._naming()
            raise self._error(f"{step} begun inside {step}: steps do not nest; end the step "
                              "before the next")
        if self._closed:
            raise self._error(f"{self._naming()} begun after the capture was closed")
        if os.getpid() != self._pid:
            # its rows would be a copy's, written by no one: a silent loss
            raise CaptureError(f"{self._naming()} begun in process {os.getpid()}, not the "
                               f"process {self._pid} that opened the capture (a forked worker): "
                               "open a capture file of the worker's own in the worker",
                               path=str(self.path))
        if self._sink.failure is not None:
            self._write_held()
        self._values = features
        self._in_step = True
        return self._step_context

    def set(self, **features: float) -> None:
        """Give (or replace) features of the current step, e.g. once the batch is known."""
        if not self._in_step:
            raise self._error(f"features set between steps (before {self._naming()}): "
                              "call cap.set(...) inside `with cap.step(...)`")
        self._values.update(features)

    def region(self, name: str) -> _Region:
        """The context timing region `name` of the current step (one object per name)."""
        try:
            return self._regions[name]
        except (KeyError, TypeError):
            raise self._error(f"{self._naming()}: region {name!r} was not declared at open "
                              f"(regions: {', '.join(self._region_names) or 'none'})") from None

    def close(self) -> None:
        """Write the rows not yet written and close the file (Parquet: write it).

        A CaptureError when a write fails (every row is still held: close again once the disk
        has room), or when the capture saw warm-up steps but `steps()` was never called.
        """
        self._close(quiet=False)

    def __enter__(self) -> Capture:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        # With the body's own error on its way out, that error tells what happened; a row
        # that cannot be written is still raised (the body's error chained to it).
        self._close(quiet=kind is not None)

    # -- internals --------------------------------------------------------------------------

    def _close(self, *, quiet: bool) -> None:
        if self._sink.closed:
            return
        if not self._closed:
            self._closed = True
            if self._flusher is not None:
                self._flusher.stop()
            if os.getpid() == self._pid:
                STEPS.closed(self)
        self._sink.close()
        self._finalizer.detach()
        if self._warmups and not self._started and not quiet:
            raise CaptureError(f"closed after {self._warmups} warm-up steps and no "
                               "cap.steps(): nothing was captured (call cap.steps() when "
                               "start-up is over, before the steps to capture)",
                               path=str(self.path))

    def _naming(self, counted: bool | None = None) -> str:
        """The current (or next) step as messages name it."""
        if self._started if counted is None else counted:
            return f"step {self._step}"
        return f"warm-up step {self._warmups}"

    def _error(self, message: str) -> CaptureError:
        """A CaptureError naming the file, after the rows finished so far are written."""
        with contextlib.suppress(CaptureError):  # held, and raised at the next step or close
            self._sink.flush()
        return CaptureError(message, path=str(self.path))

    def _write_held(self) -> None:
        """Write the rows a failed write left held; a CaptureError if it fails again."""
        try:
            self._sink.flush()
        except CaptureError as exc:
            raise CaptureError(f"{self._naming()} not begun: {exc.detail}: they are written at "
                               "the next step or at close once the disk has room",
                               path=str(self.path)) from None

    def _end_step(self, failed: bool, counted: bool) -> None:
        """Close the current step: its row, unless its body raised or it is a warm-up step."""
        totals = self._totals[:]
        values = self._values
        self._in_step = False
        self._values = {}
        self._totals[:] = self._nones
        left = self._unwind() if self._open else None
        if STEPS.ending:
            STEPS.end_if_done()
        if failed:
            return
        if left is not None:
            raise self._error(f"{self._naming(counted)} ended with region {left!r} still open: "
                              "a region ends inside its step (an asyncio task still inside it?)")
        row = feature_row(values, self._features)
        if isinstance(row, str):
            raise self._error(f"{self._naming(counted)}: {row}")
        if not counted:
            self._warmups += 1
            return
        if self._closed:
            raise CaptureError(f"{self._naming(counted)} ended after the capture was closed "
                               "(from another thread?): its row is not written; close the "
                               "capture once its last step has ended", path=str(self.path))
        self._sink.add(self._step, row, totals)
        self._step += 1

    def _unwind(self) -> str:
        """Close the regions still open at the end of a step, untimed, innermost first; the
        outermost's name."""
        outermost = self._open[0]._name
        while self._open:
            region = self._open.pop()
            region._depth -= 1
            if region._marking:
                _exit_marker(region._name)
        return outermost

    def _misnested(self, region: _Region, top: _Region | None, end: int) -> CaptureError:
        """The error for `region` exited while it is not the innermost open region, once it
        is closed (timed to `end`) and the regions entered after it are left open."""
        open_ = self._open
        if top is not None:
            open_.append(top)
        at = next((i for i in range(len(open_) - 1, -1, -1) if open_[i] is region), None)
        if at is None:
            return self._error(f"{self._naming()}: region {region._name!r} exited, but it is "
                               "not open (exited twice?)")
        after = open_[at + 1:]
        del open_[at]
        region._count(end)
        if region._marking:  # the same on the thread's regions: out of the middle, others kept
            for other in reversed(after):
                _exit_marker(other._name)
            _exit_marker(region._name)
            for other in after:
                enter_region(other._name)
        return self._error(f"{self._naming()}: region {region._name!r} exited while region "
                           f"{after[-1]._name!r}, entered after it, is still open: regions "
                           "nest, one inside the other (asyncio tasks interleaving regions? "
                           "a task's region must not stay open while another task's runs; "
                           "time the region around the tasks instead)")


class _Step:
    """The context of a step: `with cap.step(...):` (per capture, one for warm-up steps and
    one for the steps after `steps()`)."""

    __slots__ = ("_capture", "_counted")

    def __init__(self, capture: Capture, *, counted: bool) -> None:
        self._capture = capture
        self._counted = counted

    def __enter__(self) -> _Step:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self._capture._end_step(kind is not None, self._counted)


class _Region:
    """The context timing one region (one object per region name, reused every step)."""

    __slots__ = ("_capture", "_depth", "_index", "_marking", "_name", "_open", "_start",
                 "_totals")

    def __init__(self, capture: Capture, index: int, name: str) -> None:
        self._capture = capture
        self._totals = capture._totals
        self._open = capture._open
        self._marking = capture._marking
        self._index = index
        self._name = name
        self._depth = 0
        self._start = 0

    def __enter__(self) -> None:
        capture = self._capture
        if not capture._in_step:
            raise capture._error(f"region {self._name!r} entered between steps (before "
                                 f"{capture._naming()}): enter regions inside "
                                 "`with cap.step(...)`")
        if self._marking:  # the thread's regions, which the recorder attributes runs to
            try:
                enter_region(self._name)
            except RegionError as exc:
                raise capture._error(f"{capture._naming()}: {exc}") from None
        self._open.append(self)
        depth = self._depth = self._depth + 1
        if depth == 1:  # a region entered inside itself is timed once, from the outside
            self._start = perf_counter_ns()

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        end = perf_counter_ns()
        try:
            top = self._open.pop()
        except IndexError:
            top = None
        if top is not self:
            raise self._capture._misnested(self, top, end)
        depth = self._depth = self._depth - 1
        if not depth:
            totals, index = self._totals, self._index
            before = totals[index]
            totals[index] = end - self._start if before is None else before + end - self._start
        if self._marking:
            try:
                exit_region(self._name)
            except RegionError as exc:  # the thread's regions changed by other markers too
                raise self._capture._error(f"{self._capture._naming()}: {exc}") from None

    def _count(self, end: int) -> None:
        """One exit's bookkeeping, as `__exit__` does it (which keeps it inline, for speed)."""
        depth = self._depth = self._depth - 1
        if not depth:
            before = self._totals[self._index]
            spent = end - self._start
            self._totals[self._index] = spent if before is None else before + spent


def _exit_marker(name: str) -> None:
    """Close region `name` on the thread's regions, when it is the innermost there: regions
    the engine marked itself (`lawkit.footprint.region`) may stand in the way."""
    with contextlib.suppress(RegionError):
        exit_region(name)


# -- the process's steps: begun by a capture's steps(), ended by the last one's close -----------

class _Steps:
    """The process's steps: begun by a capture's `steps()`, ended once no capture that called it
    is open and no step of any capture is open on any thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stepping: weakref.WeakSet[Capture] = weakref.WeakSet()
        """The open captures that called `steps()`: while one is, the process is in steps."""
        self._alive: weakref.WeakSet[Capture] = weakref.WeakSet()
        """Every capture, whose open steps hold the steps' end back (one closed while its step
        runs on another thread included)."""
        self.ending = False
        """Set when the last capture in steps closed while a step was open: that step's end
        (the last one) ends the steps."""

    def opened(self, capture: Capture) -> None:
        """A capture was opened: its steps hold the end back."""
        with self._lock:
            self._alive.add(capture)

    def begin(self, capture: Capture) -> None:
        """``capture`` called `steps()`: the process is in steps."""
        with self._lock:
            self._stepping.add(capture)
            self.ending = False
            phase("steps")

    def closed(self, capture: Capture) -> None:
        """``capture`` was closed: the steps end if it was the last in them."""
        with self._lock:
            stepped = capture in self._stepping
            self._stepping.discard(capture)
        if stepped:
            self.end_if_done()

    def end_if_done(self) -> None:
        """Enter shutdown when no capture in steps is open and no step is open."""
        with self._lock:
            if self._stepping:
                self.ending = False
            elif any(capture._in_step for capture in self._alive):
                self.ending = True
            else:
                self.ending = False
                phase("shutdown")


STEPS = _Steps()
"""This process's steps, as its captures begin and end them (one object, never rebound)."""


def _finish(sink: Sink) -> None:
    """Close the sink of a capture that was never closed, at interpreter exit or when it is
    collected: its rows are written, or said lost."""
    try:
        sink.close()
    except CaptureError as exc:
        sys.stderr.write(f"lawkit.capture: {exc} (the process is ending: they are lost)\n")


# -- validation -----------------------------------------------------------------------------


def _format_of(path: Path) -> Format:
    fmt = _SUFFIXES.get(path.suffix.lower())
    if fmt is None:
        raise CaptureError("a capture is written as .csv, .jsonl or .parquet (no .gz: a "
                           "compressed stream cut by a kill loses its last rows)", path=str(path))
    return fmt


def _key_and_digest(key: str | None, digest: str | None) -> tuple[str, str]:
    """The key column's name and the digest it holds: given, or from the workspace."""
    import src_digest
    from lawkit.config import digest_problem, load_workspace
    from lawkit.errors import LawkitError

    if digest is not None and key is not None:
        problem = digest_problem(digest, len(digest)) if isinstance(digest, str) else None
        if not isinstance(digest, str) or problem is not None or not 4 <= len(digest) <= 64:
            raise CaptureError(f"digest={digest!r}: expected 4 to 64 lowercase hex characters")
        return names_of((key,), "key")[0], digest
    try:
        ws = load_workspace()
        if digest is None and ws.config_path is None:
            raise LawkitError(f"no lawkit.toml, nor a pyproject.toml with [tool.lawkit], was "
                              f"found from {ws.root}")
        config = ws.digest
        key = key if key is not None else config.key
        if digest is None:
            # the work tree's digest, as `lawkit digest` prints it
            try:
                digest = src_digest.manifest_of(config.root, config.packages, config.include,
                                                config.exclude).digest(config.length)
            except src_digest.DigestError as exc:
                raise LawkitError(config.explain(exc)) from None
    except LawkitError as exc:
        raise CaptureError(f"cannot compute the engine digest for the key column ({exc}): "
                           "pass digest= (and key=), or run from a workspace (lawkit init "
                           "starts one)") from None
    problem = digest_problem(digest, config.length)
    if problem is not None:
        raise CaptureError(f"digest={digest!r}: {problem}")
    return names_of((key,), "key")[0], digest
