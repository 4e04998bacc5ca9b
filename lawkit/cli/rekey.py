"""`lawkit rekey`: move laws to the current digest without a refit, one provenance line each."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from lawkit.cli.app import (
    CacheOption,
    ConfigOption,
    EngineOption,
    FormatOption,
    JsonOption,
    LawsOption,
    QuietOption,
    app,
    print_json,
    run,
    wants_json,
)


@app.command()
def rekey(
    why: Annotated[str, typer.Option(
        "--why", help="Why the engine change cannot move host time (recorded in each file).",
        show_default=False)],
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Law files or folders to rekey (default: every law file of the workspace).",
        show_default=False)] = None,
    ref: Annotated[list[str] | None, typer.Option(
        "--ref", help="A reference recorded with the entry (an issue, a PR); repeatable.",
        show_default=False)] = None,
    to: Annotated[str | None, typer.Option(
        "--to", help="The digest to move to (default: the engine's current digest).",
        show_default=False)] = None,
    from_: Annotated[str | None, typer.Option(
        "--from", help="Only rekey laws that name this digest; list the others as skipped.",
        show_default=False)] = None,
    adopt: Annotated[bool, typer.Option(
        "--adopt", help="Vouch for laws as they are: append an adopt entry (with --why) to each "
        "file without provenance or whose laws were edited by hand, at the digest it names, and "
        "change nothing else. Exit 1 while a file still names another digest than the "
        "engine's: adopt, then rekey.")] = False,
    dry_run: Annotated[bool, typer.Option(
        "--dry-run", help="Print the unified diff and write nothing.")] = False,
    env: Annotated[bool, typer.Option(
        "--env", help="Accept the target environment (--target-env, else [tool.lawkit] "
        "environment) as the new baseline of each law file bound to a footprint whose "
        "environment differs from it: one rekey entry with an env clause, the key kept.")
    ] = False,
    target_env: Annotated[str | None, typer.Option(
        "--target-env", metavar="current|FILE", help="The environment footprints are compared "
        "with: current or a lock file (default: [tool.lawkit] environment).",
        show_default=False)] = None,
    require: Annotated[str | None, typer.Option(
        "--require", metavar="untouched", help="Refuse (exit 2, nothing written) unless every "
        "law re-keyed has the verdict untouched (only engine code its capture runs never ran, "
        "in its region, changed), naming each law that has not.", show_default=False)] = None,
    format: FormatOption = None,
    json: JsonOption = False,
    quiet: QuietOption = False,
    cache: CacheOption = None,
    engine: EngineOption = None,
    laws: LawsOption = None,
    config: ConfigOption = None,
) -> None:
    """Give every stale law the new key and one appended rekey entry; nothing else changes.

    Each file re-keyed that names a footprint (fit --footprint) gets its verdict against the
    engine's work tree: untouched, startup, steps or unknown.

    Exit 0 when done (or nothing to do), 1 when a file already at the target has a problem
    check reports (a body edited by hand) or, with --adopt, a file still names another digest
    than the engine's, 2 on a refusal: then nothing at all was written.
    """
    json = wants_json(json, format)

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.keying import rekey as lib
        from lawkit.keying.checkcache import CheckCache, cache_wanted

        ws = load_workspace(config=config, engine=engine, laws=laws)
        spec = None
        if target_env or ws.environment or ws.python:
            from lawkit.footprint.envverdict import env_spec

            spec = env_spec(ws, target_env)
        report = lib.rekey(ws, why=why, refs=ref or [], to=to, from_=from_, adopt=adopt,
                           dry_run=dry_run, paths=paths or None,
                           cache=CheckCache(ws.laws) if cache_wanted(cache) else None,
                           require=require, env=spec, accept_env=env)
        if json:
            print_json(report.to_json())
        elif dry_run:
            sys.stdout.write(report.diff)
            if not (quiet and report.exit_code == 0):
                typer.echo("\n".join(report.lines()), err=True)
        elif not (quiet and report.exit_code == 0):
            typer.echo("\n".join(report.lines()))
        return report.exit_code

    run(body)
