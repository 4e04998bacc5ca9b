"""`lawkit fit --dask`: every pass of a fit as a map and a tree reduce on a Dask cluster.

DESIGN.md section 10: a fit is a fold of chunks into small mergeable states, so it runs on an
existing engine as a reduction; this module is that adapter, not a second fitting code. It
does not schedule anything itself: tasks go to `distributed.Client.submit`, partial results
merge in a tree of tasks (up to 8 results a merge), and Dask moves, retries and frees them.

Tasks. Each capture file is one task; a Parquet file of more than `ROWS_PER_TASK` rows in
several row groups is one task per run of row groups of about that many rows (`Part`). CSV,
JSON Lines and gzip-compressed files are one task each: they cannot be cut without reading them
whole. A task gets the path, never the data: workers read the files themselves (in chunks of
`fit.STREAM_ROWS` rows, so a worker's memory does not grow with the file), which is why they
need lawkit installed and read access to the capture paths as the client names them.

Passes (each one reads every task's rows once and returns one small state per task); besides
them, a task per Parquet file reads its footer (the plan) and a task per file its sha256 (the
provenance):

1. scan: the selection and digest columns → `fit.Scan` (row counts, `--by` groups, digests);
2. fold: per law, the R factor of its rows (`solve.PartialFit`: (p+1)² floats, counts, the
   moments of y and the domain), its rows dropped and the range of every feature → `LawFold`;
3. refinement: `solve.refine` runs on the client on the merged R factor and asks for residual
   passes (`solve.ResidualPass`: X'r in double-double, SSR, MAPE sums), each one more pass;
4. holdout scores (`--holdout`): n, mean, M2, SSR and MAPE sums of the held-out rows.

The laws of one fit (`--by` groups, several formulas) share every pass: a round sends each law
that still needs a pass its request, and each task answers all of them from one read.

States and merges. ``merge(a, b)`` combines the states of two disjoint sets of rows, ``a``'s
before ``b``'s: R factors by one QR of the two stacked (`solve.merge`), X'r by double-double
addition, moments by Chan, Golub & LeVeque's update, counts and sums by addition, domains by
min/max, scans and errors in first-seen order. Each merge is associative up to rounding (the
R factor is unique up to the signs of its rows), so any tree of merges gives the one-pass fit
within a small multiple of cond x eps (tests/test_dask_fit.py), and the order of files in
messages and provenance is the local fit's.

Methods. ``ols``; ``nnls`` (Lawson-Hanson on the merged R factor, the free coefficients refitted
by one more fold); ``huber``, every IRLS step as passes: the scale is the exact median of |r|
(radix selection on the bits of |r|, 12 bits a pass, then the few candidates gathered: about 3
passes, whatever the row count), then a weighted fold. ``robust`` is refused: its FAST-LTS start
draws a random subsample and concentrates candidates on the h smallest residuals of all rows,
which does not fold; fit those laws without ``--dask``.

Retries. A task is a pure function of its arguments and the file's bytes (its arguments are
sent with it, not scattered, so nothing is lost with a worker), and returns a `LawkitError` as
a value (the first in file order is raised), so a task that was running on a worker that died
is run again elsewhere with the same result; Dask does that by itself, up to
``distributed.scheduler.allowed-failures`` times per task.

Row-group tasks read through `captures.chunk_from_columns`, which reports a NaN in a number
column as an empty value; a whole-file task reads as the local fit does.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import uuid
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from lawkit.errors import CaptureError, FitError, LawkitError
from lawkit.fitting import captures, solve
from lawkit.fitting.fit import (
    STREAM_ROWS,
    FitRequest,
    FittedLaw,
    LawSpec,
    RowsSeen,
    Scan,
    Split,
    law_design,
    law_entry,
    law_rows,
    scan_columns,
)
from lawkit.fitting.robust import _MAD_NORMAL, _MAX_IRLS, HUBER_C

Array = solve.Array

LOCAL_WORKERS = 2
"""Worker processes of `--dask local` (one thread each)."""
ROWS_PER_TASK = 4 * STREAM_ROWS
"""A Parquet file of more rows than this, in several row groups, is cut into tasks of about
this many rows (whole row groups each)."""
METHODS = ("ols", "huber", "nnls")
INSTALL = "--dask needs dask.distributed: pip install 'lawkit[dask]'"
PRE_SPAWN = "distributed.nanny.pre-spawn-environ"
CONNECT_TIMEOUT = "20s"
"""How long to try to reach a scheduler before giving up."""
_DIGIT = 12  # bits of |r| a selection pass resolves: histograms of 4096 counts
_GATHER = 1 << 16  # candidates for the median few enough to send as values
_NO_ROWS = "__lawkit_rows__"
_FAN_IN = 8  # results per merge task


# -- the cluster -------------------------------------------------------------------------------


def check_methods(specs: Sequence[LawSpec]) -> None:
    """FitError unless every law's method runs on Dask (before a cluster is started)."""
    for spec in specs:
        if spec.method not in METHODS:
            raise FitError(f"law {spec.name}: --method {spec.method} does not run on Dask (its "
                           "high-breakdown start, FAST-LTS, needs all rows in one place): with "
                           f"--dask use {', '.join(METHODS[:-1])} or {METHODS[-1]}, or fit "
                           "this law without --dask")


