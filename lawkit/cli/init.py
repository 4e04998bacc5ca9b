"""`lawkit init`: a new workspace (`lawkit.toml` and the laws folder) in this folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lawkit.cli.app import app, run


@app.command()
def init(
    engine: Annotated[Path | None, typer.Option(
        "--engine", help="The engine source root, the folder holding its packages (default: "
        "this folder).", show_default=False)] = None,
    package: Annotated[list[str] | None, typer.Option(
        "--package", help="A folder below the engine root whose code the digest hashes; "
        "repeatable. Default: the one Python package found there.", show_default=False)] = None,
    key: Annotated[str | None, typer.Option(
        "--key", help="The field of host.key the digest fills (and the captures' digest "
        "column). Default: the first package's name, lower-cased, '-' and '.' as '_'.",
        show_default=False)] = None,
) -> None:
    """Start a workspace here: write lawkit.toml (the engine's packages, the digest key) and
    create the laws folder, then print the next steps.

    Exit 0 when written; 2 when this folder has a config already (lawkit.toml, or a
    pyproject.toml with [tool.lawkit]) or a flag names no folder: then nothing is written.
    """

    def body() -> int:
        from lawkit.keying.init import init_workspace

        made = init_workspace(Path.cwd(), engine=engine, packages=tuple(package or ()), key=key)
        typer.echo("\n".join(made.lines()))
        return 0

    run(body)
