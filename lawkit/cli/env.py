"""`lawkit env export`: the environment manifest of the machine or image it runs in, a target
that footprints are compared with by file (docs/footprints.md, "The target")."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lawkit.cli.app import ConfigOption, WholeSummaries, app, run

env_app = typer.Typer(
    cls=WholeSummaries,
    name="env",
    help="Describe the environment footprints are compared with.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
)
app.add_typer(env_app)


@env_app.command("export")
def export(
    out: Annotated[Path | None, typer.Option(
        "--out", help="The manifest file to write (gzip when it ends in .gz); default: stdout.",
        show_default=False)] = None,
    config: ConfigOption = None,
) -> None:
    """Write the manifest of the environment lawkit runs in: the Python build, every installed
    distribution with its version, install kind, source and each file's sha256, and the
    configuration (each environment variable as the sha256 of its value, a secret's as
    hidden; the process settings). Run it where the engine runs (when its image is built),
    commit it, and compare footprints with it: --env FILE.json, or [tool.lawkit] environment.
    Exit 0 when written; 2 when it cannot be."""

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.footprint.manifest import export_manifest, write_manifest

        ws = load_workspace(config=config)
        write_manifest(export_manifest(shown=ws.footprint_environ), out)
        return 0

    run(body)
