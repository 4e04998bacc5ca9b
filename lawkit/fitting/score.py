"""`lawkit score`: how well each law of a file predicts captures it was not fitted on.

Each law scores the capture rows its own `where` and `filter` select (after `--where`, when
given): n, the mean, median and 90th-percentile absolute percentage error (MAPE, ...), the mean
signed percentage error (bias: positive when the law over-predicts), R^2, the RMSE in the
target's unit, and the share of rows outside the law's domain. Percentages are fractions here
(0.031 is 3.1%), as `--max-mape` is. A law with no matching rows is "not scored" and fails
nothing by itself; no law matching any row is an error. A row whose target cell is empty (a
region the step did not enter, docs/captures.md) is left out of that law
and counted (`unmeasured`).

A law whose rows all measure 0 has no percentage error at all. Under a threshold
(`--max-mape`, or the config's `[score] max_mape`) it fails
(exit 1, named on a FAIL line): the gate is there to show that the laws hold, and it cannot show
that of a law it could not score, which is what a capture pipeline writing zeros produces. It is
exit 1 and not 2 because nothing is unreadable: zero is a valid duration, the command worked,
and what it found is a problem with the law's evidence, as a MAPE above the threshold is.
Without a threshold such a law is "not scored", and no law is `ok` or `fail`: each is
`scored`, and the table has no verdict column.

Capture reading and validation are lawkit.fitting.captures', row selection
lawkit.lawfiles.where's: a target,
feature or selection column missing from a capture is an error naming the file; a bad value in
a row some law scores is an error naming the file, column and row (`drop_invalid` drops such
rows and counts them instead), as in `fit`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lawkit.errors import CaptureError, LawkitError
from lawkit.lawfiles.predict import has_column

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from lawkit.config import Workspace
    from lawkit.fitting.captures.chunks import Chunk
    from lawkit.lawfiles.lawfile import Law, LawFile

    FloatArray = npt.NDArray[np.float64]
    BoolArray = npt.NDArray[np.bool_]

CHUNK_ROWS = 1 << 20
OK, FAIL, NOT_SCORED, SCORED = "ok", "fail", "not scored", "scored"
"""A law's status: within the threshold, above it, without a score, or scored with no
threshold to hold it to (neither ok nor fail)."""


@dataclass(frozen=True)
class Metrics:
    """How predictions `p` match measurements `y` (fractions for percentages)."""

    n: int
    mape: float | None
    median_ape: float | None
    p90_ape: float | None
    bias: float | None
    r2: float | None
    rmse: float | None
    outside_domain: float | None
    zero_targets: int = 0

    def to_json(self) -> dict[str, Any]:
        """The figures as JSON values (None where undefined)."""
        return {"n": self.n, "mape": self.mape, "median_ape": self.median_ape,
                "p90_ape": self.p90_ape, "bias": self.bias, "r2": self.r2, "rmse": self.rmse,
                "outside_domain": self.outside_domain, "zero_targets": self.zero_targets}


def metrics(y: Any, p: Any, outside: Any = None) -> Metrics:
    """The score of predictions `p` against measurements `y` (and the rows outside the domain).

    Percentage errors are relative to the measurement; rows measuring exactly 0 have none and
    are counted in `zero_targets`. R^2 is undefined for fewer than two distinct measurements.
    Sums of squares are taken on values divided by the largest magnitude, so that values near
    the float64 limit (1e308) give their figures instead of overflowing.
    """
    import numpy as np

    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    n = int(y.size)
    if n == 0:
        return Metrics(0, None, None, None, None, None, None, None)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        nonzero = y != 0
        measured, predicted = y[nonzero], p[nonzero]
        relative = (predicted - measured) / np.abs(measured)
        overflowed = ~np.isfinite(relative) & np.isfinite(predicted)
        if overflowed.any():  # p - y beyond the float64 range, its ratio to y within it
            relative[overflowed] = predicted[overflowed] / np.abs(measured[overflowed]) - \
                np.sign(measured[overflowed])
        ape = np.abs(relative)
        magnitudes = np.abs(np.concatenate([y, p]))
        finite = magnitudes[np.isfinite(magnitudes)]
        scale = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        ys, error = y / scale, p / scale - y / scale
        sst = float(np.sum((ys - ys.mean()) ** 2))
        ssr = float(np.sum(error**2))
        have = ape.size > 0
        share = None if outside is None else float(np.count_nonzero(outside)) / n
        return Metrics(
            n=n,
            mape=_finite(ape.mean()) if have else None,
            median_ape=_finite(np.median(ape)) if have else None,
            p90_ape=_finite(np.quantile(ape, 0.9)) if have else None,
            bias=_finite(relative.mean()) if have else None,
            r2=_finite(1.0 - ssr / sst) if sst > 0 else None,
            rmse=_finite(scale * math.sqrt(ssr / n)) if math.isfinite(ssr) else None,
            outside_domain=share,
            zero_targets=int(n - np.count_nonzero(nonzero)),
        )


@dataclass(frozen=True)
class LawScore:
    """One law's score and verdict: `ok`, `fail` (MAPE above the threshold), `not scored`, or
    `scored` when there is no threshold."""

    name: str
    target: str
    selection: str
    metrics: Metrics
    status: str
    dropped: int = 0
    unmeasured: int = 0
    """Rows it selects whose target cell is empty (a region not entered), left out."""

    @property
    def unscorable(self) -> bool:
        """Whether it has rows but no percentage error (every row measures 0)."""
        return self.metrics.n > 0 and self.metrics.mape is None

    def no_mape(self) -> str:
        """Why an unscorable law has no MAPE, in words."""
        m = self.metrics
        if m.zero_targets == m.n:
            return f"all {m.n} of its rows measure 0 {self.target}"
        return "its percentage errors are not finite numbers"

    def to_json(self) -> dict[str, Any]:
        """The law's entry in `lawkit score --json`."""
        return {"name": self.name, "target": self.target, "selection": self.selection,
                "status": self.status, **self.metrics.to_json(), "dropped": self.dropped,
                "unmeasured": self.unmeasured}


