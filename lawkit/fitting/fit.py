"""`lawkit fit`: laws from capture records, with statistics, domain and provenance.

`fit_laws(request, ws)` reads the captures and fits every law; `write_fit(report, ws)` writes
the law file (`lawkit.fitting.lawmerge` does the text edits of an existing one); `run_fit`
does both.
Nothing is written unless every law fitted. With `request.dask`, the same passes run on a Dask
cluster (`lawkit.fitting.distributed`, a `Runner`) and give the same report.

A law to fit is a `LawSpec`: name, target, terms, the `where` mapping and `filter` expression
that select its rows, the method and an optional weight column. With `--formula`, each formula
gives one spec, or one per group of `--by` values (named `target[v1,v2]`, each group's values
added to `where` as typed in the captures: DESIGN.md section 5); with none, every law of the
existing `--out` file is refitted from its own target, terms, where and filter.

Rows and validation (DESIGN.md section 7): the selection columns (`where`, `filter`, `--by`
and the digest column) are checked on every row; the fitted columns (target, features,
weight) on the rows each law selects. A bad value is a CaptureError naming file, column and
row, unless `drop_invalid`, which drops the row from the laws that read that column and counts
it in the law's `fit.dropped`.

The `fit` mapping of a law (keys in this order; a key is left out where it has no value):

    method        ols | huber | robust | nnls
    n             rows fitted (holdout rows excluded; weight-0 rows included)
    p             terms
    r2            R^2 (centred when the terms hold an intercept)
    rmse          sqrt(SSR / n)
    resid_sd      sqrt(SSR / (n - p))
                  n, r2, rmse, mape and resid_sd are unweighted over every fitted row, for
                  every method and with --weight (DESIGN.md section 8): what `score` prints
                  on the same rows
    mape          mean |residual| / |target| over rows with target != 0
    cond          condition number of the column-scaled design
    stderr        {term: standard error} (those of the final weighted step for huber/robust;
                  a coefficient nnls holds at 0 has none)
    ci95          {term: [low, high]}: coef -/+ t(0.975, n - p) * stderr
    scale         the method's own robust scale (huber: MAD; robust: the M-scale)
    downweighted  rows whose robust weight ended below 0.5 (huber, robust)
    weight        the weight column, with --weight
    dropped       rows dropped by --drop-invalid, and rows whose target cell is empty (a
                  region the step did not enter, DESIGN.md section 7), when any
    holdout       {split: random, seed: S | split: files, files: [...]; fraction, n, r2, rmse,
                  mape}: the law scored on held-out rows (unweighted)

The law's `domain` is {feature: [min, max]} over the rows fitted. The file gets one provenance
entry: `{fit: {digest, at, records, body, captures: [{path, sha256}], lawkit}}` (`records`: the
rows fitted, selected by at least one law and not held out), with
`digests` listing every digest seen when `--allow-mixed-digests` let several through, and
`footprint: {path, sha256}` naming the footprint of the capture runs given with `--footprint`.
"""

from __future__ import annotations

import datetime
import math
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from lawkit import __version__
from lawkit.config import Workspace, digest_problem
from lawkit.errors import CaptureError, FitError, printable
from lawkit.fitting import captures
from lawkit.fitting.breakpoints import Search, auto_factors
from lawkit.fitting.formula import Formula, design_matrix, parse_formula
from lawkit.lawfiles import lawfile
from lawkit.lawfiles.where import (
    And,
    Expr,
    format_literal,
    format_where,
    law_columns,
    law_mask,
    parse_where,
)

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

CURRENT = "current"
STREAM_ROWS = 1 << 20
"""Rows per chunk when a fit streams."""
IN_MEMORY_BYTES = 64 << 20
"""The budget of parsed columns a fit may hold in memory: above this estimated size of the
columns read (8 bytes a value; a text file's size as the estimate for its values), captures
stream (environment variable LAWKIT_IN_MEMORY_BYTES overrides it; 0 always streams). Reading
in memory peaks at about 4x the columns (parsing, the cached chunks, each law's design), so
64 MiB keeps the peak of either path near 300 MiB (bench/fit.py)."""


@dataclass(frozen=True)
class FitRequest:
    """Everything `lawkit fit` is asked to do (the CLI flags, as values)."""

    captures: Sequence[str | Path]
    out: Path
    formulas: Sequence[str] = ()
    by: Sequence[str] = ()
    where: str | None = None
    method: str | None = None
    """None: ols for a new law, a refitted law's own method."""
    holdout: float | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    name: str | None = None
    captured_on: str | None = None
    """A digest, or "current" for the workspace's current digest."""
    allow_negative: bool = False
    allow_mixed_digests: bool = False
    drop_invalid: bool = False
    weight: str | None = None
    chunk_rows: int | None = None
    """Stream the captures in chunks of this many rows; None: in memory unless they are big."""
    seed: int = 0
    now: datetime.datetime | None = None
    dask: str | None = None
    """A Dask scheduler address, or local[:N]: read and fold the rows on that cluster
    (`lawkit.fitting.distributed`); None: in this process."""
    cv: str | None = None
    """Cross-validate every law: a column (leave one of its values out in turn) or a number
    of folds (`lawkit.fitting.crossval`)."""
    footprint: Path | None = None
    """A footprint of the capture runs (`lawkit footprint record`): refused unless recorded on
    the captures' digest, and named with its sha256 in the `fit` entry (DESIGN section 11)."""


@dataclass(frozen=True)
class LawSpec:
    """One law to fit: what it predicts from what, on which rows, how."""

    name: str
    target: str
    terms: tuple[str, ...]
    where: dict[str, Any] | None = None
    filter: str | None = None
    method: str = "ols"
    weight: str | None = None
    bounds: str | None = None
    """Conditions of `--where` on the law's own feature columns: they bound the rows fitted
    (its domain), not the rows it applies to (DESIGN.md section 8: `fit.bounds`)."""

    @property
    def fitted_filter(self) -> str | None:
        """The filter of the rows fitted: `filter` and `bounds`."""
        if self.bounds is None:
            return self.filter
        return self.bounds if self.filter is None else f"({self.filter}) and ({self.bounds})"

    @property
    def features(self) -> list[str]:
        """The feature columns of the terms, in first-use order."""
        return Formula(self.target, self.terms, "").columns()

    def numbers(self) -> list[str]:
        """The columns fitted: target, features, weight."""
        out = dict.fromkeys([self.target, *self.features])
        if self.weight:
            out[self.weight] = None
        return list(out)

    def selectors(self) -> list[str]:
        """The columns that select its rows (those of its bounds included)."""
        return law_columns(self.where, self.fitted_filter)

    def selection(self) -> str:
        """Its where and filter as one expression, for messages."""
        return format_where(self.where, self.filter)


