"""`lawkit fit --dask`: every pass of a fit as a map and a tree reduce on a Dask cluster.

A fit is a fold of chunks into small mergeable states (docs/fitting.md), so it runs on an
existing engine as a reduction; this module is that adapter, not a second fitting code. It does
not schedule anything itself: tasks go to `distributed.Client.submit`, partial results merge in
a tree of tasks (up to 8 results a merge), and Dask moves, retries and frees them.

Tasks. Each capture file is one task; a Parquet file of more than `ROWS_PER_TASK` rows in
several row groups is one task per run of row groups of about that many rows (`Part`). CSV,
JSON Lines and gzip-compressed files are one task each: they cannot be cut without reading them
whole. A task gets the path, never the data: workers read the files themselves (in chunks of
`source.STREAM_ROWS` rows, so a worker's memory does not grow with the file), which is why they
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
within a small multiple of cond x eps (tests/fitting/test_dask_fit.py), and the order of files in
messages and provenance is the local fit's.

Methods. Every method of `lawkit.fitting.methods` runs here unchanged: its passes (fold,
residuals, median selection, the robust start's bounded sample, the final statistics) are
requests that each task answers with `methods.answer` over its chunks, merged by
`methods.merge`; the method's decisions run on the client. ``robust`` draws its high-breakdown
start from a sample of at most `methods.SAMPLE_ROWS` rows chosen by a hash of their values, so
the sample, and the fit, do not depend on how the rows are cut into tasks.

Retries. A task is a pure function of its arguments and the file's bytes (its arguments are
sent with it, not scattered, so nothing is lost with a worker), and returns a `LawkitError` as
a value (the first in file order is raised), so a task that was running on a worker that died
is run again elsewhere with the same result; Dask does that by itself, up to
``distributed.scheduler.allowed-failures`` times per task.

Row-group tasks read through `captures.read.chunk_from_columns`, which reports a NaN in a number
column as an empty value; a whole-file task reads as the local fit does.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import uuid
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from lawkit.errors import CaptureError, FitError, LawkitError
from lawkit.fitting import breakpoints, methods, solve
from lawkit.fitting.breakpoints import auto_factors
from lawkit.fitting.captures.chunks import Chunk, ColumnSpec
from lawkit.fitting.captures.files import METADATA_PREFIX, Capture
from lawkit.fitting.captures.read import chunk_from_columns, read_chunks
from lawkit.fitting.report import FittedLaw
from lawkit.fitting.request import FitRequest, LawSpec
from lawkit.fitting.rows import RowsSeen, Split, law_design, law_rows
from lawkit.fitting.scan import Scan, scan_columns
from lawkit.fitting.source import STREAM_ROWS
from lawkit.fitting.stats import law_entry

Array = solve.Array

LOCAL_WORKERS = 2
"""Worker processes of `--dask local` (one thread each)."""
ROWS_PER_TASK = 4 * STREAM_ROWS
"""A Parquet file of more rows than this, in several row groups, is cut into tasks of about
this many rows (whole row groups each)."""
INSTALL = "--dask needs dask.distributed: pip install 'lawkit[dask]'"
PRE_SPAWN = "distributed.nanny.pre-spawn-environ"
CONNECT_TIMEOUT = "20s"
"""How long to try to reach a scheduler before giving up."""
_NO_ROWS = "__lawkit_rows__"
_FAN_IN = 8  # results per merge task


# -- the cluster -------------------------------------------------------------------------------


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
            # faulted in afresh, which slows the pass well below a plain process's pace.
            # A nanny sets the workers' variables (OMP_NUM_THREADS=1, ...) in the environment
            # of the process that starts them, this one: put it back on the way out (and the
            # __DASK_PARENT_PID a nanny's start sets there, for its children's process titles).
            stack.callback(_restore_environ, dict(os.environ),
                           [*dask.config.get(PRE_SPAWN), "PYTHONHASHSEED", "__DASK_PARENT_PID"])
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

    capture: Capture
    file_index: int
    row_groups: tuple[int, ...] | None = None
    start: int = 0


def plan_parts(found: Sequence[Capture], groups: Sequence[tuple[int, ...] | None],
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


def row_groups(capture: Capture) -> tuple[int, ...] | None:
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


def read_part(part: Part, spec: ColumnSpec, chunk_rows: int = STREAM_ROWS,
              ) -> Iterator[Chunk]:
    """The rows of a task as Chunks of at most `chunk_rows` rows, validated and numbered as a
    local fit reads them (file index, row numbers within the file)."""
    if part.row_groups is None:
        yield from read_chunks(part.capture, spec, chunk_rows=chunk_rows,
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
        raw = schema.metadata.get(f"{METADATA_PREFIX}{spec.digest}".encode())
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
            yield chunk_from_columns(columns, spec, shown=shown, start=start,
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
class _Seeing:
    """A law's first request (a `methods.Fold`), answered with the rows it drops and the
    range of each feature besides (`LawFold`)."""

    request: methods.Fold


@dataclass(frozen=True)
class _Holdout:
    """The sums that score `coef` on the held-out rows."""

    coef: Array


@dataclass(frozen=True)
class _Distinct:
    """The distinct values of `column` among the law's rows (a breakpoint's candidates)."""

    column: str


@dataclass(frozen=True)
class _Loss:
    """The law method's breakpoint objective (`breakpoints.objective`) of the residuals at
    `coef` (`fitted` false: of the target itself), summed over the rows."""

    coef: Array
    scale: float | None
    fitted: bool


_Request = methods.Request | _Seeing | _Holdout | _Distinct | _Loss


@dataclass
class _Values:
    """Distinct values, sorted."""

    values: Array

    def merge(self, other: _Values) -> _Values:
        return _Values(np.union1d(self.values, other.values))


@dataclass
class _Total:
    """A sum over rows."""

    total: float

    def merge(self, other: _Total) -> _Total:
        return _Total(self.total + other.total)


@dataclass
class LawFold(methods.Folded):
    """A law's first fold (`methods.Folded`) with the rows it dropped and the range of each
    feature (`fit.RowsSeen`)."""

    seen: RowsSeen = field(default_factory=RowsSeen)

    def merge(self, other: methods.Folded) -> LawFold:
        """Both folds, ``self``'s rows first."""
        out = replace(self, seen=self.seen.merge(getattr(other, "seen", RowsSeen())))
        out.absorb(other)
        return out