@dataclass
class ScoreReport:
    """Every law's score on the captures, and the threshold they were held to."""

    law_file: str
    captures: list[str]
    where: str | None
    max_mape: float | None
    rows: int
    """Capture rows read."""
    considered: int
    """Rows left after `--where` (all rows without it)."""
    laws: list[LawScore]
    threshold_from: str | None = None
    """Where `max_mape` came from when not from the caller (the config file's name)."""
    data: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)
    """Per law name, the scored rows' target and feature columns (kept for plots)."""
    models: dict[str, Law] = field(default_factory=dict, repr=False)
    """The laws scored, by name."""
    notes: list[str] = field(default_factory=list)
    """What the reader said about the files (a torn last line left out)."""

    @property
    def failed(self) -> list[LawScore]:
        """The laws whose MAPE exceeds the threshold."""
        return [s for s in self.laws if s.status == FAIL]

    @property
    def not_scored(self) -> list[LawScore]:
        """The laws not scored: no capture row matched, or (without a threshold) every row
        measures 0."""
        return [s for s in self.laws if s.status == NOT_SCORED]

    @property
    def exit_code(self) -> int:
        """1 when a law fails the threshold, else 0."""
        return 1 if self.failed else 0

    def to_json(self) -> dict[str, Any]:
        """The document `lawkit score --json` prints."""
        return {"law_file": self.law_file, "captures": self.captures, "where": self.where,
                "max_mape": self.max_mape, "rows": self.rows, "considered": self.considered,
                "ok": not self.failed,
                "failed": [s.name for s in self.failed],
                "not_scored": [s.name for s in self.not_scored],
                "notes": self.notes,
                "laws": [s.to_json() for s in self.laws]}

    def lines(self) -> list[str]:
        """The terminal report: a header, a table, then one line per failing law."""
        files = f"{len(self.captures)} capture file{'s' if len(self.captures) != 1 else ''}"
        rows = f"{self.rows} rows" + (f", {self.considered} after --where" if self.where else "")
        threshold = ""
        if self.max_mape is not None:
            source = f" ([score] max_mape in {self.threshold_from})" if self.threshold_from \
                else ""
            threshold = f", max MAPE {_pct(self.max_mape)}{source}"
        out = [f"lawkit score: {self.law_file} on {files} ({rows}){threshold}"]
        header = ["law", "n", "MAPE", "median", "p90", "bias", "R^2", "outside", ""]
        table = [header]
        for s in self.laws:
            m = s.metrics
            # no threshold, no verdict: a law is neither ok nor failing by itself
            verdict = s.status if self.max_mape is not None else ""
            table.append([s.name, str(m.n), _pct(m.mape), _pct(m.median_ape), _pct(m.p90_ape),
                          _pct(m.bias, signed=True), _r2(m.r2), _pct(m.outside_domain, digits=0),
                          verdict])
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        for row in table:
            cells = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in
                                                 zip(row[1:-1], widths[1:-1], strict=True)]
            out.append("  ".join([*cells, row[-1]]).rstrip())
        for s in self.laws:
            if s.metrics.zero_targets:
                zero = s.metrics.zero_targets
                out.append(f"note: {s.name}: {zero} row{'s' if zero != 1 else ''} measure"
                           f"{'' if zero != 1 else 's'} 0 "
                           f"{s.target}: left out of the percentage errors")
            if s.dropped:
                out.append(f"note: {s.name}: {s.dropped} invalid "
                           f"row{'s' if s.dropped != 1 else ''} dropped")
            if s.unmeasured:
                out.append(f"note: {s.name}: {s.unmeasured} row{'s' if s.unmeasured != 1 else ''}"
                           f" with no {s.target} (the region was not entered): left out")
        out.extend(f"note: {note}" for note in self.notes)
        for s in self.failed:
            if s.unscorable:
                out.append(f"FAIL {s.name}: {s.no_mape()}, so it has no percentage error to "
                           "hold to --max-mape (are the captures measuring?)")
            else:
                out.append(f"FAIL {s.name}: MAPE {_pct(s.metrics.mape)} > "
                           f"{_pct(self.max_mape)}")
        unmatched = [s.name for s in self.not_scored if not s.unscorable]
        if unmatched:
            out.append(f"not scored (no matching rows): {', '.join(unmatched)}")
        out.extend(f"not scored ({s.no_mape()}): {s.name}" for s in self.not_scored
                   if s.unscorable)
        return out


