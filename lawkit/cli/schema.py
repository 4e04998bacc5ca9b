"""`lawkit schema [law-file|footprint]`: the JSON Schema of law files, for editors that
validate YAML as it is typed, or of footprint files (docs/footprint-file.md)."""

from __future__ import annotations

import enum
from typing import Annotated

import typer

from lawkit.cli.app import app, print_json, run


class Document(enum.StrEnum):
    """The documents `lawkit schema` describes."""

    LAW_FILE = "law-file"
    FOOTPRINT = "footprint"


@app.command()
def schema(
    document: Annotated[Document, typer.Argument(
        help="Which file's schema: law-file (the default) or footprint.")] = Document.LAW_FILE,
) -> None:
    """Print the JSON Schema of law files (save it, then point an editor at it with a
    '# yaml-language-server: $schema=FILE' first line), or of footprint files."""

    def body() -> int:
        from lawkit.keying.schema import footprint_file_schema, law_file_schema

        print_json(footprint_file_schema() if document is Document.FOOTPRINT
                   else law_file_schema())
        return 0

    run(body)
