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
    EnvOption,
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
    why: Annotated[str | None, typer.Option(
        "--why", help="Why the engine change cannot move host time (recorded in each file); "
        "required unless --dry-run.", show_default=False)] = None,
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
    accept_env: Annotated[bool, typer.Option(
        "--accept-env", help="Accept the target environment (--env, else [tool.lawkit] "
        "environment) as the new baseline of each law file bound to a footprint whose "
        "environment differs from it: one rekey entry with an env clause, the key kept.")
    ] = False,
    env: EnvOption = None,
    target_env: Annotated[str | None, typer.Option(
        "--target-env", hidden=True, help="The same as --env.", show_default=False)] = None,
    require: Annotated[str | None, typer.Option(
        "--require", metavar="untouched|startup", help="Refuse (exit 2, nothing written) "
        "unless every law re-keyed has the verdict untouched (only code its capture runs never "
        "ran changed), or with startup, untouched or startup (code that ran only at start-up "
        "changed: you judge, with --why), naming each law that has not; default: [rekey] "
        "require in the config.", show_default=False)] = None,
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
    engine's work tree and the target environment: untouched, startup, steps or unknown. With
    no policy (--require, or [rekey] require), a re-key over a steps law prints a warning.

    Exit 0 when done (or nothing to do), 1 when a file already at the target has a problem
    check reports (a body edited by hand) or, with --adopt, a file still names another digest
    than the engine's, 2 on a refusal: then nothing at all was written.
    """
    json = wants_json(json, format)

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.errors import LawkitError
        from lawkit.keying import rekey as lib
        from lawkit.keying.check import env_target
        from lawkit.keying.checkcache import CheckCache, cache_wanted

        given = _target(env, target_env)
        if why is None and not dry_run:
            raise LawkitError("--why TEXT is required: say why the change cannot move host "
                              "time (it is recorded in each file); --dry-run shows the edit "
                              "without it")
        if adopt and (accept_env or to is not None or require is not None or given):
            raise LawkitError("--adopt vouches for laws as they are, at the digest each file "
                              "names: leave out --accept-env, --to, --require and --env (run "
                              "lawkit rekey afterwards to move the keys)")
        if accept_env and (to is not None or from_ is not None):
            raise LawkitError("--accept-env keeps each file's key: leave out --to and --from")
        ws = load_workspace(config=config, engine=engine, laws=laws)
        spec = env_target(ws, given, accept=accept_env)
        text, where = "..." if why is None else why, paths or None
        cached = CheckCache(ws.laws) if cache_wanted(cache) else None
        if adopt:
            report = lib.adopt(ws, why=text, from_=from_, dry_run=dry_run, paths=where,
                               cache=cached)
        elif accept_env:
            assert spec is not None
            report = lib.accept_env(ws, why=text, env=spec, refs=ref or [], dry_run=dry_run,
                                    paths=where, cache=cached, require=require)
        else:
            report = lib.rekey(ws, why=text, refs=ref or [], to=to, from_=from_,
                               dry_run=dry_run, paths=where, cache=cached, require=require,
                               env=spec)
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


def _target(env: str | None, alias: str | None) -> str | None:
    """The target environment of ``--env`` (or its old spelling ``--target-env``); a value
    that is an option (``--env --why TEXT``: the flag that accepted the target before) is
    refused in one line naming ``--accept-env``."""
    from lawkit.errors import LawkitError

    if env is not None and alias is not None and env != alias:
        raise LawkitError(f"--env {env} and --target-env {alias}: give one target (--env)")
    given = env if env is not None else alias
    if given is not None and given.startswith("-"):
        raise LawkitError("--env names the target environment (--env current|FILE); to accept "
                          "it as the laws' new baseline, use lawkit rekey --accept-env --why "
                          "TEXT")
    return given