def score(
    ws: Workspace,
    law_path: str | Path,
    capture_paths: Sequence[str | Path],
    *,
    where: str | None = None,
    max_mape: float | None = None,
    drop_invalid: bool = False,
    keep_data: bool = False,
    quiet: bool = True,
    cwd: Path | None = None,
    trace_map: Path | None = None,
) -> ScoreReport:
    """Score every law of a law file on capture files (see the module docstring).

    The threshold is `max_mape`, else the workspace's `[score] max_mape`, else none: then no
    law is `ok` or `fail`, each is only `scored` (or `not scored`). Paths are relative to `cwd`
    (default: the working directory); messages name files relative to the workspace root.
    `keep_data` keeps the scored rows in the report, for `plot_fit`.
    `quiet=False` shows a progress bar on stderr when it is a terminal. Traces are read by
    `trace_map` (a TOML file), else the workspace's `[trace]`.
    """
    from lawkit.fitting.captures.files import find_captures
    from lawkit.fitting.captures.read import read_captures
    from lawkit.fitting.captures.tracemap import mapping_for
    from lawkit.fitting.progress import progress
    from lawkit.lawfiles import lawfile
    from lawkit.lawfiles.where import parse_where

    here = (cwd or Path.cwd()).absolute()
    path = Path(law_path) if Path(law_path).is_absolute() else here / law_path
    law_file = lawfile.load(path, key=ws.digest.key, shown_as=ws.rel(path))
    _check_threshold(max_mape)
    threshold_from = None
    if max_mape is None and ws.max_mape is not None:
        max_mape = ws.max_mape
        threshold_from = ws.config_path.name if ws.config_path is not None else None
    expr = parse_where(where) if where else None
    files = find_captures(capture_paths, cwd=here, shown=ws.rel)
    spec = _column_spec(law_file.host.laws, expr.columns() if expr else [], ws,
                        mapping_for(ws, trace_map, files))
    state = _Scoring(law_file.host.laws, drop_invalid=drop_invalid, keep_data=keep_data)
    sizes = [_size(c.path) for c in files]
    rows = considered = 0
    notes: list[str] = []
    with progress(sum(sizes), quiet=quiet, description="scoring") as advance:
        current: int | None = None
        for chunk in read_captures(files, spec, chunk_rows=CHUNK_ROWS):
            if chunk.file_index != current:  # a file begun: the one before is done
                if current is not None:
                    advance(sizes[current])
                current = chunk.file_index
                advance(0, files[current].shown)
            rows += chunk.size
            keep = expr.mask(chunk.columns) if expr is not None else None
            considered += chunk.size if keep is None else int(keep.sum())
            state.add(chunk, keep)
            if chunk.note is not None and chunk.note not in notes:
                notes.append(chunk.note)
        if current is not None:
            advance(sizes[current])
    report = state.report(law_file, [c.shown for c in files], where=where, max_mape=max_mape,
                          rows=rows, considered=considered)
    from lawkit.fitting.provenance import capture_host, other_cpu

    moved = other_cpu(_fit_host(law_file), [capture_host(c) for c in files])
    report.notes = notes + ([moved] if moved else [])
    report.threshold_from = threshold_from
    if all(s.metrics.n == 0 for s in report.laws):
        raise CaptureError(_nothing_matched(law_file, rows, considered, where))
    return report


