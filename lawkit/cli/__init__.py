"""The `lawkit` command line: one module per command, each a thin layer over the library.

May import: anything of `lawkit` and typer, the one folder that imports typer; nothing imports
it but `lawkit.__main__`.
"""

from __future__ import annotations

from lawkit.cli import check, digest, env, fit, footprint, init, rekey, review, schema, score, show  # noqa: F401  (each module registers its command)
from lawkit.cli.app import app


def main() -> None:
    """The `lawkit` console script."""
    app()
