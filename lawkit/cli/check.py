"""`lawkit check`: every law file valid, explained by its provenance, on the current digest."""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Annotated

import typer

from lawkit.cli.app import (
    CacheOption,
    ConfigOption,
    EngineOption,
    EnvOption,
    JsonOption,
    LawsOption,
    QuietOption,
    app,
    report_format,
    run,
)


class Format(enum.StrEnum):
    """How `check` prints its findings."""

    text = "text"
    json = "json"
    github = "github"


@app.command()
def check(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Law files or folders below the laws folder to check (what a pre-commit hook "
        "passes); default: every law file of the workspace.", show_default=False)] = None,
    format: Annotated[Format | None, typer.Option(
        "--format", help="text (the default): one line per problem, then the fix; json: one "
        "JSON document (the same as --json); github: workflow annotations.",
        show_default=False)] = None,
    json: JsonOption = False,
    quiet: QuietOption = False,
    env: EnvOption = None,
    engine: EngineOption = None,
    laws: LawsOption = None,
    config: ConfigOption = None,
    cache: CacheOption = None,
) -> None:
    """Check that every law file is valid, explained by its provenance, and on the current digest.

    Exit 0 when all is good, 1 when a problem was found, 2 on bad config or a path that is not
    a law file of the workspace.

    With a target environment (--env, or [tool.lawkit] environment), each law file bound to a
    footprint that recorded its environment is checked against it: every difference in a
    distribution that ran, or in the Python, that moves a law's verdict is a problem (fix: a
    refit, or lawkit rekey --accept-env --env TARGET --why TEXT when the laws still hold).
    """
    form = report_format(format, json, Format.text)

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.keying.check import check_workspace, env_target
        from lawkit.keying.checkcache import CheckCache, cache_wanted

        ws = load_workspace(config=config, engine=engine, laws=laws)
        facts = CheckCache(ws.laws) if cache_wanted(cache) else None
        report = check_workspace(ws, cache=facts, paths=paths, env=env_target(ws, env))
        if facts is not None:
            facts.save(files=None if paths else len(report.files))
        if form is Format.json:
            typer.echo(report.json_text())
        elif not (quiet and report.ok):
            lines = report.github_lines() if form is Format.github else report.text_lines()
            typer.echo("\n".join(lines))
        return 0 if report.ok else 1

    run(body)
