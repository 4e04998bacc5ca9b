"""lawkit's command line run in the test's own process (typer's `CliRunner`): the exit code,
stdout and stderr of one invocation, with the working directory and environment as they are."""

from __future__ import annotations

from typer.testing import CliRunner, Result

from lawkit.cli import app

_runner = CliRunner()


def invoke(*args: str) -> Result:
    """Run ``lawkit ARGS...`` in-process."""
    return _runner.invoke(app, list(args))
