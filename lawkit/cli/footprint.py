"""`lawkit footprint record`, `overhead` and `diff`: which engine code ran, what recording it
costs, and what a change touches (docs/footprints.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from lawkit.cli.app import (
    ConfigOption,
    EngineOption,
    EnvOption,
    FormatOption,
    JsonOption,
    QuietOption,
    WholeSummaries,
    app,
    print_json,
    run,
    wants_json,
)

if TYPE_CHECKING:
    from lawkit.footprint.cost import RecordCost

footprint_app = typer.Typer(
    cls=WholeSummaries,
    name="footprint",
    help="Record which engine code runs, and compare a change with that record.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(footprint_app)


@footprint_app.command()
def record(
    command: Annotated[list[str], typer.Argument(
        help="The command to measure, after `--` (say: -- python run_captures.py).",
        show_default=False)],
    out: Annotated[Path, typer.Option(
        "--out", help="The footprint file to write (gzip when it ends in .gz).",
        show_default=False)],
    engine: EngineOption = None,
    format: FormatOption = None,
    json: JsonOption = False,
    quiet: QuietOption = False,
    config: ConfigOption = None,
) -> None:
    """Run COMMAND with every Python process it starts measured (sys.monitoring on Python
    3.12+, coverage.py on 3.11), and write which units of the hashed engine files ran, at
    start-up or in steps, and in which regions.

    The main process starts in the `startup` phase; `lawkit.footprint.phase("steps")` switches
    it, and `lawkit.footprint.region(name)` (or `lawkit.capture`) marks the regions of a step;
    every other process counts as `steps`. It then reports its own cost: per region, the
    recorder's callbacks in steps and the threads that kept code armed, estimated against the
    region's time in the captures the run wrote under the working directory, with a warning
    naming the cause and the remedy past 5%. Exit 0 when written; 2, writing nothing, when a
    process left no data or could not be measured, COMMAND failed, nothing hashed ran, or code
    that is not a hashed file ran from the engine's folders.
    """
    json = wants_json(json, format)

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.footprint.cost import record_cost
        from lawkit.footprint.record import record_footprint
        from lawkit.footprint.runcaptures import RunCaptures, region_seconds

        ws = load_workspace(config=config, engine=engine)
        captures = RunCaptures.before(Path.cwd())
        report = record_footprint(ws, command, out.absolute())
        cost = record_cost(report.events, report.armed_threads,
                           region_seconds(captures.column_times()))
        if json:
            print_json({**report.to_json(), "cost": cost.to_json()})
        _echo_with_cost("record", report.lines(), cost, quiet=quiet or json)
        return 0

    run(body)


@footprint_app.command()
def overhead(
    command: Annotated[list[str], typer.Argument(
        help="The capture harness to measure, after `--` (say: -- python run_captures.py); "
        "it writes its captures with lawkit.capture under the working directory.",
        show_default=False)],
    runs: Annotated[int, typer.Option(
        "--runs", help="Recorded runs, each between two bare ones.")] = 5,
    engine: EngineOption = None,
    quiet: QuietOption = False,
    config: ConfigOption = None,
) -> None:
    """Measure what recording costs each region of a capture harness: recorded/bare, with the
    A/A beside it.

    COMMAND runs bare and under `footprint record` in turn; each region's times are read from
    the captures each run wrote, and bare/bare (the A/A) is the machine's noise. The runs
    alternate, bare first and last; per region, the median over runs of each recorded
    run's median step time against the bare runs either side of it. The captures are put back
    as they were after every run. It also prints the recorder's own estimate of its cost, and
    its warning past 5%. Exit 0 when measured; 2 when a run failed or wrote no captures.
    """

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.footprint.overhead import measure_overhead

        ws = load_workspace(config=config, engine=engine)
        report = measure_overhead(ws, command, runs)
        _echo_with_cost("overhead", report.lines(), report.cost, quiet=quiet)
        return 0

    run(body)


def _echo_with_cost(command: str, lines: list[str], cost: RecordCost, *, quiet: bool) -> None:
    """A report's lines and the recorder's cost estimate (unless quiet), and the estimate's
    warning on stderr."""
    if not quiet:
        for line in [*lines, *cost.lines()]:
            typer.echo(line)
    warning = cost.warning()
    if warning:
        typer.echo(f"lawkit footprint {command}: {warning}", err=True)


@footprint_app.command()
def diff(
    footprint: Annotated[Path, typer.Argument(
        help="A footprint file written by `lawkit footprint record`.", show_default=False)],
    rev: Annotated[str | None, typer.Option(
        "--rev", help="Compare with the engine at this git revision, from git objects "
        "(default: the work tree).", show_default=False)] = None,
    env: EnvOption = None,
    engine: EngineOption = None,
    format: FormatOption = None,
    json: JsonOption = False,
    quiet: QuietOption = False,
    config: ConfigOption = None,
) -> None:
    """Compare a footprint with the engine, unit by unit, and print the verdict: untouched
    (only code that never ran changed), startup, or steps; and each region's verdict.

    A footprint that recorded its environment is compared with --env (or [tool.lawkit]
    environment): a distribution that ran and differs counts like a changed unit, in the
    regions it ran in; a Python that differs counts as steps for every law.

    Exit 0 for untouched, 1 for startup or steps, 2 on bad input.
    """
    json = wants_json(json, format)

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.footprint.document import read_footprint
        from lawkit.footprint.envverdict import compare_env, env_spec, not_recorded_line
        from lawkit.footprint.lawverdict import EnvComparison
        from lawkit.footprint.regions import region_verdicts
        from lawkit.footprint.verdict import diff_rev, diff_work_tree

        ws = load_workspace(config=config, engine=engine)
        fp = read_footprint(footprint, shown=str(footprint), root=ws.root)
        report = diff_rev(ws, fp, rev) if rev else diff_work_tree(ws, fp)
        missing = None
        if fp.environment is not None:
            report = report.with_env(compare_env(fp.environment, env_spec(ws, env),
                                                 configuration=fp.configuration,
                                                 file_schema=fp.file_schema))
        elif env or ws.environment or ws.python:  # a target named, nothing recorded to compare
            missing = not_recorded_line(env_spec(ws, env), str(footprint))
        regions = region_verdicts(fp, report)
        if json:
            unseen = {"environment": EnvComparison(None, notes=(missing,)).to_json()} \
                if missing else {}
            print_json({**report.to_json(), **unseen, "regions": regions})
        elif not (quiet and report.verdict == "untouched"):
            lines = report.lines()
            if regions:
                lines.insert(1, "regions: " + ", ".join(f"{name} {verdict}"
                                                        for name, verdict in regions.items()))
            for line in [*lines, *([missing] if missing else [])]:
                typer.echo(line)
            if report.note():
                typer.echo(f"note: {report.note()}", err=True)
            if report.env is not None and report.env.changes:
                typer.echo("note: this compares the environment the footprint recorded, not "
                           "the baselines law files accepted (rekey --accept-env): lawkit check "
                           "judges the law files", err=True)
        return 0 if report.verdict == "untouched" else 1

    run(body)