def local_workers(address: str) -> int | None:
    """N for ``local`` (2) or ``local:N``; None for a scheduler address."""
    name, sep, count = address.strip().partition(":")
    if name != "local":
        if not address.strip():
            raise LawkitError("--dask: expected a scheduler address (tcp://host:8786) or "
                              "local[:N]")
        return None
    if not sep:
        return LOCAL_WORKERS
    if not count.isdigit() or int(count) < 1:
        raise LawkitError(f"--dask {address}: expected local:N with N worker processes, "
                          "N >= 1 (local:4)")
    return int(count)


@contextlib.contextmanager
def connect(address: str) -> Iterator[Any]:
    """A `distributed.Client` of the scheduler at `address`, or of a cluster of worker
    processes on this machine for ``local[:N]`` (started here and closed on exit)."""
    workers = local_workers(address)
    try:
        import distributed as imported
    except ImportError:
        raise LawkitError(INSTALL) from None
    distributed: Any = imported  # partly typed: its constructors are untyped calls
    with contextlib.ExitStack() as stack:
        if workers is None:
            try:
                client = distributed.Client(address, timeout=CONNECT_TIMEOUT,
                                            set_as_default=False)
            except (OSError, TimeoutError, ValueError) as exc:
                raise LawkitError(f"--dask {address}: cannot reach the scheduler: "
                                  f"{str(exc).splitlines()[0] if str(exc) else exc!r}"
                                  ) from None
        else:
            import dask

            # Bound to loopback with a free dashboard port: no network, no port clash. The
            # nannies' default MALLOC_TRIM_THRESHOLD_ also fixes glibc's mmap threshold at
            # 128 KiB, so that every block temporary of the residual pass is mmapped and
            # faulted in afresh: the pass ran twice as slow as in a plain process (measured).
            # A nanny sets the workers' variables (OMP_NUM_THREADS=1, ...) in the environment
            # of the process that starts them, this one: put it back on the way out.
            stack.callback(_restore_environ, dict(os.environ),
                           [*dask.config.get(PRE_SPAWN), "PYTHONHASHSEED"])
            with dask.config.set({f"{PRE_SPAWN}.MALLOC_TRIM_THRESHOLD_": None}):
                cluster = stack.enter_context(distributed.LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                    dashboard_address=":0", silence_logs=logging.ERROR))
            client = distributed.Client(cluster, set_as_default=False)
        stack.enter_context(client)
        yield client


def _restore_environ(saved: dict[str, str], names: Sequence[str]) -> None:
    for name in names:
        if name in saved:
            os.environ[name] = saved[name]
        else:
            os.environ.pop(name, None)


# -- tasks: which rows, read how -----------------------------------------------------------------


@dataclass(frozen=True)
class Part:
    """The rows of one task: a whole capture file, or a run of a Parquet file's row groups
    (`start` rows of the file come before them)."""

    capture: captures.Capture
    file_index: int
    row_groups: tuple[int, ...] | None = None
    start: int = 0


def plan_parts(found: Sequence[captures.Capture], groups: Sequence[tuple[int, ...] | None],
               rows_per_task: int = ROWS_PER_TASK) -> list[Part]:
    """The tasks for the capture files, given the rows of each Parquet file's row groups (None
    for a file read whole)."""
    parts = []
    for index, (capture, sizes) in enumerate(zip(found, groups, strict=True)):
        if sizes is None or len(sizes) < 2 or sum(sizes) <= rows_per_task:
            parts.append(Part(capture, index))
            continue
        run: list[int] = []
        rows = start = at = 0
        for group, size in enumerate(sizes):
            if run and rows + size > rows_per_task:
                parts.append(Part(capture, index, tuple(run), start))
                run, rows, start = [], 0, at
            run.append(group)
            rows += size
            at += size
        parts.append(Part(capture, index, tuple(run), start))
    return parts