@dataclass
class FittedLaw:
    """A fitted law: the law-file mapping and what the report says about it."""

    spec: LawSpec
    law: dict[str, Any]
    n: int
    dropped: int
    replaced: bool = False
    search: Search | None = None
    """The breakpoint search, when the formula had `auto` factors."""


@dataclass
class FitReport:
    """The outcome of a fit: the laws, the digest, the captures, and the file (once written)."""

    out: Path
    out_shown: str
    laws: list[FittedLaw]
    digest: str
    digests: list[str]
    records: int
    captures: list[dict[str, str]]
    at: str
    labels: dict[str, Any]
    kept: list[str] = field(default_factory=list)
    footprint: dict[str, str] | None = None
    """The footprint the fit is bound to: `{path, sha256}`, the path from the workspace root."""
    dropped: int = 0
    """Rows dropped (--drop-invalid) for an empty or invalid selection or digest value; the
    rows each law dropped for its fitted columns are in its `fit.dropped`."""
    notes: list[str] = field(default_factory=list)
    """What the reader left out of the captures (a torn last line)."""
    written: bool = False
    text: str = ""

    def provenance(self, body: str) -> dict[str, Any]:
        """The `fit` provenance entry for a file whose laws hash to `body`."""
        entry: dict[str, Any] = {"digest": self.digest, "at": self.at, "records": self.records,
                                 "body": body, "captures": self.captures,
                                 "lawkit": __version__}
        if len(self.digests) > 1:
            entry["digests"] = self.digests
        if self.footprint is not None:
            entry["footprint"] = self.footprint
        return entry

    def to_json(self) -> dict[str, Any]:
        """The report as the JSON document `lawkit fit --json` prints."""
        return {
            "out": self.out_shown,
            "written": self.written,
            "digest": self.digest,
            "records": self.records,
            "captures": self.captures,
            "laws": [{**_json_safe(f.law), "replaced": f.replaced, "dropped": f.dropped}
                     for f in self.laws],
            "kept": self.kept,
            "dropped": self.dropped,
            "notes": self.notes,
        }

    def lines(self) -> list[str]:
        """What `lawkit fit` prints: one line per law, then the file."""
        out = []
        for fitted in self.laws:
            stats = fitted.law.get("fit", {})
            parts = [f"n={fitted.n}"]
            for key in ("r2", "rmse", "mape"):
                if key in stats:
                    parts.append(f"{key}={stats[key]:.6g}")
            if fitted.dropped:
                parts.append(f"dropped={fitted.dropped}")
            if "holdout" in stats:
                hold = stats["holdout"]
                parts.append(f"holdout n={hold['n']}" + (f" mape={hold['mape']:.6g}"
                                                        if "mape" in hold else ""))
            out.append(f"{fitted.spec.name}: {' '.join(parts)}")
            if fitted.search is not None:
                out.extend(f"  {choice.describe(fitted.spec.method)}"
                           for choice in fitted.search.choices)
            if "cv" in stats:
                from lawkit.fitting.crossval import describe_cv

                out.append(f"  {describe_cv(stats['cv'])}")
        replaced = sum(f.replaced for f in self.laws)
        added = len(self.laws) - replaced
        counts = [f"{added} added"] if added else []
        if replaced:
            counts.append(f"{replaced} replaced")
        if self.kept:
            counts.append(f"{len(self.kept)} kept")
        if self.dropped:
            out.append(f"dropped {self.dropped} row{'s' if self.dropped != 1 else ''} with an "
                       "invalid selection or digest value")
        out.extend(f"note: {note}" for note in self.notes)
        verb = "wrote" if self.written else "would write"
        out.append(f"{verb} {self.out_shown} ({', '.join(counts)}; digest {self.digest}, "
                   f"{self.records} records)")
        return out


def run_fit(request: FitRequest, ws: Workspace) -> FitReport:
    """Fit the laws and write the file; nothing is written when anything fails."""
    report = fit_laws(request, ws)
    write_fit(report, ws)
    return report


def write_fit(report: FitReport, ws: Workspace) -> None:
    """Write (or merge into) the law file atomically, under the laws' lock."""
    from lawkit.fitting import lawmerge

    lawmerge.write(report, ws)


class Runner(Protocol):
    """Where the rows are read and folded: this process, or a cluster
    (`lawkit.fitting.distributed`)."""

    def scan(self, specs: Sequence[LawSpec], request: FitRequest) -> Scan:
        """One pass over the selection and digest columns of every capture."""

    def fit(self, laws: Sequence[LawSpec], request: FitRequest, split: Split | None,
            ) -> list[FittedLaw]:
        """Every law fitted, in order."""

    def hashes(self) -> list[str]:
        """The sha256 of every capture file, in order."""


class _Local:
    """The rows read in this process: kept in memory, or streamed again for every pass."""

    def __init__(self, found: Sequence[captures.Capture], spec: captures.ColumnSpec,
                 request: FitRequest) -> None:
        self._hashes = _start_hashing(found)
        self.source = _Source(found, spec, _chunk_rows(request, found, spec))

    def scan(self, specs: Sequence[LawSpec], request: FitRequest) -> Scan:
        return _scan(self.source, specs, request)

    def fit(self, laws: Sequence[LawSpec], request: FitRequest, split: Split | None,
            ) -> list[FittedLaw]:
        return [_fit_one(law, self.source, request, split) for law in laws]

    def hashes(self) -> list[str]:
        return self._hashes()


