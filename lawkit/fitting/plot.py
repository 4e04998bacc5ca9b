"""Fit reports a person can look at: per law, measured against predicted and the residuals.

Each law is a block of panels: the measured target against the law's prediction with the
identity line, then the residual (measured minus predicted, as a percentage of the measurement:
above zero the law predicts too little) against each feature the law uses. A block is titled
with the law's name, n, MAPE, bias and R^2, and a verdict such as FAIL on a line of its own;
rows outside the law's domain are drawn in another colour. Every panel is 400 x 320 pixels, a
block (1 + most features of a law) panels wide; blocks sit side by side up to `MAX_WIDTH_PX`,
then wrap, so many laws make a grid rather than one tall column. Laws beyond `PAGE_LAWS` go to
further files `NAME-2.png`, `NAME-3.png`, ... .

matplotlib (the optional `plot` extra) is imported only here, only when a plot is drawn, and
only through its object API with the Agg canvas: no pyplot, no global backend switch, so a
caller's notebook or GUI keeps its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lawkit.errors import LawkitError
from lawkit.lawfiles.predict import has_column

if TYPE_CHECKING:
    from lawkit.config import Workspace
    from lawkit.fitting.report import FitReport
    from lawkit.fitting.score import Metrics, ScoreReport
    from lawkit.lawfiles.lawfile import Law

PANEL_PX = (400, 320)
DPI = 100
PAGE_LAWS = 12
MAX_WIDTH_PX = 2400
MAX_POINTS = 20_000
FORMATS = {".png": "png", ".svg": "svg", ".pdf": "pdf"}
INSTALL = "pip install 'lawkit[plot]'"
# Pixels around and between panels: room for tick labels, axis labels and two-line titles.
_MARGIN = {"left": 62, "right": 14, "bottom": 44, "top": 46, "title": 18, "between_x": 78,
           "between_y": 96}
RESIDUAL_LABEL = "(measured - predicted) / measured, %"


def plot_fit(path: str | Path, laws_and_data: Sequence[tuple[Law, Any]], *,
             select: bool = True, title: str | None = None) -> list[Path]:
    """Draw each law against its data; returns the files written (more than one past a page).

    Each data is a DataFrame or a mapping of arrays holding the law's target and features;
    with `select`, the rows the law's where/filter selects (where the data holds those columns).
    """
    from lawkit.fitting.score import metrics

    rows = []
    for law, data in laws_and_data:
        columns = _selected(law, data) if select else _columns(law, data)
        predicted, outside = _predict(law, columns)
        rows.append(_Row(law, columns, predicted, outside,
                         metrics(columns[law.target], predicted, outside)))
    return _draw(Path(path), rows, title)


def plot_score(path: str | Path, report: ScoreReport) -> list[Path]:
    """Draw the laws of a `lawkit score` report (made with `keep_data=True`)."""
    import numpy as np

    rows = []
    for scored in report.laws:
        law = report.models[scored.name]
        columns = report.data.get(scored.name)
        if columns is None:
            columns = {c: np.zeros(0) for c in [law.target, *law.columns()]}
        predicted, outside = _predict(law, columns)
        note = f"FAIL: MAPE > {report.max_mape * 100:.1f}%" \
            if scored.status == "fail" and report.max_mape is not None else ""
        rows.append(_Row(law, columns, predicted, outside, scored.metrics, note))
    title = f"lawkit score: {report.law_file}"
    if report.captures:
        more = ", ..." if len(report.captures) > 3 else ""
        title += f" on {', '.join(report.captures[:3])}{more}"
    return _draw(Path(path), rows, title)


def plot_fit_report(path: str | Path, report: FitReport, capture_paths: Sequence[str | Path],
                    ws: Workspace, trace_map: Path | None = None) -> list[Path]:
    """Draw the laws a `lawkit fit` just wrote against the captures they were fitted on.

    The captures are read again, through lawkit.fitting.captures, for the columns the laws use
    (traces by the mapping the fit read them by: `trace_map`, else the workspace's); each law
    is drawn on the rows its where/filter selects that hold valid values (holdout included).
    """
    from lawkit.fitting.captures.chunks import ColumnSpec
    from lawkit.fitting.captures.files import find_captures
    from lawkit.fitting.captures.read import read_captures
    from lawkit.fitting.captures.tracemap import mapping_for
    from lawkit.lawfiles import lawfile
    from lawkit.lawfiles.where import law_columns

    written = lawfile.load(report.out, key=ws.digest.key, shown_as=report.out_shown)
    laws = [written.law(fitted.spec.name) for fitted in report.laws]
    numbers: dict[str, None] = {}
    labels: dict[str, None] = {}
    for law in laws:
        numbers.update(dict.fromkeys([law.target, *law.columns()]))
        labels.update(dict.fromkeys(law_columns(law.where, law.filter)))
    found = find_captures(capture_paths, shown=ws.rel)
    spec = ColumnSpec(numbers=tuple(numbers), labels=tuple(c for c in labels if c not in numbers),
                      trace=mapping_for(ws, trace_map, found))
    chunks = list(read_captures(found, spec))
    data = _concatenate([chunk.columns for chunk in chunks], spec.names())
    return plot_fit(path, [(law, data) for law in laws],
                    title=f"lawkit fit: {report.out_shown}")


def check_plot_path(path: str | Path) -> None:
    """Refuse a plot that cannot be drawn (format, folder, matplotlib) before any work is done."""
    target = Path(path)
    _format(target)
    if not target.parent.is_dir():
        raise LawkitError(f"--plot {target}: the folder {target.parent} does not exist")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise LawkitError(f"plotting needs matplotlib, an optional extra: {INSTALL}") from None


def image_size(laws: Sequence[Law]) -> tuple[int, int]:
    """The (width, height) in pixels of the first image drawn for these laws."""
    block = 1 + max((len(law.columns()) for law in laws), default=0)
    across, down = _grid(block, min(len(laws), PAGE_LAWS))
    return across * block * PANEL_PX[0], down * PANEL_PX[1]


def _grid(block: int, count: int) -> tuple[int, int]:
    """(blocks side by side, rows of blocks) for `count` laws of `block` panels each."""
    across = max(1, min(count, MAX_WIDTH_PX // (block * PANEL_PX[0])))
    return across, -(-count // across)


class _Row:
    def __init__(self, law: Law, columns: dict[str, Any], predicted: Any, outside: Any,
                 figures: Metrics, note: str = "") -> None:
        self.note = note
        self.law = law
        self.columns = columns
        self.predicted = predicted
        self.outside = outside
        self.figures = figures


def _selected(law: Law, data: Any) -> dict[str, Any]:
    """The law's columns on the rows its where/filter selects (when the data holds their
    columns) and where every one of them is a finite number."""
    import numpy as np

    from lawkit.lawfiles.where import law_columns, law_mask

    columns = _columns(law, data)
    n = len(columns[law.target])
    mask = np.ones(n, dtype=bool)
    present = [c for c in law_columns(law.where, law.filter) if has_column(data, c)]
    if (law.where or law.filter) and len(present) == len(law_columns(law.where, law.filter)):
        mask &= law_mask(law.where, law.filter, {c: _array(data, c, law) for c in present})
    for values in columns.values():
        if values.dtype.kind == "f":
            mask &= np.isfinite(values)
    return columns if mask.all() else {c: v[mask] for c, v in columns.items()}


def _concatenate(parts: list[dict[str, Any]], names: Sequence[str]) -> dict[str, Any]:
    import numpy as np

    return {c: np.concatenate([p[c] for p in parts]) if parts else np.zeros(0) for c in names}


def _columns(law: Law, data: Any) -> dict[str, Any]:
    return {c: _array(data, c, law) for c in [law.target, *law.columns()]}


def _array(data: Any, name: str, law: Law) -> Any:
    import numpy as np

    try:
        raw = data[name]
    except KeyError:
        raise LawkitError(f"plot: law {law.name!r} needs column {name!r}, which the data does "
                          "not hold") from None
    return raw.to_numpy() if hasattr(raw, "to_numpy") else np.asarray(raw)


def _predict(law: Law, columns: dict[str, Any]) -> tuple[Any, Any]:
    return law.predict(columns, on_domain="mask")


def _format(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise LawkitError(f"--plot {path}: expected a .png, .svg or .pdf file name")
    return fmt


def _pages(path: Path, count: int) -> list[Path]:
    pages = max(1, -(-count // PAGE_LAWS))
    return [path if i == 0 else path.with_name(f"{path.stem}-{i + 1}{path.suffix}")
            for i in range(pages)]


def _draw(path: Path, rows: list[_Row], title: str | None) -> list[Path]:
    fmt = _format(path)
    if not rows:
        raise LawkitError("plot: no laws to draw")
    if not path.parent.is_dir():
        raise LawkitError(f"--plot {path}: the folder {path.parent} does not exist")
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise LawkitError(f"plotting needs matplotlib, an optional extra: {INSTALL}") from None

    block = 1 + max(len(row.law.columns()) for row in rows)
    written = []
    for page, target in enumerate(_pages(path, len(rows))):
        chunk = rows[page * PAGE_LAWS:(page + 1) * PAGE_LAWS]
        across, down = _grid(block, len(chunk))
        width, height = across * block * PANEL_PX[0], down * PANEL_PX[1]
        figure = Figure(figsize=(width / DPI, height / DPI), dpi=DPI)
        FigureCanvasAgg(figure)
        # Fixed margins in pixels rather than a layout engine: the panels are all alike, and
        # constrained layout doubles the drawing time.
        top = _MARGIN["top"] + (_MARGIN["title"] if title else 0)
        grid = figure.subplots(down, across * block, squeeze=False, gridspec_kw={
            "left": _MARGIN["left"] / width, "right": 1 - _MARGIN["right"] / width,
            "bottom": _MARGIN["bottom"] / height, "top": 1 - top / height,
            "wspace": _MARGIN["between_x"] / (PANEL_PX[0] - _MARGIN["between_x"]),
            "hspace": _MARGIN["between_y"] / (PANEL_PX[1] - _MARGIN["between_y"])})
        for i, row in enumerate(chunk):
            _draw_law(row, grid[i // across][(i % across) * block:(i % across + 1) * block])
        for i in range(len(chunk), across * down):  # the rest of the last row of blocks
            for ax in grid[i // across][(i % across) * block:(i % across + 1) * block]:
                ax.set_axis_off()
        if title:
            pages = f" ({page + 1}/{len(_pages(path, len(rows)))})" if len(rows) > PAGE_LAWS \
                else ""
            figure.suptitle(title + pages, fontsize=9, y=1 - 8 / height, va="top")
        try:
            figure.savefig(target, format=fmt, dpi=DPI)
        except OSError as exc:
            raise LawkitError(f"cannot write the plot: {exc.strerror}", path=str(target)) from None
        written.append(target)
    return written


def _draw_law(row: _Row, axes: Any) -> None:
    import numpy as np

    law, figures = row.law, row.figures
    measured = np.asarray(row.columns[law.target], dtype=np.float64)
    predicted = np.asarray(row.predicted, dtype=np.float64)
    outside = np.asarray(row.outside, dtype=bool)
    first = axes[0]
    first.set_title(_title(law, figures, row.note), fontsize=8, loc="left",
                    color="tab:red" if row.note else "black")
    for extra in axes[1 + len(law.columns()):]:
        extra.set_axis_off()
    if measured.size == 0:
        first.text(0.5, 0.5, "no matching rows: not scored", ha="center", va="center",
                   transform=first.transAxes, fontsize=9)
        first.set_xticks([])
        first.set_yticks([])
        for ax in axes[1:1 + len(law.columns())]:
            ax.set_axis_off()
        return
    shown = _sample(measured.size)
    inside = ~outside[shown]
    scale, unit = _unit(measured, law.target)
    _scatter(first, measured[shown] * scale, predicted[shown] * scale, inside)
    down = downweighted(law, measured, predicted) & ~outside
    if down.any():
        _ring(first, measured[shown] * scale, predicted[shown] * scale, down[shown])
    low = float(min(measured.min(), predicted.min())) * scale
    high = float(max(measured.max(), predicted.max())) * scale
    pad = (high - low) * 0.05 or abs(high) * 0.05 or 1.0
    first.plot([low - pad, high + pad], [low - pad, high + pad], color="0.4", linewidth=0.8,
               linestyle="--", label="predicted = measured")
    first.set_xlim(low - pad, high + pad)
    first.set_ylim(low - pad, high + pad)
    first.set_xlabel(f"measured {law.target}{unit}", fontsize=8)
    first.set_ylabel(f"predicted {law.target}{unit}", fontsize=8)
    _ticks(first.xaxis)
    _ticks(first.yaxis)
    first.tick_params(labelsize=7)
    if outside.any() or down.any():
        first.legend(fontsize=6, loc="upper left")
    with np.errstate(divide="ignore", invalid="ignore"):
        residual = np.where(measured != 0, (measured - predicted) / np.abs(measured) * 100, np.nan)
    for ax, feature in zip(axes[1:], law.columns(), strict=False):
        values = np.asarray(row.columns[feature], dtype=np.float64)
        values = np.broadcast_to(values, measured.shape)
        scale, unit = _unit(values, feature)
        _scatter(ax, values[shown] * scale, residual[shown], inside)
        if down.any():
            _ring(ax, values[shown] * scale, residual[shown], down[shown])
        ax.axhline(0.0, color="0.4", linewidth=0.8, linestyle="--")
        ax.set_xlabel(f"{feature}{unit}", fontsize=8)
        _ticks(ax.xaxis)
        ax.set_ylabel(RESIDUAL_LABEL, fontsize=7)
        ax.set_title(f"residual vs {feature}\n+: predicts too little, -: too much", fontsize=7,
                     loc="left")
        ax.tick_params(labelsize=7)


def _ticks(axis: Any) -> None:
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins=5))


def _unit(values: Any, column: str) -> tuple[float, str]:
    """A column in seconds (`*_s`, as targets are) is drawn in s, ms or us, as its size says."""
    import numpy as np

    if not column.endswith("_s") or values.size == 0:
        return 1.0, ""
    largest = float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else 0.0
    if largest >= 1.0:
        return 1.0, " (s)"
    return (1e3, " (ms)") if largest >= 1e-3 else (1e6, " (µs)")


def _scatter(ax: Any, x: Any, y: Any, inside: Any) -> None:
    ax.scatter(x[inside], y[inside], s=10, alpha=0.7, color="tab:blue", linewidths=0,
               label="in domain")
    if not inside.all():
        ax.scatter(x[~inside], y[~inside], s=14, alpha=0.9, color="tab:orange", marker="x",
                   linewidths=1, label="outside domain")


def downweighted(law: Law, measured: Any, predicted: Any) -> Any:
    """The rows a huber or robust law's fit gave a final weight below 0.5, recomputed from its
    stored coefficients and scale (the weights of `lawkit.fitting.methods.Weights`); none for
    other methods."""
    import numpy as np

    from lawkit.fitting.robust import BIWEIGHT_C, HUBER_C

    stats = law.fit or {}
    scale = stats.get("scale")
    low = np.zeros(np.shape(measured), dtype=bool)
    if not isinstance(scale, (int, float)) or scale <= 0:
        return low
    with np.errstate(invalid="ignore"):
        r = np.abs(np.asarray(measured, dtype=np.float64) - np.asarray(predicted, dtype=np.float64))
        if stats.get("method") == "robust":
            u = r / (BIWEIGHT_C * scale)
            return np.asarray(np.where(u < 1.0, (1.0 - u * u) ** 2, 0.0) < 0.5, dtype=bool)
        if stats.get("method") == "huber":
            return np.asarray(r > 2.0 * HUBER_C * scale, dtype=bool)  # c·scale/|r| < 0.5
    return low


def _ring(ax: Any, x: Any, y: Any, down: Any) -> None:
    ax.scatter(x[down], y[down], s=40, facecolors="none", edgecolors="tab:red", linewidths=0.9,
               label="downweighted (weight < 0.5)")


def _sample(n: int) -> Any:
    """At most MAX_POINTS row indices, the same ones for every panel of a law."""
    import numpy as np

    if n <= MAX_POINTS:
        return np.arange(n)
    return np.sort(np.random.default_rng(0).choice(n, MAX_POINTS, replace=False))


def _title(law: Law, figures: Metrics, note: str = "") -> str:
    def pct(value: float | None, signed: bool = False) -> str:
        return "-" if value is None else f"{value * 100:{'+' if signed else ''}.1f}%"

    parts = [f"n={figures.n}", f"MAPE {pct(figures.mape)}", f"bias {pct(figures.bias, True)}",
             f"R² {'-' if figures.r2 is None else f'{figures.r2:.4f}'}"]
    if figures.outside_domain:
        parts.append(f"outside {pct(figures.outside_domain)}")
    name = law.name if len(law.name) <= 60 else law.name[:57] + "..."
    # the verdict on a line of its own: appended to the figures it ran into the next panel
    return "\n".join([name, "  ".join(parts), *([note] if note else [])])