def row_groups(capture: captures.Capture) -> tuple[int, ...] | None:
    """The rows of each row group of an uncompressed Parquet file; None for any other file,
    or one that does not read (the pass that reads it names the problem)."""
    if capture.format != "parquet" or capture.compressed:
        return None
    import pyarrow.parquet as pq

    try:
        meta = pq.read_metadata(str(capture.path))
        return tuple(int(meta.row_group(i).num_rows) for i in range(meta.num_row_groups))
    except Exception:
        return None


def read_part(part: Part, spec: captures.ColumnSpec, chunk_rows: int = STREAM_ROWS,
              ) -> Iterator[captures.Chunk]:
    """The rows of a task as Chunks of at most `chunk_rows` rows, validated and numbered as a
    local fit reads them (file index, row numbers within the file)."""
    if part.row_groups is None:
        yield from captures.read_chunks(part.capture, spec, chunk_rows=chunk_rows,
                                        file_index=part.file_index)
        return
    import pyarrow.parquet as pq

    shown = part.capture.shown
    try:
        parquet = pq.ParquetFile(str(part.capture.path), pre_buffer=False,
                                 buffer_size=1 << 20)
    except Exception as exc:
        raise CaptureError(f"cannot read as Parquet: {_first_line(exc)}", path=shown) from None
    schema = parquet.schema_arrow
    digest = None
    if spec.digest is not None and schema.metadata:
        raw = schema.metadata.get(f"{captures.METADATA_PREFIX}{spec.digest}".encode())
        digest = raw.decode("utf-8", "replace") if raw is not None else None
    names = list(schema.names)
    for column in spec.names():
        if column not in names and column != spec.digest:
            listing = ", ".join(n if n else '""' for n in names[:30])
            more = ", ..." if len(names) > 30 else ""
            raise CaptureError(f"no column {column!r} (the file has: {listing}{more})",
                               path=shown)
    wanted = [c for c in spec.names() if c in names]
    start = part.start
    try:
        batches = parquet.iter_batches(batch_size=chunk_rows, row_groups=list(part.row_groups),
                                       columns=wanted)
        for batch in batches:
            columns: dict[str, Any] = {name: _values(batch.column(i))
                                       for i, name in enumerate(batch.schema.names)}
            if not columns:  # no column asked for: only the row count
                columns[_NO_ROWS] = np.zeros(batch.num_rows)
            yield captures.chunk_from_columns(columns, spec, shown=shown, start=start,
                                              file_index=part.file_index, digest=digest)
            start += batch.num_rows
    except LawkitError:
        raise
    except Exception as exc:
        raise CaptureError(f"cannot read as Parquet: {_first_line(exc)}", path=shown) from None


def _values(array: Any) -> Any:
    """An arrow column as numpy: numbers without gaps as they are, anything else as Python
    values (what `chunk_from_columns` expects of a pandas column)."""
    import pyarrow as pa

    if pa.types.is_dictionary(array.type):
        array = array.cast(array.type.value_type)
    kind = array.type
    if (pa.types.is_integer(kind) or pa.types.is_floating(kind)) and not array.null_count:
        return array.to_numpy(zero_copy_only=False)
    values = np.empty(len(array), dtype=object)
    values[:] = array.to_pylist()
    return values


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


# -- what a pass asks of each law, and the mergeable answers -------------------------------------


@dataclass(frozen=True)
class _Robust:
    """Huber weights of an IRLS step, recomputed from the rows in each task:
    min(1, c·scale / |y - X b|), as `robust.fit_huber` computes them."""

    coef: Array
    scale: float
    c: float

    def of(self, x: Array, y: Array) -> Array:
        r = y - _matvec(x, self.coef)
        tiny = np.finfo(np.float64).tiny
        return np.asarray(np.minimum(1.0, self.c * self.scale / np.maximum(np.abs(r), tiny)),
                          dtype=np.float64)


