"""`lawkit show`: a law file after validation."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from lawkit.cli.app import ConfigOption, FormatOption, JsonOption, app, print_json, run, wants_json


@app.command()
def show(
    law: Annotated[Path, typer.Argument(help="The law file to show.", show_default=False)],
    format: FormatOption = None,
    json: JsonOption = False,
    config: ConfigOption = None,
) -> None:
    """Validate a law file and print it (its data as JSON with --json)."""
    json = wants_json(json, format)

    def body() -> int:
        from lawkit.config import load_workspace
        from lawkit.keying import show as lib

        ws = load_workspace(config=config)
        law_file = lib.load_for_show(ws, law)
        if json:
            print_json(lib.as_json(law_file))
        else:
            typer.echo(lib.as_text(law_file, ws), nl=False)
        return 0

    run(body)