def fit_laws(request: FitRequest, ws: Workspace) -> FitReport:
    """Read the captures and fit every law of the request; writes nothing."""
    _check_request(request, ws)
    out = Path(request.out)
    out_shown = ws.rel(out)
    existing = _load_existing(out, out_shown, ws)
    specs = plan_specs(request, existing)
    found = captures.find_captures(request.captures, shown=ws.rel)
    spec = _column_spec(specs, request, ws)
    if request.dask is None:
        return _fit_with(_Local(found, spec, request), request, ws, existing, specs, found)
    from lawkit.fitting import distributed

    for law in specs:
        if auto_factors(law.terms):
            raise FitError(f"law {law.name}: {', '.join(auto_factors(law.terms))}: the "
                           "breakpoint search runs in this process: drop --dask, or give K "
                           "as a number")
    with distributed.connect(request.dask) as client:
        runner = distributed.DaskRunner(client, found, spec)
        return _fit_with(runner, request, ws, existing, specs, found)


def _fit_with(runner: Runner, request: FitRequest, ws: Workspace,
              existing: lawfile.LawFile | None, specs: Sequence[LawSpec],
              found: Sequence[captures.Capture]) -> FitReport:
    out = Path(request.out)
    scan = runner.scan(specs, request)
    digest, digests = _resolve_digest(scan, request, ws)  # before the fits: it fails fast
    bound = None
    if request.footprint is not None:
        from lawkit.footprint.binding import bind_footprint

        bound = bind_footprint(ws, Path(request.footprint), digest)[1].to_json()
    laws = _expand(specs, scan, request)
    _check_names([law.name for law in laws])
    split = Split.of(request, len(found))
    fitted = runner.fit(laws, request, split)
    if request.cv is not None:
        from lawkit.fitting.crossval import cross_validate

        scores = cross_validate(runner, laws, request, len(found))
        for f in fitted:
            if f.spec.name in scores:
                f.law["fit"]["cv"] = scores[f.spec.name]
    names = {f.spec.name for f in fitted}
    if existing is not None:
        for f in fitted:
            f.replaced = any(law.name == f.spec.name for law in existing.host.laws)
    kept = [law.name for law in existing.host.laws if law.name not in names] if existing else []
    records = [{"path": _provenance_path(c, ws), "sha256": h}
               for c, h in zip(found, runner.hashes(), strict=True)]
    labels: dict[str, Any] = dict(existing.labels or {}) if existing is not None else {}
    labels.update(request.labels)
    return FitReport(out=out, out_shown=ws.rel(out), laws=fitted, digest=digest, digests=digests,
                     records=scan.fitted, captures=records, at=_timestamp(request.now),
                     labels=labels, kept=kept, dropped=scan.dropped, footprint=bound,
                     notes=scan.notes)


# -- planning -------------------------------------------------------------------------------


def _check_request(request: FitRequest, ws: Workspace) -> None:
    from lawkit.fitting.methods import NAMES

    if request.method is not None and request.method not in NAMES:
        raise FitError(f"--method {request.method}: expected one of {', '.join(NAMES)}")
    if request.holdout is not None and not 0.0 < request.holdout < 1.0:
        raise FitError(f"--holdout {request.holdout}: expected a fraction between 0 and 1 "
                       "(0.2 holds out a fifth of the rows)")
    if not request.formulas:
        for flag, given in (("--by", request.by), ("--where", request.where),
                            ("--name", request.name)):
            if given:
                raise FitError(f"{flag} needs --formula: with no --formula, each law of the "
                               "file is refitted from its own target, terms, where and filter")
    if request.name is not None:
        if len(request.formulas) > 1 or request.by:
            raise FitError("--name names a single law: with several --formula or with --by, "
                           "laws are named after their target (and group values)")
        if not request.name.strip():
            raise FitError("--name: expected a non-empty name")
    if request.cv is not None:
        from lawkit.fitting.crossval import parse_cv

        parse_cv(request.cv)
        if request.holdout is not None:
            raise FitError("--cv and --holdout both hold rows out: choose one (--cv scores "
                           "every row once, on a fit that did not see it)")
    if request.chunk_rows is not None and request.chunk_rows < 1:
        raise FitError("chunk_rows must be at least 1")
    captured_on = request.captured_on
    if captured_on is not None and captured_on != CURRENT and \
            (problem := digest_problem(captured_on, ws.digest.length)) is not None:
        raise FitError(f"--captured-on {printable(repr(captured_on))}: {problem} (or 'current')")


def _load_existing(out: Path, shown: str, ws: Workspace) -> lawfile.LawFile | None:
    if not out.exists() and not out.is_symlink():
        return None
    return lawfile.load(out, key=ws.digest.key, shown_as=shown)


def plan_specs(request: FitRequest, existing: lawfile.LawFile | None) -> list[LawSpec]:
    """The laws to fit, before `--by` groups are known (a spec per formula, or per law of the
    existing file when there is no formula)."""
    if not request.formulas:
        if existing is None:
            raise FitError(f"no --formula and {request.out} does not exist: give at least one "
                           "--formula to fit, or --out an existing law file to refit")
        return [_refit_spec(law, request) for law in existing.host.laws]
    where_expr: Expr | None = parse_where(request.where) if request.where else None
    specs = []
    for text in request.formulas:
        formula = parse_formula(text)
        selection, bounds = split_bounds(where_expr, formula.columns())
        mapping = selection.as_mapping() if selection is not None else None
        specs.append(LawSpec(
            name=request.name or formula.target, target=formula.target, terms=formula.terms,
            where=mapping or None, filter=None if selection is None or mapping is not None
            else str(selection), method=request.method or "ols", weight=request.weight,
            bounds=bounds))
    return specs


def _refit_spec(law: lawfile.Law, request: FitRequest) -> LawSpec:
    """The spec that refits a law of the file: its `auto` terms searched again
    (`fit.breakpoints`), its rows bounded again (`fit.bounds`)."""
    stats = law.fit or {}
    origin = stats.get("breakpoints")
    origin = origin if isinstance(origin, dict) else {}
    return LawSpec(name=law.name, target=law.target,
                   terms=tuple(str(origin.get(t, t)) for t in law.terms),
                   where=dict(law.where) if law.where else None, filter=law.filter,
                   method=request.method or str(stats.get("method", "ols")),
                   weight=request.weight or _str_or_none(stats.get("weight")),
                   bounds=_str_or_none(stats.get("bounds")))