@dataclass
class _Failed:
    """An error a task met, returned as a value: merges keep the first in file order."""

    part: int
    error: LawkitError


def merge(a: Any, b: Any) -> Any:
    """Merge two task results, ``a``'s rows before ``b``'s (see the module docstring)."""
    if isinstance(a, _Failed):
        return a
    if isinstance(b, _Failed):
        return b
    if isinstance(a, list):
        return [merge(x, y) for x, y in zip(a, b, strict=True)]
    return methods.merge(a, b)


def merge_all(*results: Any) -> Any:
    """The merge of results in order, left to right."""
    return functools.reduce(merge, results)


# -- the task functions (pure: arguments and file bytes in, a small value out) -------------------


def _scan_task(index: int, part: Part, spec: ColumnSpec, specs: list[LawSpec],
               by: tuple[str, ...], drop_invalid: bool, chunk_rows: int, split: Split | None,
               ) -> Scan | _Failed:
    scan = Scan()
    try:
        for chunk in read_part(part, spec, chunk_rows):
            scan.add(chunk, specs, by, drop_invalid=drop_invalid, split=split)
    except LawkitError as exc:
        return _Failed(index, exc)
    return scan


def _hash_task(capture: Capture) -> str | LawkitError:
    try:
        return capture.sha256()
    except LawkitError as exc:
        return exc


def _pass_task(index: int, part: Part, spec: ColumnSpec,
               work: list[tuple[LawSpec, _Request]], drop_invalid: bool, split: Split | None,
               chunk_rows: int) -> list[Any] | _Failed:
    replies: list[Any] = [None] * len(work)
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


def _answer(request: _Request, reply: Any, law: LawSpec, chunk: Chunk,
            rows: Any, dropped: int) -> Any:
    """`reply` with the chunk's rows of the law folded in (a reply is the task's own value,
    so it is updated in place)."""
    if isinstance(request, _Seeing):
        fold = reply if isinstance(reply, LawFold) else LawFold()
        fold.seen.dropped += dropped
        fold.seen.see(chunk, law.features, rows)
        if rows.any():
            methods.answer(request.request, fold, *law_design(law, chunk, rows))
        return fold
    if not rows.any():
        return reply
    if isinstance(request, _Distinct):
        found = _Values(np.unique(chunk.columns[request.column][rows]))
        return found if reply is None else reply.merge(found)
    x, y, w = law_design(law, chunk, rows)
    if isinstance(request, _Loss):
        r = y - methods.matvec(x, request.coef) if request.fitted else y
        part = _Total(breakpoints.objective(law.method, iter([(r, w)]), request.scale))
        return part if reply is None else reply.merge(part)
    if isinstance(request, _Holdout):
        sums = reply if isinstance(reply, methods.Summary) else methods.Summary()
        return sums.merge(methods.Summary.of(y, y - x @ request.coef))
    return methods.answer(request, reply, x, y, w)


