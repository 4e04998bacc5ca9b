"""`lawkit digest`: the engine's current digest, from the work tree or a git revision."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from lawkit.cli.app import (
    ConfigOption,
    EngineOption,
    FormatOption,
    JsonOption,
    app,
    print_json,
    run,
    wants_json,
)


@app.command()
def digest(
    engine: EngineOption = None,
    rev: Annotated[str | None, typer.Option(
        "--rev", help="Digest the engine at this git revision, from git objects (no checkout).",
        show_default=False)] = None,
    manifest: Annotated[bool, typer.Option(
        "--manifest", help="Then one '<sha256>  <relpath>' line per hashed file.")] = False,
    explain: Annotated[bool, typer.Option(
        "--explain", help="List the files that make the work tree's digest differ from "
        "HEAD's.")] = False,
    format: FormatOption = None,
    json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Print the digest of the engine source, exactly as the engine's host_key_of computes it."""
    json = wants_json(json, format)

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.errors import one_line, printable
        from lawkit.keying import digest as lib

        ws = load_workspace(config=config, engine=engine)
        report = lib.digest_report(ws, rev=rev, explain=explain)
        if json:
            print_json(report.to_json(manifest=manifest))
            return 0 if report.cannot_explain is None else 2
        typer.echo(report.digest)
        # printable: an engine file name may hold a line break or undecodable bytes
        if manifest:
            for line in report.manifest.lines():
                typer.echo(printable(line))
        if explain:
            for line in report.explanation_lines():
                typer.echo(printable(line))
        if report.cannot_explain is not None:
            sys.stdout.flush()
            typer.echo(f"lawkit: error: {one_line(report.cannot_explain)}", err=True)
            return 2
        return 0

    run(body)