def split_bounds(expr: Expr | None, features: Sequence[str]) -> tuple[Expr | None, str | None]:
    """A `--where` as (the selection, the bounds): the conditions of its top-level conjunction
    that read only the law's feature columns bound its domain (DESIGN.md section 8); the
    others select its rows."""
    if expr is None:
        return None, None
    parts = expr.items if isinstance(expr, And) else [expr]
    bound = [p for p in parts if p.columns() and set(p.columns()) <= set(features)]
    if not bound:
        return expr, None
    rest = [p for p in parts if p not in bound]
    bounds = str(bound[0]) if len(bound) == 1 else str(And(bound))
    if not rest:
        return None, bounds
    return (rest[0] if len(rest) == 1 else And(rest)), bounds


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _column_spec(specs: Sequence[LawSpec], request: FitRequest,
                 ws: Workspace) -> captures.ColumnSpec:
    numbers: dict[str, None] = {}
    targets: dict[str, None] = {}
    weights: dict[str, None] = {}
    labels: dict[str, None] = {}
    for spec in specs:
        numbers.update(dict.fromkeys(spec.numbers()))
        targets[spec.target] = None
        labels.update(dict.fromkeys(spec.selectors()))
        if spec.weight:
            weights[spec.weight] = None
    labels.update(dict.fromkeys(request.by))
    from lawkit.fitting.crossval import cv_column

    column = cv_column(request)
    if column is not None:
        labels[column] = None
    key = ws.digest.key
    return captures.ColumnSpec(
        numbers=tuple(numbers), labels=tuple(c for c in labels if c not in numbers and c != key),
        digest=key, digest_length=ws.digest.length,
        nonnegative=() if request.allow_negative else tuple(targets), weights=tuple(weights))


def _chunk_rows(request: FitRequest, found: Sequence[captures.Capture],
                spec: captures.ColumnSpec) -> int | None:
    if request.chunk_rows is not None:
        return request.chunk_rows
    estimate = 0
    columns = max(len(spec.names()), 1)
    for capture in found:
        try:
            size = capture.path.stat().st_size
        except OSError:
            continue  # the read names the problem
        if capture.format == "parquet" and not capture.compressed:
            estimate += _parquet_rows(capture) * columns * 8
        else:
            estimate += size * (5 if capture.compressed else 1)
    limit = IN_MEMORY_BYTES
    override = os.environ.get("LAWKIT_IN_MEMORY_BYTES", "").strip()
    if override:
        try:
            limit = int(override)
        except ValueError:
            raise FitError(f"LAWKIT_IN_MEMORY_BYTES={override!r}: expected a number of "
                           "bytes") from None
    return STREAM_ROWS if estimate > limit else None


def _parquet_rows(capture: captures.Capture) -> int:
    import pyarrow.parquet as pq

    try:
        return int(pq.ParquetFile(str(capture.path)).metadata.num_rows)
    except Exception:  # unreadable: the read names the problem
        return 0


def _start_hashing(found: Sequence[captures.Capture]) -> Callable[[], list[str]]:
    """Hash the capture files on a thread while they are read (hashlib releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(captures.sha256_all, found)
    pool.shutdown(wait=False)
    return future.result


# -- reading ----------------------------------------------------------------------------------


class _Source:
    """The capture rows: chunks kept in memory, or read again from the files for every pass."""

    def __init__(self, found: Sequence[captures.Capture], spec: captures.ColumnSpec,
                 chunk_rows: int | None) -> None:
        self.found = list(found)
        self.spec = spec
        self.chunk_rows = chunk_rows
        self._cached: list[captures.Chunk] | None = None

    @property
    def streaming(self) -> bool:
        return self.chunk_rows is not None

    def chunks(self, spec: captures.ColumnSpec | None = None) -> Iterator[captures.Chunk]:
        if self.streaming:
            yield from captures.read_captures(self.found, spec or self.spec,
                                              chunk_rows=self.chunk_rows)
            return
        if self._cached is None:
            self._cached = list(captures.read_captures(self.found, self.spec))
        yield from self._cached


@dataclass
class Scan:
    """What one pass over the selection columns found; scans of consecutive rows merge."""

    records: int = 0
    fitted: int = 0
    """Rows selected by at least one law and not held out: the rows the fit uses."""
    groups: dict[int, list[tuple[Any, ...]]] = field(default_factory=dict)
    selected: dict[int, int] = field(default_factory=dict)
    digests: dict[str, list[str]] = field(default_factory=dict)
    undigested: list[str] = field(default_factory=list)
    dropped: int = 0
    """Rows dropped (with drop_invalid) for an invalid selection or digest value."""
    notes: list[str] = field(default_factory=list)
    """What the reader left out of the files (`Chunk.note`: a torn last line)."""

    def add(self, chunk: captures.Chunk, specs: Sequence[LawSpec], by: Sequence[str], *,
            drop_invalid: bool = False, split: Split | None = None) -> None:
        """Scan a chunk: label validity, `by` groups, digests and row counts of every spec."""
        self.records += chunk.size
        named = chunk.has_digest_column or chunk.digest is not None
        if not named and chunk.start == 0:
            self.undigested.append(chunk.capture.shown)
        if chunk.note is not None and chunk.start == 0:
            self.notes.append(chunk.note)
        used = np.zeros(chunk.size, dtype=bool)
        selection_ok = np.ones(chunk.size, dtype=bool)
        for i, law in enumerate(specs):
            columns = _selector_columns(law, by)
            if chunk.has_digest_column and chunk.spec.digest is not None:
                columns.append(chunk.spec.digest)
            ok = _valid_or_raise(chunk, columns, None, drop_invalid)
            selection_ok &= ok
            rows = law_mask(law.where, law.fitted_filter, _selection_data(chunk, ok),
                            size=chunk.size)
            if not ok.all():
                rows &= ok
            self.selected[i] = self.selected.get(i, 0) + int(np.count_nonzero(rows))
            used |= rows
            if by:
                seen = self.groups.setdefault(i, [])
                seen.extend(_group_keys(chunk, by, rows))
        self.dropped += int(chunk.size - np.count_nonzero(selection_ok))
        fitted = used if split is None else used & ~split.held(chunk)
        self.fitted += int(np.count_nonzero(fitted))
        for value in chunk.digests_of(used):
            files = self.digests.setdefault(value, [])
            if chunk.capture.shown not in files:
                files.append(chunk.capture.shown)

    def merge(self, after: Scan) -> Scan:
        """This scan and `after`, a scan of the rows that follow, as one (first-seen order
        kept, so a tree of merges gives what one pass in order gives)."""
        digests = {value: list(files) for value, files in self.digests.items()}
        for value, files in after.digests.items():
            known = digests.setdefault(value, [])
            known.extend(f for f in files if f not in known)
        keys = sorted({*self.groups, *after.groups})
        counted = sorted({*self.selected, *after.selected})
        return Scan(
            records=self.records + after.records, fitted=self.fitted + after.fitted,
            groups={i: list(dict.fromkeys([*self.groups.get(i, []), *after.groups.get(i, [])]))
                    for i in keys},
            selected={i: self.selected.get(i, 0) + after.selected.get(i, 0) for i in counted},
            digests=digests, undigested=[*self.undigested, *after.undigested],
            dropped=self.dropped + after.dropped, notes=[*self.notes, *after.notes])

    def sort_groups(self) -> Scan:
        """The scan with each spec's groups distinct and in order (numbers, then text)."""
        for i in self.groups:
            self.groups[i] = _sorted_keys(self.groups[i])
        return self


