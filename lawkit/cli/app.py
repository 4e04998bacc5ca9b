"""The typer app, the options commands share, and the one place errors become exit codes."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from lawkit.errors import LawkitError

app = typer.Typer(
    name="lawkit",
    help="Fit, key, check and review the host laws of an inference-engine simulator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)

ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="The workspace config (lawkit.toml or pyproject.toml); "
                 "default: found by walking up from the working directory.", show_default=False),
]
EngineOption = Annotated[
    Path | None,
    typer.Option("--engine", help="The engine source root to digest (overrides "
                 "[tool.lawkit.digest] root).", show_default=False),
]
LawsOption = Annotated[
    Path | None,
    typer.Option("--laws", help="The folder of law files (overrides [tool.lawkit] laws).",
                 show_default=False),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout and nothing else there.")
]


def run(command: Callable[[], int]) -> None:
    """Run a command body: its return value is the exit code; a LawkitError prints and exits 2."""
    try:
        code = command()
    except LawkitError as exc:
        typer.echo(f"lawkit: error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        typer.echo("lawkit: interrupted", err=True)
        raise typer.Exit(130) from None
    raise typer.Exit(code)


def print_json(document: Any) -> None:
    """One JSON document on stdout."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False) + "\n")