# -- the laws' passes: the methods' own, the first one seeing the rows ---------------------------


def _law(law: LawSpec, split: Split | None,
         ) -> Generator[_Request, Any, tuple[solve.FitResult, RowsSeen, dict[str, Any] | None]]:
    """One law's fit, pass by pass: yields what it needs of the rows, is sent the merged
    answer, returns (result, rows seen, holdout scores)."""
    steps = methods.passes(law.method, law.terms)
    first_request = next(steps)
    assert isinstance(first_request, methods.Fold)
    first: LawFold = (yield _Seeing(first_request)) or LawFold()
    if first.state is None:
        raise FitError("every row it selects was dropped: invalid, or with an empty target "
                       "cell (a region no step entered)" if first.seen.dropped
                       else "no rows to fit")
    reply: Any = first
    while True:
        try:
            request = steps.send(reply)
        except StopIteration as done:
            result: solve.FitResult = done.value
            break
        reply = yield request
    holdout = None
    if split is not None:
        sums: methods.Summary | None = yield _Holdout(np.asarray(result.coef,
                                                                  dtype=np.float64))
        holdout = (sums or methods.Summary()).scores()
    return result, first.seen, holdout


# -- the runner ----------------------------------------------------------------------------------


class DaskRunner:
    """A `Runner` (`lawkit.fitting.types`) on a Dask cluster: the tasks planned from the files,
    every pass a map over them and a tree of merges, the fit's decisions on the client."""

    def __init__(self, client: Any, found: Sequence[Capture],
                 spec: ColumnSpec, *, rows_per_task: int | None = None,
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
        self.passes: dict[str, int] = {}
        """Reads of every task's rows: `scan`, and `fit` for the passes of all laws together."""
        self._round = 0  # numbers every pass's tasks: a key is never submitted twice

    def _key(self, *name: object) -> str:
        return "-".join(["lawkit", *(str(n) for n in name), self.run])

    def scan(self, specs: Sequence[LawSpec], request: FitRequest) -> Scan:
        """The scan of every task, merged in file order."""
        columns = scan_columns(self.spec, specs, request.by)
        chunk_rows = request.chunk_rows or self.chunk_rows
        futures = [self.client.submit(_scan_task, k, part, columns, list(specs),
                                      tuple(request.by), request.drop_invalid, chunk_rows,
                                      Split.of(request, len(self.found)),
                                      key=self._key("scan", k))
                   for k, part in enumerate(self.parts)]
        scan = _raise_failed(self._reduce(futures, "scan").result())
        assert isinstance(scan, Scan)
        self.passes["scan"] = self.passes.get("scan", 0) + 1
        return scan.sort_groups()

    def fit(self, laws: Sequence[LawSpec], request: FitRequest, split: Split | None,
            ) -> list[FittedLaw]:
        """Every law, its passes run together with the other laws' passes; a law with `auto`
        breakpoints searched first (`breakpoints.search`, over the tasks)."""
        searches: list[breakpoints.Search | None] = []
        placed = []
        for law in laws:
            search = None
            if auto_factors(law.terms):
                search = self._search(law, request, split)
                law = replace(law, terms=search.terms)
            searches.append(search)
            placed.append(law)
        laws = placed
        drivers = [_law(law, split) for law in laws]
        pending = {i: next(driver) for i, driver in enumerate(drivers)}
        done: dict[int, tuple[solve.FitResult, RowsSeen, dict[str, Any] | None]] = {}
        while pending:
            replies = self._pass([(laws[i], r) for i, r in pending.items()], request, split)
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
        shown = [c.shown for c in self.found]
        out = []
        for i, law in enumerate(laws):
            result, seen, holdout = done[i]
            domain = {name: [seen.low[name], seen.high[name]] for name in law.features
                      if name in seen.low}
            search = searches[i]
            mapping = law_entry(law, result, domain=domain, dropped=seen.dropped,
                                holdout=holdout,
                                split=split.describe(shown) if split is not None else None,
                                origin=search.origin if search is not None else None)
            out.append(FittedLaw(spec=law, law=mapping, n=result.n, dropped=seen.dropped,
                                 search=search))
        return out

    def _search(self, law: LawSpec, request: FitRequest, split: Split | None,
                ) -> breakpoints.Search:
        """The breakpoint search of a law, every candidate fitted and scored over the tasks."""
        selection = law.selection()
        where = f"law {law.name}" + (f" (where {selection})" if selection else "")
        if law.method == "robust":
            # its objective, the M-scale of a sample of all residuals, is not a sum over tasks
            raise FitError(f"{where}: {', '.join(auto_factors(law.terms))} with --method "
                           "robust: its breakpoint search runs in this process: drop --dask, "
                           "or give K as a number")
        try:
            return breakpoints.search(law.terms, law.method, _DaskRows(self, law, request, split))
        except FitError as exc:
            raise FitError(f"{where}: {exc.detail}") from None

    def solve_law(self, law: LawSpec, request: FitRequest, split: Split | None,
                  ) -> solve.FitResult:
        """One law's fit by its method over the tasks (the rows `split` holds out left out),
        with no holdout score: a breakpoint candidate."""
        driver = _law(law, None)
        pending = next(driver)
        while True:
            reply = self._pass([(law, pending)], request, split)[0]
            try:
                pending = driver.send(reply)
            except StopIteration as done:
                result: solve.FitResult = done.value[0]
                return result

    def answer(self, law: LawSpec, asked: _Request, request: FitRequest,
               split: Split | None) -> Any:
        """One request of one law answered over the tasks, merged."""
        return self._pass([(law, asked)], request, split)[0]

    def hashes(self) -> list[str]:
        """The sha256 of every capture file, hashed on the workers."""
        out = []
        for value in self.client.gather(self._hashes):
            if isinstance(value, LawkitError):
                raise value
            out.append(str(value))
        return out

    def _pass(self, work: list[tuple[LawSpec, _Request]], request: FitRequest,
              split: Split | None) -> list[Any]:
        """One read of every task's rows: each law's request answered and merged."""
        name = f"pass{self._round}"
        self._round += 1
        self.passes["fit"] = self.passes.get("fit", 0) + 1
        futures = [self.client.submit(_pass_task, k, part, self.spec, work,
                                      request.drop_invalid, split,
                                      request.chunk_rows or self.chunk_rows,
                                      key=self._key(name, k))
                   for k, part in enumerate(self.parts)]
        replies = _raise_failed(self._reduce(futures, name).result())
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


class _DaskRows:
    """A law's rows on the cluster, as the breakpoint search needs them (`breakpoints.Rows`):
    the same candidates and objective as a local search, each a pass over the tasks."""

    def __init__(self, runner: DaskRunner, law: LawSpec, request: FitRequest,
                 split: Split | None) -> None:
        self.runner, self.law, self.request, self.split = runner, law, request, split

    def distinct(self, column: str) -> Array:
        found = self.runner.answer(self.law, _Distinct(column), self.request, self.split)
        return found.values if found is not None else np.zeros(0)

    def fit(self, terms: tuple[str, ...]) -> tuple[float | None, Array]:
        if not terms:
            return None, np.zeros(0)
        result = self.runner.solve_law(replace(self.law, terms=terms), self.request,
                                       self.split)
        return result.scale, np.asarray(result.coef, dtype=np.float64)

    def loss(self, terms: tuple[str, ...], coef: Array, scale: float | None) -> float:
        law = replace(self.law, terms=terms or ("1",))
        total = self.runner.answer(law, _Loss(coef, scale, bool(terms)), self.request,
                                   self.split)
        return total.total if total is not None else 0.0


def _raise_failed(value: Any) -> Any:
    if isinstance(value, _Failed):
        raise value.error
    return value


__all__ = [
    "INSTALL",
    "LOCAL_WORKERS",
    "ROWS_PER_TASK",
    "DaskRunner",
    "LawFold",
    "Part",
    "connect",
    "local_workers",
    "merge",
    "merge_all",
    "plan_parts",
    "read_part",
    "row_groups",
]