def scan_columns(spec: captures.ColumnSpec, specs: Sequence[LawSpec], by: Sequence[str],
                 ) -> captures.ColumnSpec:
    """The columns a streamed scan reads: the selection and digest columns, nothing else (a
    selection column that is also fitted is read, and validated, as a number)."""
    labels = tuple(c for c in spec.names()
                   if c != spec.digest and any(c in _selector_columns(s, by) for s in specs))
    numbers = tuple(c for c in spec.numbers if c in labels)
    return captures.ColumnSpec(
        numbers=numbers, labels=tuple(c for c in labels if c not in spec.numbers),
        digest=spec.digest, digest_length=spec.digest_length,
        nonnegative=tuple(c for c in spec.nonnegative if c in numbers),
        weights=tuple(c for c in spec.weights if c in numbers))


def _selector_columns(spec: LawSpec, by: Sequence[str]) -> list[str]:
    return list(dict.fromkeys([*spec.selectors(), *by]))


def _selection_data(chunk: captures.Chunk, ok: BoolArray) -> Mapping[str, Any]:
    """The chunk's columns for where/filter, invalid entries replaced by a valid value of the
    same column, so that comparisons never meet None (the rows are masked out anyway)."""
    if bool(ok.all()):
        return chunk.columns
    data = dict(chunk.columns)
    for name, values in chunk.columns.items():
        if values.dtype.kind == "O":
            good = chunk.valid([name])
            if not good.all() and good.any():
                fixed = values.copy()
                fixed[~good] = values[int(np.flatnonzero(good)[0])]
                data[name] = fixed
    return data


def _scan(source: _Source, specs: Sequence[LawSpec], request: FitRequest) -> Scan:
    """One pass over the selection columns: label validity, groups, digests, row counts."""
    scan = Scan()
    columns = scan_columns(source.spec, specs, request.by) if source.streaming else None
    for chunk in source.chunks(columns):
        scan.add(chunk, specs, request.by, drop_invalid=request.drop_invalid,
                 split=Split.of(request, len(source.found)))
    return scan.sort_groups()


def _valid_or_raise(chunk: captures.Chunk, columns: Sequence[str], rows: BoolArray | None,
                    drop: bool) -> BoolArray:
    """The rows (of `rows`) valid in `columns`; without `drop`, an error at the first bad one."""
    ok = chunk.valid(columns)
    if not drop and not (ok.all() if rows is None else ok[rows].all()):
        first = chunk.first_invalid(list(columns), rows)
        if first is not None:
            raise chunk.error(*first)
    return ok


def _group_keys(chunk: captures.Chunk, by: Sequence[str], rows: BoolArray) -> list[tuple[Any, ...]]:
    """The distinct tuples of `by` values among `rows`."""
    if not rows.any():
        return []
    coded = [_factorize(chunk.columns[c][rows]) for c in by]
    combined = np.zeros(int(np.count_nonzero(rows)), dtype=np.int64)
    for uniques, codes in coded:
        combined = combined * len(uniques) + codes
    keys = []
    for value in np.unique(combined).tolist():
        key = []
        for uniques, _codes in reversed(coded):
            value, at = divmod(value, len(uniques))
            key.append(uniques[at])
        keys.append(tuple(reversed(key)))
    return keys


def _factorize(values: Any) -> tuple[list[Any], npt.NDArray[np.int64]]:
    """(distinct values as Python values, the code of every row)."""
    if values.dtype.kind in "iufb":
        uniques, codes = np.unique(values, return_inverse=True)
        return [_python(v) for v in uniques], codes.astype(np.int64).reshape(-1)
    if len(values) > 100_000:  # pandas' C hash table; its import costs more on small inputs
        import pandas as pd

        codes, uniques = pd.factorize(values)
        return [_python(v) for v in uniques], np.asarray(codes, dtype=np.int64)
    index: dict[Any, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in values.tolist()),
                        dtype=np.int64, count=len(values))
    return list(index), codes


def _python(value: Any) -> Any:
    """A numpy scalar as the Python value it stands for (int stays int)."""
    if isinstance(value, np.generic):
        return value.item()
    return value