def score_data(law_file: LawFile, data: Any, *, max_mape: float | None = None,
               keep_data: bool = False) -> ScoreReport:
    """Score every law of `law_file` on rows in memory: a DataFrame or a mapping of arrays.

    The rows are used as they are (no validation beyond what prediction needs); a law no row
    matches is "not scored", and no error is raised when none matches.
    """
    import numpy as np

    from lawkit.lawfiles.where import law_mask

    _check_threshold(max_mape)
    laws = law_file.host.laws
    state = _Scoring(laws, drop_invalid=False, keep_data=keep_data)
    columns = {c: _column_of(data, c) for c in _needed(laws) if has_column(data, c)}
    n = len(next(iter(columns.values()))) if columns else 0
    for law in laws:
        selected = law_mask(law.where, law.filter, columns) if n else np.zeros(0, dtype=bool)
        state.add_law(law, columns, selected)
    return state.report(law_file, [], where=None, max_mape=max_mape, rows=n, considered=n)


class _Scoring:
    """Per law, the measurements, predictions and domain flags of the rows it scores."""

    def __init__(self, laws: Sequence[Law], *, drop_invalid: bool, keep_data: bool) -> None:
        self.laws = list(laws)
        self.drop_invalid = drop_invalid
        self.keep_data = keep_data
        self.parts: dict[str, list[tuple[Any, Any, Any]]] = {law.name: [] for law in laws}
        self.kept: dict[str, list[dict[str, Any]]] = {law.name: [] for law in laws}
        self.dropped = dict.fromkeys(self.parts, 0)
        self.unmeasured = dict.fromkeys(self.parts, 0)

    def add(self, chunk: Chunk, keep: BoolArray | None) -> None:
        import numpy as np

        from lawkit.lawfiles.where import law_mask

        for law in self.laws:
            selected = law_mask(law.where, law.filter, chunk.columns)
            if keep is not None:
                selected &= keep
            unmeasured = selected & chunk.empty(law.target)
            if unmeasured.any():
                self.unmeasured[law.name] += int(np.count_nonzero(unmeasured))
                selected &= ~unmeasured
            used = [law.target, *law.columns()]
            if self.drop_invalid:
                valid = chunk.valid(used)
                self.dropped[law.name] += int(np.count_nonzero(selected & ~valid))
                selected &= valid
            else:
                bad = chunk.first_invalid(used, selected)
                if bad is not None:
                    raise chunk.error(*bad)
            self.add_law(law, chunk.columns, selected)

    def add_law(self, law: Law, columns: Mapping[str, Any], selected: BoolArray) -> None:
        if not selected.any():
            return
        rows = {c: _column_of(columns, c, law)[selected] for c in [law.target, *law.columns()]}
        predicted, outside = law.predict(rows, on_domain="mask")
        self.parts[law.name].append((rows[law.target], predicted, outside))
        if self.keep_data:
            self.kept[law.name].append(rows)

    def report(self, law_file: LawFile, captures: list[str], *, where: str | None,
               max_mape: float | None, rows: int, considered: int) -> ScoreReport:
        import numpy as np

        from lawkit.lawfiles.where import format_where

        scores, data = [], {}
        for law in self.laws:
            parts = self.parts[law.name]
            if parts:
                y, p, outside = (np.concatenate(x) for x in zip(*parts, strict=True))
                m = metrics(y, p, outside)
            else:
                m = metrics([], [])
            if m.n == 0 or (m.mape is None and max_mape is None):
                status = NOT_SCORED
            elif max_mape is None:
                status = SCORED
            elif m.mape is None or m.mape > max_mape:
                status = FAIL  # no percentage error cannot pass the gate (module docstring)
            else:
                status = OK
            scores.append(LawScore(name=law.name, target=law.target,
                                   selection=format_where(law.where, law.filter), metrics=m,
                                   status=status, dropped=self.dropped[law.name],
                                   unmeasured=self.unmeasured[law.name]))
            if self.keep_data and self.kept[law.name]:
                pieces = self.kept[law.name]
                data[law.name] = {c: np.concatenate([piece[c] for piece in pieces])
                                  for c in pieces[0]}
        return ScoreReport(law_file=law_file.path, captures=captures, where=where,
                           max_mape=max_mape, rows=rows, considered=considered, laws=scores,
                           data=data, models={law.name: law for law in self.laws})


