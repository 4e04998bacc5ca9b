"""`lawkit check`: every law file valid, explained by its provenance, on the current digest."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from lawkit.cli.app import CacheOption, ConfigOption, EngineOption, LawsOption, app, run


class Format(enum.StrEnum):
    """How `check` prints its findings."""

    text = "text"
    json = "json"
    github = "github"


@app.command()
def check(
    format: Annotated[Format, typer.Option(
        "--format", help="text: one line per problem, then the fix; json: one JSON document; "
        "github: workflow annotations.")] = Format.text,
    engine: EngineOption = None,
    laws: LawsOption = None,
    config: ConfigOption = None,
    cache: CacheOption = None,
) -> None:
    """Check that every law file is valid, explained by its provenance, and on the current digest.

    Exit 0 when all is good, 1 when a problem was found, 2 on bad config.
    """

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.keying.check import check_workspace
        from lawkit.keying.checkcache import CheckCache, cache_wanted

        ws = load_workspace(config=config, engine=engine, laws=laws)
        facts = CheckCache(ws.laws) if cache_wanted(cache) else None
        report = check_workspace(ws, cache=facts)
        if facts is not None:
            facts.save(files=len(report.files))
        if format is Format.json:
            typer.echo(report.json_text())
        else:
            lines = report.github_lines() if format is Format.github else report.text_lines()
            typer.echo("\n".join(lines))
        return 0 if report.ok else 1

    run(body)