def _matvec(x: Array, b: Array) -> Array:
    # The local robust fits multiply a Fortran-ordered design: the same order of operations
    # gives the same residuals, bit for bit, whatever the chunking.
    return np.asarray(np.asfortranarray(x) @ b, dtype=np.float64)


@dataclass(frozen=True)
class _Fold:
    """Fold the rows (only `columns` of the design, if given; robust weights, if given)."""

    columns: tuple[int, ...] | None = None
    robust: _Robust | None = None


@dataclass(frozen=True)
class _Residuals:
    """The residual pass at `coef` (`solve.residual_pass`), with the fold's columns and weights."""

    coef: Array
    columns: tuple[int, ...] | None = None
    robust: _Robust | None = None


@dataclass(frozen=True)
class _Select:
    """Counts of |y - X coef| (rows of weight > 0) by their next bits in each bucket
    (prefix, shift: the values whose bits >> shift equal prefix; shift 64 is every value),
    or, for a bucket to gather, its values; and max |X step| when `step` is given."""

    coef: Array
    buckets: tuple[tuple[int, int, bool], ...]
    step: Array | None = None


@dataclass(frozen=True)
class _Holdout:
    """The sums that score `coef` on the held-out rows."""

    coef: Array


_Request = _Fold | _Residuals | _Select | _Holdout


@dataclass
class LawFold:
    """A law's fold over some rows: its R factor (None before any row), the rows it dropped
    and the range of each feature, max |y|, the rows of weight > 0 and, of those, the rows a
    robust weight of < 0.5 downweights. Merge: `solve.merge` of the R factors,
    `fit.RowsSeen.merge`, max, sums."""

    state: solve.PartialFit | None = None
    seen: RowsSeen = field(default_factory=RowsSeen)
    ymax: float = 0.0
    kept: int = 0
    down: int = 0

    def merge(self, other: LawFold) -> LawFold:
        """Both folds, ``self``'s rows first."""
        if self.state is None or other.state is None:
            state = self.state if other.state is None else other.state
        else:
            state = solve.merge(self.state, other.state)
        return LawFold(state, self.seen.merge(other.seen), max(self.ymax, other.ymax),
                       self.kept + other.kept, self.down + other.down)


@dataclass
class _Selected:
    """Per bucket of a `_Select`: the counts by next bits, or the values; max |X step|."""

    found: list[Array | Any]
    moved: float = 0.0

    def merge(self, other: _Selected) -> _Selected:
        found = [a + b if a.dtype.kind == "i" else np.concatenate([a, b])
                 for a, b in zip(self.found, other.found, strict=True)]
        return _Selected(found, max(self.moved, other.moved))


@dataclass
class _HoldoutSums:
    """n, mean and M2 of y, SSR and the MAPE sums of the held-out rows (unweighted)."""

    n: int = 0
    mean: float = 0.0
    m2: float = 0.0
    ssr: float = 0.0
    ape: float = 0.0
    nonzero: int = 0

    def add(self, y: Array, r: Array) -> None:
        k = len(y)
        mean = float(np.mean(y))
        self._combine(k, mean, float(np.sum((y - mean) ** 2)))
        self.ssr += float(np.dot(r, r))
        nz = y != 0.0
        self.ape += float(np.sum(np.abs(r[nz]) / np.abs(y[nz])))
        self.nonzero += int(np.count_nonzero(nz))

    def _combine(self, k: int, mean: float, m2: float) -> None:
        # Chan, Golub & LeVeque, as fit._score_holdout folds chunk after chunk.
        if not k:
            return
        delta = mean - self.mean
        total = self.n + k
        self.mean += delta * k / total
        self.m2 += m2 + delta * delta * self.n * k / total
        self.n = total

    def merge(self, other: _HoldoutSums) -> _HoldoutSums:
        out = replace(self)
        out._combine(other.n, other.mean, other.m2)
        out.ssr += other.ssr
        out.ape += other.ape
        out.nonzero += other.nonzero
        return out

    def scores(self) -> dict[str, Any]:
        out: dict[str, Any] = {"n": self.n}
        if self.n:
            out["r2"] = 1.0 - self.ssr / self.m2 if self.m2 > 0.0 else math.nan
            out["rmse"] = math.sqrt(self.ssr / self.n)
            out["mape"] = self.ape / self.nonzero if self.nonzero else math.nan
        return out


@dataclass
class _Failed:
    """An error a task met, returned as a value: merges keep the first in file order."""

    part: int
    error: LawkitError