def _sorted_keys(keys: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    def order(key: tuple[Any, ...]) -> tuple[Any, ...]:
        return tuple((0, v, "") if isinstance(v, (int, float)) and not isinstance(v, bool)
                     else (1, 0, str(v)) for v in key)

    return sorted(dict.fromkeys(keys), key=order)


def _expand(specs: Sequence[LawSpec], scan: Scan, request: FitRequest) -> list[LawSpec]:
    """One law per spec, or per group of `--by` values; an empty selection is an error."""
    laws = []
    for i, spec in enumerate(specs):
        if not scan.selected.get(i):
            raise _empty_selection(spec, scan)
        if not request.by:
            laws.append(spec)
            continue
        for key in scan.groups.get(i, []):
            where = dict(spec.where or {})
            where.update(zip(request.by, key, strict=True))
            name = f"{spec.target}[{','.join(_name_part(v) for v in key)}]"
            laws.append(replace(spec, name=name, where=where))
    return laws


def _name_part(value: Any) -> str:
    if isinstance(value, str):
        return value
    return format_literal(value)


def _empty_selection(spec: LawSpec, scan: Scan) -> FitError:
    selection = spec.selection()
    if not scan.records:
        return FitError(f"law {spec.name}: the captures hold no rows")
    return FitError(f"law {spec.name}: no capture row matches where {selection!r} (of "
                    f"{scan.records} rows read): check the values with the captures' own "
                    "spelling and types")


def _check_names(names: Sequence[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise FitError(f"two laws would be named {name!r}: give each formula its own "
                           "target, fit them into separate files, or use --name for one")
        seen.add(name)


# -- fitting ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Split:
    """Which rows are held out: whole files when there are several, else rows at random."""

    fraction: float
    seed: int
    files: frozenset[int] | None

    @classmethod
    def of(cls, request: FitRequest, nfiles: int) -> Split | None:
        """The split of a request's --holdout, None without one."""
        return cls.make(request.holdout, request.seed, nfiles) if request.holdout else None

    @classmethod
    def make(cls, fraction: float, seed: int, nfiles: int) -> Split:
        if nfiles > 1:
            count = min(max(1, round(fraction * nfiles)), nfiles - 1)
            order = np.random.default_rng(seed).permutation(nfiles)
            return cls(fraction, seed, frozenset(int(i) for i in order[:count]))
        return cls(fraction, seed, None)

    def held(self, chunk: captures.Chunk) -> BoolArray:
        if self.files is not None:
            return np.full(chunk.size, chunk.file_index in self.files, dtype=bool)
        held: BoolArray = row_uniform(self.seed, chunk) < self.fraction
        return held

    def describe(self, found: Sequence[str]) -> dict[str, Any]:
        if self.files is not None:
            return {"split": "files", "files": [found[i] for i in sorted(self.files)],
                    "fraction": self.fraction}
        return {"split": "random", "seed": self.seed, "fraction": self.fraction}


def row_uniform(seed: int, chunk: captures.Chunk) -> FloatArray:
    """A number in [0, 1) per row from a hash of (seed, file, row): the same rows whatever the
    chunking (splitmix64)."""
    rows = np.arange(chunk.start, chunk.start + chunk.size, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = rows + np.uint64((seed * 0x9E3779B97F4A7C15 + chunk.file_index)
                             & 0xFFFFFFFFFFFFFFFF)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return np.asarray((z >> np.uint64(11)).astype(np.float64) * 2.0**-53, dtype=np.float64)


@dataclass
class RowsSeen:
    """Per law: the rows dropped and the domain of the rows fitted, filled while reading."""

    dropped: int = 0
    low: dict[str, float] = field(default_factory=dict)
    high: dict[str, float] = field(default_factory=dict)

    def see(self, chunk: captures.Chunk, features: Sequence[str], rows: BoolArray) -> None:
        if not rows.any():
            return
        everything = bool(rows.all())
        for name in features:
            values = chunk.columns[name] if everything else chunk.columns[name][rows]
            lo, hi = float(values.min()), float(values.max())
            self.low[name] = min(self.low.get(name, lo), lo)
            self.high[name] = max(self.high.get(name, hi), hi)

    def merge(self, other: RowsSeen) -> RowsSeen:
        """Both, as if one had seen the rows of the other too."""
        low, high = dict(self.low), dict(self.high)
        for name, lo in other.low.items():
            low[name] = min(low.get(name, lo), lo)
        for name, hi in other.high.items():
            high[name] = max(high.get(name, hi), hi)
        return RowsSeen(self.dropped + other.dropped, low, high)


def law_rows(law: LawSpec, chunk: captures.Chunk, *, drop_invalid: bool = False,
             held: BoolArray | None = None, holdout: bool = False) -> tuple[BoolArray, int]:
    """The rows of `chunk` a law fits and how many of its rows it dropped as invalid.

    Its `where` and `filter` select; `held` (rows held out) removes rows, or, with `holdout`,
    keeps only those. Without `drop_invalid`, an invalid value in a column the law reads is a
    CaptureError naming file, column and row.
    """
    selectors = _selector_columns(law, ())
    digest = chunk.spec.digest
    if digest is not None and chunk.has_digest_column:
        selectors.append(digest)
    ok = _valid_or_raise(chunk, selectors, None, drop_invalid)
    rows = law_mask(law.where, law.fitted_filter, _selection_data(chunk, ok), size=chunk.size)
    if not ok.all():
        rows &= ok
    if held is not None:
        rows &= held if holdout else ~held
    unmeasured = rows & chunk.empty(law.target)  # a region the step did not enter: left out
    rows &= ~unmeasured
    good = _valid_or_raise(chunk, law.numbers(), rows, drop_invalid)
    if good.all():
        return rows, int(np.count_nonzero(unmeasured))
    dropped = int(np.count_nonzero(rows & ~good) + np.count_nonzero(unmeasured))
    return rows & good, dropped


def law_design(law: LawSpec, chunk: captures.Chunk, rows: BoolArray,
               ) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    """(design matrix, target, weights or None) of a law over the given rows of `chunk`."""
    everything = bool(rows.all())
    x = design_matrix(chunk.columns, law.terms, None if everything else rows)
    y = chunk.columns[law.target] if everything else chunk.columns[law.target][rows]
    w = None
    if law.weight:
        w = chunk.columns[law.weight] if everything else chunk.columns[law.weight][rows]
    return x, y, w


def law_entry(law: LawSpec, result: Any, *, domain: Mapping[str, Sequence[float]],
              dropped: int = 0, holdout: Mapping[str, Any] | None = None,
              split: Mapping[str, Any] | None = None,
              origin: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The law-file mapping of a fitted law (name, target, where, filter, terms, fit, domain)
    from its spec and a `solve.FitResult`; `origin` maps each term placed by a breakpoint
    search to its formula term (`fit.breakpoints`)."""
    stats = fit_statistics(result, weight=law.weight, dropped=dropped, holdout=holdout,
                           split=split)
    if origin:
        stats["breakpoints"] = dict(origin)
    if law.bounds:
        stats["bounds"] = law.bounds
    return {"name": law.name, "target": law.target, "where": law.where, "filter": law.filter,
            "terms": {t: float(c) for t, c in zip(law.terms, result.coef, strict=True)},
            "fit": stats,
            "domain": {k: [float(v[0]), float(v[1])] for k, v in domain.items()} or None}


def _fit_one(law: LawSpec, source: _Source, request: FitRequest, split: Split | None,
             ) -> FittedLaw:
    from lawkit.fitting import breakpoints, methods, runner

    seen = RowsSeen()
    features = law.features
    search: Search | None = None

    def pieces() -> Iterator[tuple[FloatArray, FloatArray, FloatArray | None]]:
        seen.dropped = 0
        for chunk in source.chunks():
            rows, dropped = law_rows(law, chunk, drop_invalid=request.drop_invalid,
                                     held=split.held(chunk) if split else None)
            seen.dropped += dropped
            seen.see(chunk, features, rows)
            if rows.any():
                yield law_design(law, chunk, rows)

    try:
        if auto_factors(law.terms):
            rows: breakpoints.Rows = _StreamRows(law, source, request, split) \
                if source.streaming else _MemoryRows(law, source, request, split)
            search = breakpoints.search(law.terms, law.method, rows)
            law = replace(law, terms=search.terms)
        steps = methods.passes(law.method, law.terms)
        if source.streaming:
            result = runner.run(steps, pieces)
        else:
            parts = list(pieces())
            if not parts:
                raise FitError("no rows to fit")
            x, y, w = _stack(parts)
            parts.clear()
            result = runner.run_arrays(steps, x, y, w)
            del x, y, w
    except FitError as exc:
        if seen.dropped and exc.detail == "no rows to fit":
            exc = FitError("every row it selects was dropped: invalid, or with an empty target "
                           "cell (a region no step entered)")
        selection = law.selection()
        where = f" (where {selection})" if selection else ""
        raise FitError(f"law {law.name}{where}: {exc.detail}") from None
    holdout = None
    if split is not None:
        holdout = _score_holdout(law, result.coef, source, request, split)
    domain = {name: [seen.low[name], seen.high[name]] for name in features if name in seen.low}
    mapping = law_entry(law, result, domain=domain, dropped=seen.dropped, holdout=holdout,
                        split=split.describe([c.shown for c in source.found]) if split else None,
                        origin=search.origin if search else None)
    return FittedLaw(spec=law, law=mapping, n=result.n, dropped=seen.dropped, search=search)


class _MemoryRows:
    """A law's fitted rows gathered once, for a breakpoint search in memory."""

    def __init__(self, law: LawSpec, source: _Source, request: FitRequest,
                 split: Split | None) -> None:
        self.law = law
        parts: dict[str, list[Any]] = {c: [] for c in law.numbers()}
        for chunk in source.chunks():
            rows, _dropped = law_rows(law, chunk, drop_invalid=request.drop_invalid,
                                      held=split.held(chunk) if split else None)
            if rows.any():
                for name, values in parts.items():
                    values.append(chunk.columns[name][rows])
        self.columns = {name: np.asarray(np.concatenate(values) if values else [],
                                         dtype=np.float64) for name, values in parts.items()}
        if not len(self.columns[law.target]):
            raise FitError("no rows to fit")

    def distinct(self, column: str) -> FloatArray:
        return np.unique(self.columns[column])

    def residuals(self, terms: tuple[str, ...]) -> tuple[float | None, Iterator[
            tuple[FloatArray, FloatArray | None]]]:
        from lawkit.fitting import methods, runner

        y = self.columns[self.law.target]
        w = self.columns[self.law.weight] if self.law.weight else None
        if not terms:
            return None, iter([(y, w)])
        x = design_matrix(self.columns, terms)
        result = runner.run_arrays(methods.passes(self.law.method, terms), x, y, w)
        r = y - methods.matvec(x, np.asarray(result.coef, dtype=np.float64))
        return result.scale, iter([(r, w)])


class _StreamRows:
    """A law's fitted rows read again from the captures: every candidate a full streamed
    fit, then one more pass for its objective."""

    def __init__(self, law: LawSpec, source: _Source, request: FitRequest,
                 split: Split | None) -> None:
        self.law, self.source, self.request, self.split = law, source, request, split

    def _rows(self, law: LawSpec) -> Iterator[tuple[captures.Chunk, BoolArray]]:
        for chunk in self.source.chunks():
            rows, _dropped = law_rows(law, chunk, drop_invalid=self.request.drop_invalid,
                                      held=self.split.held(chunk) if self.split else None)
            if rows.any():
                yield chunk, rows

    def distinct(self, column: str) -> FloatArray:
        found = [np.unique(chunk.columns[column][rows]) for chunk, rows in self._rows(self.law)]
        return np.unique(np.concatenate(found)) if found else np.zeros(0)

    def residuals(self, terms: tuple[str, ...]) -> tuple[float | None, Iterator[
            tuple[FloatArray, FloatArray | None]]]:
        from lawkit.fitting import methods, runner

        law = replace(self.law, terms=terms)
        coef = np.zeros(0)
        scale = None
        if terms:
            result = runner.run(methods.passes(law.method, terms),
                                lambda: (law_design(law, c, r) for c, r in self._rows(law)))
            coef, scale = np.asarray(result.coef, dtype=np.float64), result.scale

        def chunks() -> Iterator[tuple[FloatArray, FloatArray | None]]:
            for chunk, rows in self._rows(self.law):
                x, y, w = law_design(law, chunk, rows) if terms else (None, *law_design(
                    replace(law, terms=("1",)), chunk, rows)[1:])
                yield (y - methods.matvec(x, coef) if x is not None else y), w

        return scale, chunks()


def _stack(parts: list[tuple[FloatArray, FloatArray, FloatArray | None]],
           ) -> tuple[FloatArray, FloatArray, FloatArray | None]:
    if len(parts) == 1:
        return parts[0]
    x = np.asfortranarray(np.concatenate([p[0] for p in parts]))
    y = np.concatenate([p[1] for p in parts])
    w = None if parts[0][2] is None else np.concatenate([p[2] for p in parts
                                                         if p[2] is not None])
    return x, y, w


def _score_holdout(law: LawSpec, coef: Sequence[float], source: _Source, request: FitRequest,
                   split: Split) -> dict[str, Any]:
    from lawkit.fitting import methods

    b = np.asarray(coef, dtype=np.float64)
    sums = methods.Summary()
    for chunk in source.chunks():
        rows, _dropped = law_rows(law, chunk, drop_invalid=request.drop_invalid,
                                  held=split.held(chunk), holdout=True)
        if not rows.any():
            continue
        x = design_matrix(chunk.columns, law.terms, rows)
        y = chunk.columns[law.target][rows]
        sums = sums.merge(methods.Summary.of(y, y - x @ b))
    return sums.scores()


def fit_statistics(result: Any, *, weight: str | None = None, dropped: int = 0,
                   holdout: Mapping[str, Any] | None = None,
                   split: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A law's `fit` mapping from a `solve.FitResult` (the shape is in the module docstring);
    non-finite values are left out (a law file holds finite numbers only)."""
    stats: dict[str, Any] = {"method": result.method, "n": int(result.n), "p": int(result.p)}
    for key in ("r2", "rmse", "resid_sd", "mape", "cond"):
        _put(stats, key, getattr(result, key))
    stderr = {t: float(s) for t, s in zip(result.terms, result.stderr, strict=True)
              if math.isfinite(s)}
    if stderr:
        stats["stderr"] = stderr
        dof = int(result.n) - int(result.p)
        if dof > 0:
            from scipy.special import stdtrit

            t = float(stdtrit(dof, 0.975))
            stats["ci95"] = {term: [float(c - t * stderr[term]), float(c + t * stderr[term])]
                             for term, c in zip(result.terms, result.coef, strict=True)
                             if term in stderr}
    if getattr(result, "scale", None) is not None:
        _put(stats, "scale", result.scale)
    if getattr(result, "downweighted", None) is not None:
        stats["downweighted"] = int(result.downweighted)
    if weight:
        stats["weight"] = weight
    if dropped:
        stats["dropped"] = int(dropped)
    if holdout is not None:
        hold: dict[str, Any] = dict(split or {})
        hold["n"] = int(holdout["n"])
        for key in ("r2", "rmse", "mape"):
            if key in holdout:
                _put(hold, key, holdout[key])
        stats["holdout"] = hold
    return stats


def _put(mapping: dict[str, Any], key: str, value: Any) -> None:
    if value is not None and math.isfinite(float(value)):
        mapping[key] = float(value)


# -- the digest -------------------------------------------------------------------------------


def _resolve_digest(scan: Scan, request: FitRequest, ws: Workspace) -> tuple[str, list[str]]:
    """The digest the laws are keyed to, and every digest the captures named."""
    seen = list(scan.digests)
    key = ws.digest.key
    for value in seen:
        problem = digest_problem(value, ws.digest.length)
        if problem is not None:
            files = ", ".join(scan.digests[value])
            raise CaptureError(f"{files}: the digest {printable(repr(value))} (column {key} or "
                               f"metadata {captures.METADATA_PREFIX}{key}): {problem}")
    if len(seen) > 1 and not request.allow_mixed_digests:
        listing = "; ".join(f"{d} ({', '.join(files)})" for d, files in scan.digests.items())
        raise CaptureError(f"the captures ran on {len(seen)} engine digests: {listing}. Fit "
                           f"each digest's captures on its own (--where '{key} == \"...\"'), or "
                           "pass --allow-mixed-digests with --captured-on naming the key")
    given = request.captured_on
    if given == CURRENT:
        from lawkit.keying.digest import current_digest

        given = current_digest(ws)
        shown = f"--captured-on current ({given})"
    else:
        shown = f"--captured-on {given}"
    if given is not None:
        if seen and given not in seen:
            raise CaptureError(f"{shown} conflicts with the captures, which name "
                               f"{', '.join(seen)} (column {key} or metadata "
                               f"{captures.METADATA_PREFIX}{key}): drop --captured-on or fix "
                               "the captures")
        return given, sorted(seen) if seen else [given]
    if len(seen) == 1:
        if scan.undigested:
            raise CaptureError(f"{', '.join(scan.undigested)}: no digest ({key} column or "
                               f"{captures.METADATA_PREFIX}{key} metadata) while other captures "
                               f"name {seen[0]}: pass --captured-on {seen[0]} if they ran on it")
        return seen[0], seen
    if len(seen) > 1:
        raise CaptureError("with --allow-mixed-digests, pass --captured-on DIGEST to say which "
                           f"digest the laws are keyed to (the captures name {', '.join(seen)})")
    raise CaptureError(f"the captures do not say which engine digest they ran on (no {key!r} "
                       f"column, no Parquet metadata {captures.METADATA_PREFIX}{key}): pass "
                       "--captured-on DIGEST, or --captured-on current for the workspace's "
                       "current digest")


# -- provenance helpers -------------------------------------------------------------------------


def _provenance_path(capture: captures.Capture, ws: Workspace) -> str:
    """Relative to the workspace root, or the bare file name outside it: never absolute."""
    try:
        return capture.path.relative_to(ws.root).as_posix()
    except ValueError:
        return capture.path.name


def _timestamp(now: datetime.datetime | None) -> str:
    moment = now or datetime.datetime.now(datetime.UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


__all__ = [
    "FitReport",
    "FitRequest",
    "FittedLaw",
    "LawSpec",
    "RowsSeen",
    "Runner",
    "Scan",
    "Split",
    "fit_laws",
    "fit_statistics",
    "law_design",
    "law_entry",
    "law_rows",
    "plan_specs",
    "run_fit",
    "scan_columns",
    "write_fit",
]