def _column_spec(laws: Sequence[Law], where_columns: Sequence[str], ws: Workspace,
                 trace: Any) -> Any:
    """The columns scoring reads, traces read by `trace`; the key column too, so that a torn
    last row of a `lawkit.capture` file (its key column last) is told from a whole one."""
    from lawkit.fitting.captures.chunks import ColumnSpec
    from lawkit.lawfiles.where import law_columns

    targets = dict.fromkeys(law.target for law in laws)
    numbers = dict(targets)
    for law in laws:
        numbers.update(dict.fromkeys(law.columns()))
    labels: dict[str, None] = {}
    for law in laws:
        labels.update(dict.fromkeys(law_columns(law.where, law.filter)))
    labels.update(dict.fromkeys(where_columns))
    return ColumnSpec(numbers=tuple(numbers), labels=tuple(c for c in labels if c not in numbers),
                      nonnegative=tuple(targets), digest=ws.digest.key,
                      digest_length=ws.digest.length, trace=trace)


def _needed(laws: Sequence[Law]) -> list[str]:
    from lawkit.lawfiles.where import law_columns

    out: dict[str, None] = {}
    for law in laws:
        out.update(dict.fromkeys([law.target, *law.columns(),
                                  *law_columns(law.where, law.filter)]))
    return list(out)


def _column_of(data: Any, name: str, law: Law | None = None) -> Any:
    import numpy as np

    try:
        raw = data[name]
    except KeyError:
        who = f"law {law.name!r} needs" if law is not None else "no"
        raise CaptureError(f"{who} column {name!r}: the data does not hold it") from None
    return raw.to_numpy() if hasattr(raw, "to_numpy") else np.asarray(raw)


def _fit_host(law_file: LawFile) -> dict[str, Any] | None:
    """The `host` of the newest `fit` entry of a law file (None: it names none)."""
    for entry in reversed(law_file.host.provenance):
        if entry.fit is not None:
            host = (entry.fit.model_extra or {}).get("host")
            return host if isinstance(host, dict) else None
    return None


def _check_threshold(max_mape: float | None) -> None:
    if max_mape is not None and not (math.isfinite(max_mape) and max_mape >= 0):
        raise LawkitError(f"--max-mape: expected a fraction >= 0 (0.1 is 10%), got {max_mape!r}")


def _nothing_matched(law_file: LawFile, rows: int, considered: int, where: str | None) -> str:
    from lawkit.lawfiles.where import format_where

    selections = sorted({format_where(law.where, law.filter) or "every row"
                         for law in law_file.host.laws})
    read = f"{rows} rows read" + (f", {considered} after --where {where!r}" if where else "")
    return (f"no law in {law_file.path} matches any capture row ({read}); the laws select: "
            f"{'; '.join(selections[:5])}{'; ...' if len(selections) > 5 else ''}")


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _finite(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def _pct(value: float | None, *, signed: bool = False, digits: int = 1) -> str:
    if value is None:
        return "-"
    return f"{value * 100:{'+' if signed else ''}.{digits}f}%"


def _r2(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
