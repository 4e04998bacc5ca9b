"""`lawkit score`: how well each law predicts captures it was not fitted on."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lawkit.cli.app import (
    ConfigOption,
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
def score(
    law: Annotated[Path, typer.Argument(help="The law file to score.", show_default=False)],
    captures: Annotated[list[str], typer.Argument(
        help="Capture files (CSV, JSON Lines, Parquet, or a Chrome Trace Event Format .json "
        "trace, read by [trace] in lawkit.toml or --trace-map; each optionally .gz), folders or "
        "globs.",
        show_default=False)],
    where: Annotated[str | None, typer.Option(
        "--where", help="Score only the capture rows this expression selects, e.g. "
        "\"tp == 4 and batch_size >= 64\".", show_default=False)] = None,
    max_mape: Annotated[str | None, typer.Option(
        "--max-mape", metavar="<fraction>", help="Fail (exit 1) when a law's MAPE exceeds this "
        "fraction: 0.1, or 10% (a number above 1 needs the %). Default: max_mape under [score] "
        "in lawkit.toml ([tool.lawkit.score] in pyproject.toml); with neither, no law passes "
        "or fails.", show_default=False)] = None,
    drop_invalid: Annotated[bool, typer.Option(
        "--drop-invalid", help="Drop rows with a missing, non-finite or negative value in a "
        "column a law uses, and count them, instead of stopping at the first.")] = False,
    plot: Annotated[Path | None, typer.Option(
        "--plot", help="Also draw each law's measured vs predicted values and residuals to this "
        "PNG file (needs the 'plot' extra).", show_default=False)] = None,
    trace_map: Annotated[Path | None, typer.Option(
        "--trace-map", help="A TOML file with a [trace] table: how a trace's ranges become "
        "rows (steps = [...], regions = [...]). Default: [trace] in lawkit.toml.",
        show_default=False)] = None,
    quiet: QuietOption = False,
    format: FormatOption = None,
    json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Score each law on captures: n, MAPE, median and p90 APE, bias, R^2, share outside domain.

    With a threshold (--max-mape, or [score] max_mape in the config), each law is ok or FAIL;
    without one, the table has no verdict column. Exit 0 when every scored law is within the
    threshold (or there is none), 1 when one is not (each named on its own line), 2 on bad
    input or when no law matches any capture row.
    """
    json = wants_json(json, format)

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.fitting import score as lib

        ws = load_workspace(config=config)
        report = lib.score(ws, law, captures, where=where,
                           max_mape=fraction(max_mape, "--max-mape"), drop_invalid=drop_invalid,
                           keep_data=plot is not None, quiet=quiet, trace_map=trace_map)
        if plot is not None:
            from lawkit.fitting.plot import plot_score

            written = plot_score(plot, report)
            if not quiet:
                for path in written:
                    typer.echo(f"lawkit: wrote {path}", err=True)
        if json:
            print_json(report.to_json())
        elif not (quiet and report.exit_code == 0):
            typer.echo("\n".join(report.lines()))
        return report.exit_code

    run(body)
