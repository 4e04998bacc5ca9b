"""`lawkit fit`: host laws from capture records, into a law file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lawkit.cli.app import (
    ConfigOption,
    EngineOption,
    FormatOption,
    JsonOption,
    QuietOption,
    app,
    fraction,
    print_json,
    run,
    wants_json,
)


@app.command()
def fit(
    captures: Annotated[list[str], typer.Argument(
        help="Capture files (CSV, JSON Lines, Parquet, or a Chrome Trace Event Format .json "
        "trace such as torch.profiler writes, read by [trace] in lawkit.toml or --trace-map; "
        "each optionally .gz), folders or globs.",
        show_default=False)],
    out: Annotated[Path, typer.Option(
        "--out", help="The law file to write (*.yaml or *.yml); an existing one keeps its "
        "other laws. Outside the laws folder, lawkit check will not read it.",
        show_default=False)],
    formula: Annotated[list[str] | None, typer.Option(
        "--formula", help="'target ~ 1 + a + b + a:b' ('- 1' or '0 +' drops the intercept); "
        "repeatable: one law each. None: refit every law of --out.", show_default=False)] = None,
    by: Annotated[str | None, typer.Option(
        "--by", help="COL[,COL]: one law per group of values, named target[v1,v2].",
        show_default=False)] = None,
    where: Annotated[str | None, typer.Option(
        "--where", help="Rows to fit: comparisons (== != < <= > >=), 'in [..]', and/or/not, "
        "e.g. 'phase == \"prefill\" and num_seqs <= 256'.", show_default=False)] = None,
    method: Annotated[str | None, typer.Option(
        "--method", help="ols, huber, robust (MM: high-breakdown start, Tukey biweight) or "
        "nnls (coefficients >= 0). Default: ols, or a refitted law's own.",
        show_default=False)] = None,
    holdout: Annotated[str | None, typer.Option(
        "--holdout", metavar="<fraction>", help="Hold out this fraction, 0.2 or 20% (whole files "
        "when there are several, else random rows with a recorded seed) and score the law on "
        "it.",
        show_default=False)] = None,
    cv: Annotated[str | None, typer.Option(
        "--cv", metavar="COL|K", help="Cross-validate each law and store fit.cv (folds, mape, "
        "worst_mape): COL leaves one value of COL out at a time; K makes K folds (whole files "
        "when there are several, else random rows, seed 0). auto K is searched again in every "
        "fold.", show_default=False)] = None,
    label: Annotated[list[str] | None, typer.Option(
        "--label", help="KEY=VALUE: what the file prices (its labels); repeatable.",
        show_default=False)] = None,
    name: Annotated[str | None, typer.Option(
        "--name", help="The law's name (one formula, no --by). Default: its target.",
        show_default=False)] = None,
    captured_on: Annotated[str | None, typer.Option(
        "--captured-on", help="DIGEST|current: the engine digest the captures ran on, when "
        "they name none: no digest column named after the workspace's key ([digest] key, "
        "'atom' by default), no lawkit.<key> Parquet metadata, no digest at the trace's "
        "[trace] digest key.",
        show_default=False)] = None,
    allow_negative: Annotated[bool, typer.Option(
        "--allow-negative", help="Accept negative targets (they are durations otherwise).",
        )] = False,
    allow_mixed_digests: Annotated[bool, typer.Option(
        "--allow-mixed-digests", help="Accept captures that ran on several digests (the key is "
        "--captured-on).")] = False,
    drop_invalid: Annotated[bool, typer.Option(
        "--drop-invalid", help="Drop rows with a missing, non-numeric, non-finite or negative "
        "value and count them, instead of stopping at the first.")] = False,
    weight: Annotated[str | None, typer.Option(
        "--weight", help="A column of row weights (rows that aggregate many steps).",
        show_default=False)] = None,
    plot: Annotated[Path | None, typer.Option(
        "--plot", help="Also draw each law's measured vs predicted values and residuals to this "
        "PNG file (needs the 'plot' extra).", show_default=False)] = None,
    dask: Annotated[str | None, typer.Option(
        "--dask", metavar="SCHEDULER_ADDRESS|local[:N]", help="Read and fold the captures on a "
        "Dask cluster (needs the 'dask' extra): one task per file or Parquet row groups. "
        "local[:N] starts N worker processes here (2).", show_default=False)] = None,
    footprint: Annotated[Path | None, typer.Option(
        "--footprint", help="The footprint of the capture runs (lawkit footprint record), "
        "recorded on the captures' digest: named with its sha256 in the fit entry, so that "
        "rekey and review can say what a later change touches.", show_default=False)] = None,
    why: Annotated[str | None, typer.Option(
        "--why", help="Why the laws of --out that this fit keeps may move to its digest: when "
        "the fit moves the file's key, they are re-keyed with this reason (a rekey entry after "
        "the fit entry, each kept law's verdict printed); without it, such a fit is refused.",
        show_default=False)] = None,
    require: Annotated[str | None, typer.Option(
        "--require", metavar="untouched|startup", help="Refuse, writing nothing, unless every "
        "kept law re-keyed has a verdict this policy passes, judged as lawkit rekey judges it "
        "(default: [rekey] require in the config).",
        show_default=False)] = None,
    trace_map: Annotated[Path | None, typer.Option(
        "--trace-map", help="A TOML file with a [trace] table: which ranges of a trace are "
        "steps (steps = [...]), their features and regions (regions = [...]). Default: [trace] in "
        "lawkit.toml.", show_default=False)] = None,
    format: FormatOption = None,
    json: JsonOption = False,
    quiet: QuietOption = False,
    engine: EngineOption = None,
    config: ConfigOption = None,
) -> None:
    """Fit host laws from capture records and write them, with statistics, domain and
    provenance, to a law file.

    Start from --formula 'T ~ 1 + batch_size + step(batch_size,auto)' --method ols --by
    model,tp, and compare forms with --cv batch_size. The law file is written where --out
    says; lawkit check reads those below the workspace's laws folder.

    A fit that keeps laws of --out and moves its key re-keys them: pass --why TEXT.

    Exit 0 when written; 2 for a bad capture, formula or flag, or a refusal: then nothing is
    written.
    """
    json = wants_json(json, format)

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.fitting import fit as lib
        from lawkit.fitting.request import build_request

        request = build_request(
            captures, out=out, formula=formula or (), by=by, labels=label, where=where,
            method=method, holdout=fraction(holdout, "--holdout"), name=name,
            captured_on=captured_on, allow_negative=allow_negative,
            allow_mixed_digests=allow_mixed_digests, drop_invalid=drop_invalid, weight=weight,
            dask=dask, cv=cv, footprint=footprint, why=why, require=require,
            trace_map=trace_map)
        ws = load_workspace(config=config, engine=engine)
        if plot is not None:
            from lawkit.fitting.plot import check_plot_path

            check_plot_path(plot)
        report = lib.run_fit(request, ws)
        if report.outside is not None and not quiet:
            typer.echo(f"lawkit: note: {report.outside}", err=True)
        if json:
            print_json(report.to_json())
        elif not quiet:
            typer.echo("\n".join(report.lines()))
        if plot is not None:
            from lawkit.fitting.plot import plot_fit_report

            for drawn in plot_fit_report(plot, report, captures, ws, trace_map):
                if not quiet:
                    typer.echo(f"lawkit: wrote {drawn}", err=True)
        return 0

    run(body)