_Reply = LawFold | solve.ResidualPass | _Selected | _HoldoutSums | None


def merge(a: Any, b: Any) -> Any:
    """Merge two task results, ``a``'s rows before ``b``'s (see the module docstring)."""
    if isinstance(a, _Failed):
        return a
    if isinstance(b, _Failed):
        return b
    if isinstance(a, list):
        return [merge(x, y) for x, y in zip(a, b, strict=True)]
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, solve.ResidualPass):
        return solve.merge(a, b)
    return a.merge(b)


def merge_all(*results: Any) -> Any:
    """The merge of results in order, left to right."""
    return functools.reduce(merge, results)


# -- the task functions (pure: arguments and file bytes in, a small value out) -------------------


def _scan_task(index: int, part: Part, spec: captures.ColumnSpec, specs: list[LawSpec],
               by: tuple[str, ...], drop_invalid: bool, chunk_rows: int) -> Scan | _Failed:
    scan = Scan()
    try:
        for chunk in read_part(part, spec, chunk_rows):
            scan.add(chunk, specs, by, drop_invalid=drop_invalid)
    except LawkitError as exc:
        return _Failed(index, exc)
    return scan


def _hash_task(capture: captures.Capture) -> str | LawkitError:
    try:
        return capture.sha256()
    except LawkitError as exc:
        return exc


def _pass_task(index: int, part: Part, spec: captures.ColumnSpec,
               work: list[tuple[LawSpec, _Request]], drop_invalid: bool, split: Split | None,
               chunk_rows: int) -> list[_Reply] | _Failed:
    replies: list[_Reply] = [None] * len(work)
    try:
        for chunk in read_part(part, spec, chunk_rows):
            held = split.held(chunk) if split is not None else None
            for i, (law, request) in enumerate(work):
                rows, dropped = law_rows(law, chunk, drop_invalid=drop_invalid, held=held,
                                         holdout=isinstance(request, _Holdout))
                replies[i] = _answer(request, replies[i], law, chunk, rows, dropped)
    except LawkitError as exc:
        return _Failed(index, exc)
    return replies


def _answer(request: _Request, reply: _Reply, law: LawSpec, chunk: captures.Chunk,
            rows: Any, dropped: int) -> _Reply:
    """`reply` with the chunk's rows of the law folded in (a reply is the task's own value,
    so it is updated in place)."""
    if isinstance(request, _Fold):
        fold = reply if isinstance(reply, LawFold) else LawFold()
        fold.seen.dropped += dropped
        fold.seen.see(chunk, law.features, rows)
        if rows.any():
            _fold(request, fold, law, *law_design(law, chunk, rows))
        return fold
    if not rows.any():
        return reply
    x, y, w = law_design(law, chunk, rows)
    if isinstance(request, _Holdout):
        sums = reply if isinstance(reply, _HoldoutSums) else _HoldoutSums()
        sums.add(y, y - x @ request.coef)
        return sums
    if isinstance(request, _Select):
        return _select(request, reply, x, y, w)
    weights = _weights(request.robust, x, y, w)[0]
    if request.columns is not None:
        x = x[:, request.columns]
    acc = reply if isinstance(reply, solve.ResidualPass) else None
    return solve.residual_pass(acc, request.coef, x, y, weights)


def _weights(robust: _Robust | None, x: Array, y: Array, w: Array | None,
             ) -> tuple[Array | None, Array | None]:
    """(user weights times robust weights, robust weights) of the rows."""
    if robust is None:
        return w, None
    rw = robust.of(x, y)
    return (rw if w is None else w * rw), rw


def _fold(request: _Fold, fold: LawFold, law: LawSpec, x: Array, y: Array, w: Array | None,
          ) -> None:
    weights, robust = _weights(request.robust, x, y, w)
    terms = law.terms
    if request.columns is not None:
        x = x[:, request.columns]
        terms = tuple(law.terms[j] for j in request.columns)
    fold.state = solve.fold_chunk(fold.state, x, y, weights, terms=terms)
    fold.ymax = max(fold.ymax, float(np.max(np.abs(y))))
    kept = np.ones(len(y), dtype=bool) if w is None else w > 0.0
    fold.kept += int(np.count_nonzero(kept))
    if robust is not None:
        fold.down += int(np.count_nonzero(robust[kept] < 0.5))


