"""`lawkit schema`: the JSON Schema of law files, for editors that validate YAML as it is typed."""

from __future__ import annotations

from lawkit.cli.app import app, print_json, run


@app.command()
def schema() -> None:
    """Print the JSON Schema of law files (save it, then point an editor at it with a
    '# yaml-language-server: $schema=FILE' first line)."""

    def body() -> int:
        from lawkit.keying.schema import law_file_schema

        print_json(law_file_schema())
        return 0

    run(body)