def _select(request: _Select, reply: _Reply, x: Array, y: Array, w: Array | None) -> _Selected:
    out = reply if isinstance(reply, _Selected) else _Selected(
        [np.zeros(1 << min(_DIGIT, shift), dtype=np.int64) if not gather else np.zeros(0)
         for _prefix, shift, gather in request.buckets])
    r = y - _matvec(x, request.coef)
    if request.step is not None:
        out.moved = max(out.moved, float(np.max(np.abs(_matvec(x, request.step)))))
    size = np.abs(r if w is None else r[w > 0.0])
    bits = size.view(np.uint64)
    for k, (prefix, shift, gather) in enumerate(request.buckets):
        inside = bits if shift == 64 else bits[(bits >> np.uint64(shift)) == np.uint64(prefix)]
        if gather:
            out.found[k] = np.concatenate([out.found[k], inside.view(np.float64)])
            continue
        width = min(_DIGIT, shift)
        digits = (inside >> np.uint64(shift - width)) & np.uint64((1 << width) - 1)
        out.found[k] += np.bincount(digits.astype(np.intp), minlength=1 << width)
    return out


# -- the laws' passes, as generators the runner drives -------------------------------------------


_Steps = Generator[_Request, Any, solve.FitResult]


def _refine(state: solve.PartialFit, method: str, columns: tuple[int, ...] | None = None,
            robust: _Robust | None = None) -> _Steps:
    steps = solve.refine(state, method)
    coef = next(steps)
    while True:
        acc = yield _Residuals(coef, columns, robust)
        try:
            coef = steps.send(acc)
        except StopIteration as done:
            result: solve.FitResult = done.value
            return result


def _law(law: LawSpec, split: Split | None,
         ) -> Generator[_Request, Any, tuple[solve.FitResult, RowsSeen, dict[str, Any] | None]]:
    """One law's fit, pass by pass: yields what it needs of the rows, is sent the merged
    answer, returns (result, rows seen, holdout scores)."""
    first: LawFold = (yield _Fold()) or LawFold()
    if first.state is None:
        raise FitError("every row it selects was dropped as invalid" if first.seen.dropped
                       else "no rows to fit")
    if law.method == "huber":
        result = yield from _huber(first)
    elif law.method == "nnls":
        result = yield from _nnls(first)
    else:
        result = yield from _refine(first.state, law.method)
    holdout = None
    if split is not None:
        sums: _HoldoutSums | None = yield _Holdout(np.asarray(result.coef, dtype=np.float64))
        holdout = (sums or _HoldoutSums()).scores()
    return result, first.seen, holdout


class _Median:
    """The exact median of |r| over `n` values by radix selection on their bits (non-negative
    floats order as their bit patterns): each pass counts the values of the bucket holding a
    middle rank by their next 12 bits, until the bucket is few enough to gather."""

    def __init__(self, n: int) -> None:
        ranks = [n // 2] if n % 2 else [n // 2 - 1, n // 2]
        # per middle rank: [prefix, shift, rank within the bucket, values in the bucket]
        self.targets = [[0, 64, rank, n] for rank in ranks]
        self.values: list[float | None] = [None] * len(ranks)

    def buckets(self) -> tuple[tuple[int, int, bool], ...]:
        wanted = {(t[0], t[1], t[3] <= _GATHER) for t, v in zip(self.targets, self.values,
                                                                 strict=True) if v is None}
        return tuple(sorted(wanted))

    def update(self, asked: tuple[tuple[int, int, bool], ...], got: _Selected) -> None:
        answers = dict(zip(asked, got.found, strict=True))
        for k, target in enumerate(self.targets):
            if self.values[k] is not None:
                continue
            prefix, shift, rank, count = target
            found = answers[(prefix, shift, count <= _GATHER)]
            if count <= _GATHER:
                self.values[k] = float(np.sort(found)[rank])
                continue
            width = min(_DIGIT, shift)
            cumulative = np.cumsum(found)
            digit = int(np.searchsorted(cumulative, rank, side="right"))
            below = int(cumulative[digit - 1]) if digit else 0
            prefix = digit if shift == 64 else (prefix << width) | digit
            target[:] = [prefix, shift - width, rank - below, int(found[digit])]
            if shift - width == 0:
                self.values[k] = float(np.array([prefix], dtype=np.uint64).view(np.float64)[0])

    @property
    def done(self) -> bool:
        return all(v is not None for v in self.values)

    def median(self) -> float:
        values = [v for v in self.values if v is not None]
        # np.median's own arithmetic for the two middle values.
        return float(np.mean(values)) if len(values) == 2 else values[0]


def _huber(first: LawFold) -> _Steps:
    """`robust.fit_huber` with every pass over the rows a request."""
    assert first.state is not None
    b = solve.solve_partial(first.state)
    current, robust = first, None
    scale = 0.0
    iterations = 0
    step: Array | None = None
    while iterations < _MAX_IRLS:
        median = _Median(first.kept)
        asked = median.buckets()
        got: _Selected = yield _Select(b, asked, step)
        # The check that ends the previous step rides on this step's first pass.
        if step is not None and not got.moved > 1e-10 * scale:
            break
        iterations += 1
        median.update(asked, got)
        while not median.done:
            asked = median.buckets()
            median.update(asked, (yield _Select(b, asked)))
        scale = median.median() / _MAD_NORMAL
        if scale <= solve.EPS * first.ymax:
            break  # more than half the rows fit exactly: nothing left to downweight
        robust = _Robust(b, scale, HUBER_C)
        current = yield _Fold(robust=robust)
        try:
            assert current.state is not None
            new = solve.solve_partial(current.state)
        except FitError as err:
            raise FitError(f"after downweighting outliers, {err.detail}") from err
        step, b = new - b, new
    try:
        assert current.state is not None
        result = yield from _refine(current.state, "huber", robust=robust)
    except FitError as err:
        raise FitError(f"after downweighting outliers, {err.detail}") from err
    return replace(result, iterations=iterations, scale=scale, downweighted=current.down)


def _nnls(first: LawFold) -> _Steps:
    """`robust.fit_nnls` with the refit of the free coefficients as one more fold."""
    state = first.state
    assert state is not None
    names = state.terms
    cond = solve.condition(state)
    p = len(names)
    if np.all(solve.solve_partial(state) >= 0.0):
        return (yield from _refine(state, "nnls"))
    import scipy.optimize

    bs, _norm = scipy.optimize.nnls(state.r[:p, :p], state.r[:p, p])
    free = tuple(int(j) for j in np.flatnonzero(bs > 0.0))
    coef = np.zeros(p)
    stderr = np.full(p, math.nan)
    if free:
        fold: LawFold = yield _Fold(columns=free)
        assert fold.state is not None
        sub = yield from _refine(fold.state, "nnls", columns=free)
        coef[list(free)], stderr[list(free)] = sub.coef, sub.stderr
        ssr = sub.rmse**2 * state.sum_w
        base = replace(sub, r2=solve.r2_of(state, ssr))
    else:
        ssr = state.m2_y + state.sum_w * state.mean_y**2  # every coefficient 0: r = y
        base = solve.FitResult(terms=(), coef=(), stderr=(), n=state.n, p=0,
                               resid_sd=math.sqrt(ssr / state.n),
                               rmse=math.sqrt(ssr / state.sum_w), r2=solve.r2_of(state, ssr),
                               mape=1.0, cond=cond, domain=(), method="nnls", iterations=0)
    return replace(base, terms=names, coef=tuple(float(v) for v in coef),
                   stderr=tuple(float(v) for v in stderr), p=p, cond=cond,
                   domain=tuple((float(a), float(c)) for a, c in zip(state.col_min,
                                                                     state.col_max,
                                                                     strict=True)))


# -- the runner ----------------------------------------------------------------------------------


class DaskRunner:
    """`fit.Runner` on a Dask cluster: the tasks planned from the files, every pass a map over
    them and a tree of merges, the fit's decisions on the client."""

    def __init__(self, client: Any, found: Sequence[captures.Capture],
                 spec: captures.ColumnSpec, *, rows_per_task: int | None = None,
                 chunk_rows: int | None = None) -> None:
        self.client = client
        self.found = list(found)
        self.spec = spec
        self.chunk_rows = chunk_rows or STREAM_ROWS
        self.run = uuid.uuid4().hex[:12]
        # Provenance hashes read every byte: they run when the workers have nothing better.
        self._hashes = [client.submit(_hash_task, capture, key=self._key("hash", i),
                                      priority=-1)
                        for i, capture in enumerate(self.found)]
        groups = client.gather([client.submit(row_groups, capture, key=self._key("plan", i))
                                for i, capture in enumerate(self.found)])
        self.parts = plan_parts(self.found, groups, rows_per_task or ROWS_PER_TASK)

    def _key(self, *name: object) -> str:
        return "-".join(["lawkit", *(str(n) for n in name), self.run])

    def scan(self, specs: Sequence[LawSpec], request: FitRequest) -> Scan:
        """The scan of every task, merged in file order."""
        columns = scan_columns(self.spec, specs, request.by)
        chunk_rows = request.chunk_rows or self.chunk_rows
        futures = [self.client.submit(_scan_task, k, part, columns, list(specs),
                                      tuple(request.by), request.drop_invalid, chunk_rows,
                                      key=self._key("scan", k))
                   for k, part in enumerate(self.parts)]
        scan = _raise_failed(self._reduce(futures, "scan").result())
        assert isinstance(scan, Scan)
        return scan.sort_groups()

    def fit(self, laws: Sequence[LawSpec], request: FitRequest, split: Split | None,
            ) -> list[FittedLaw]:
        """Every law, its passes run together with the other laws' passes."""
        drivers = [_law(law, split) for law in laws]
        pending = {i: next(driver) for i, driver in enumerate(drivers)}
        done: dict[int, tuple[solve.FitResult, RowsSeen, dict[str, Any] | None]] = {}
        rounds = 0
        while pending:
            replies = self._pass(rounds, [(laws[i], r) for i, r in pending.items()], request,
                                 split)
            following = {}
            failed: list[tuple[int, FitError]] = []
            for i, reply in zip(pending, replies, strict=True):
                try:
                    following[i] = drivers[i].send(reply)
                except StopIteration as finished:
                    done[i] = finished.value
                except FitError as exc:
                    failed.append((i, exc))
            if failed:
                first, error = failed[0]
                selection = laws[first].selection()
                where = f" (where {selection})" if selection else ""
                raise FitError(f"law {laws[first].name}{where}: {error.detail}") from None
            pending = following
            rounds += 1
        shown = [c.shown for c in self.found]
        out = []
        for i, law in enumerate(laws):
            result, seen, holdout = done[i]
            domain = {name: [seen.low[name], seen.high[name]] for name in law.features
                      if name in seen.low}
            mapping = law_entry(law, result, domain=domain, dropped=seen.dropped,
                                holdout=holdout,
                                split=split.describe(shown) if split is not None else None)
            out.append(FittedLaw(spec=law, law=mapping, n=result.n, dropped=seen.dropped))
        return out

    def hashes(self) -> list[str]:
        """The sha256 of every capture file, hashed on the workers."""
        out = []
        for value in self.client.gather(self._hashes):
            if isinstance(value, LawkitError):
                raise value
            out.append(str(value))
        return out

    def _pass(self, rounds: int, work: list[tuple[LawSpec, _Request]], request: FitRequest,
              split: Split | None) -> list[_Reply]:
        """One read of every task's rows: each law's request answered and merged."""
        futures = [self.client.submit(_pass_task, k, part, self.spec, work,
                                      request.drop_invalid, split,
                                      request.chunk_rows or self.chunk_rows,
                                      key=self._key(f"pass{rounds}", k))
                   for k, part in enumerate(self.parts)]
        replies = _raise_failed(self._reduce(futures, f"pass{rounds}").result())
        assert isinstance(replies, list)
        return replies

    def _reduce(self, futures: list[Any], name: str) -> Any:
        """The merge of the futures' results, in order, as a tree of tasks of `_FAN_IN` each
        (fewer, larger merges than pairs: the merges are cheap, Dask's per-task cost is not)."""
        level, depth = futures, 0
        while len(level) > 1:
            level = [self.client.submit(merge_all, *level[j:j + _FAN_IN],
                                        key=self._key(f"merge-{name}", depth, j // _FAN_IN))
                     if len(level[j:j + _FAN_IN]) > 1 else level[j]
                     for j in range(0, len(level), _FAN_IN)]
            depth += 1
        return level[0]


def _raise_failed(value: Any) -> Any:
    if isinstance(value, _Failed):
        raise value.error
    return value


__all__ = [
    "INSTALL",
    "LOCAL_WORKERS",
    "METHODS",
    "ROWS_PER_TASK",
    "DaskRunner",
    "LawFold",
    "Part",
    "check_methods",
    "connect",
    "local_workers",
    "merge",
    "merge_all",
    "plan_parts",
    "read_part",
    "row_groups",
]
