"""The typer app, the options commands share (with the conventions every command follows:
`-h`, `-V`, `--format` and `--json` as one, `-q`, `--config` on either side of the command),
and the one place errors become exit codes."""

from __future__ import annotations

import enum
import errno
import json
import math
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperGroup

from lawkit.errors import LawkitError


class WholeSummaries(TyperGroup):
    """A command group whose list of commands shows each command's first sentence whole,
    wrapped, where click cuts it at the terminal's width with `...`."""

    # Any: the context and formatter are those of the click typer vendors (typer._click),
    # whose module is private.
    def format_commands(self, ctx: Any, formatter: Any) -> None:
        """The "Commands" section: each command and its first sentence."""
        rows = [(name, command.get_short_help_str(limit=sys.maxsize))
                for name in self.list_commands(ctx)
                if (command := self.get_command(ctx, name)) is not None and not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


app = typer.Typer(
    cls=WholeSummaries,
    name="lawkit",
    help="Fit, key, check and review the host laws of an inference-engine simulator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},  # as ruff, pytest, pre-commit
)


def _config_either_side(ctx: typer.Context, value: Path | None) -> Path | None:
    """`--config FILE` given after the command, or else before it (`lawkit --config FILE
    check`): the one a command loads. Both, naming different files, is a usage error."""
    root = ctx.find_root()
    given = root.params.get("config") if root is not ctx else None
    before = Path(given) if given is not None else None  # click keeps the group's as a str
    if value is not None and before is not None and value != before:
        raise typer.BadParameter(f"given before the command as {before} and after it as {value}: "
                                 "give one", param_hint="'--config'")
    return value if value is not None else before


ConfigOption = Annotated[
    Path | None,
    typer.Option("--config", help="The workspace config (lawkit.toml or pyproject.toml); "
                 "default: found by walking up from the working directory. Also taken before "
                 "the command.", show_default=False, callback=_config_either_side),
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
CacheOption = Annotated[
    bool | None,
    typer.Option("--cache/--no-cache", help="Use (or not) the cache of what earlier runs learnt "
                 "from unchanged law files (kept outside the repository, under "
                 "$LAWKIT_CACHE_DIR or ~/.cache/lawkit); default: use it, except where the "
                 "environment says CI, since a cache restored from elsewhere is not the "
                 "checkout's own.", show_default=False),
]
EnvOption = Annotated[
    str | None,
    typer.Option("--env", metavar="current|FILE", help="The environment to compare footprints' "
                 "with: current (the Python lawkit runs in: content by unit), a manifest "
                 "written by lawkit env export (*.json: content by file) or a lock file "
                 "(pylock.toml, uv.lock, a requirements file: versions and sources only); "
                 "default: [tool.lawkit] environment, else not compared.", show_default=False),
]
JsonOption = Annotated[
    bool, typer.Option("--json", help="The same as --format json: one JSON document on stdout "
                       "and nothing else there.")
]
QuietOption = Annotated[
    bool, typer.Option("--quiet", "-q", help="Only problems: print nothing when all is good "
                       "(exit 0), and no notes on stderr; --format json prints its document "
                       "all the same.")
]


_Form = TypeVar("_Form", bound=enum.StrEnum)


class TextOrJson(enum.StrEnum):
    """The report forms of a command that has no other: a text report, or one JSON document."""

    text = "text"
    json = "json"


FormatOption = Annotated[
    TextOrJson | None, typer.Option("--format", help="text (the default) or json (the same as "
                                    "--json).", show_default=False)
]


def report_format(format: _Form | None, json: bool, default: _Form) -> _Form:
    """The form a report is printed in: `--format`'s, or json with `--json` (the same as
    `--format json`, every command taking both spellings), else `default`. `--json` with
    another `--format` is a usage error (exit 2), not a silent choice of one."""
    if json and format is not None and format.value != "json":
        raise typer.BadParameter(f"it is --format json, and --format {format.value} was given "
                                 "too: give one", param_hint="'--json'")
    return type(default)("json") if json else format or default


def wants_json(json: bool, format: TextOrJson | None) -> bool:
    """Whether a command with the forms text and json prints JSON (see `report_format`)."""
    return report_format(format, json, TextOrJson.text) is TextOrJson.json


def fraction(text: str | None, flag: str) -> float | None:
    """The value of a fraction flag (`--max-mape`, `--holdout`): `0.1`, or `10%` with the
    suffix. A plain number above 1 is refused naming both forms, so `--max-mape 10` cannot pass
    as a 1000% threshold; so is a negative or non-finite one."""
    if text is None:
        return None
    body = text.strip()
    percent = body.endswith("%")
    try:
        value = float(body.removesuffix("%").strip())
    except ValueError:
        raise LawkitError(f"{flag} {text!r}: expected a fraction (0.1) or a percentage "
                          "(10%)") from None
    if not math.isfinite(value) or value < 0:
        raise LawkitError(f"{flag} {text!r}: expected a fraction (0.1) or a percentage (10%) "
                          ">= 0")
    if percent:
        return value / 100
    if value > 1:
        raise LawkitError(f"{flag} {text}: a fraction, where 0.1 is 10%: write {value / 100:g} "
                          f"or {text}%")
    return value


INTERNAL_ERROR = 3
"""The exit code of a bug: never 1, so that a CI gate cannot take a crash for a finding."""
REPORT_TO = ("please report it to the lawkit maintainers (the issue tracker of the repository "
             "your lawkit comes from) with the command you ran and the traceback above")


def _version(value: bool) -> None:
    if value:
        from lawkit._version import __version__

        typer.echo(f"lawkit {__version__}")
        raise typer.Exit(0)


@app.callback()
def _main(
    version: Annotated[bool, typer.Option(
        "--version", "-V", help="Print lawkit's version and exit.", callback=_version,
        is_eager=True)] = False,
    config: Annotated[Path | None, typer.Option(
        "--config", help="The workspace config for the command (the same as the command's "
        "--config).", show_default=False)] = None,
) -> None:
    """Fit, key, check and review the host laws of an inference-engine simulator."""
    # `config` stays in the context's params: each command's --config reads it from there
    # (`_config_either_side`).


def run(command: Callable[[], int]) -> None:
    """Run a command body: its return value is the exit code. A LawkitError prints one line
    and exits 2; output that cannot be written is one line and exit 2 too; any other exception
    is a bug: `lawkit: internal error`, the traceback and where to report it, exit 3."""
    try:
        code = command()
    except LawkitError as exc:
        typer.echo(f"lawkit: error: {exc}", err=True)
        raise typer.Exit(exc.exit_code) from None
    except KeyboardInterrupt:
        typer.echo("lawkit: interrupted", err=True)
        raise typer.Exit(130) from None
    except OSError as exc:
        if not _is_output_error(exc):
            _internal_error()
        _drop_stdout()
        typer.echo(f"lawkit: error: cannot write the output: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    except Exception:
        _internal_error()
    try:
        sys.stdout.flush()
    except OSError as exc:
        _drop_stdout()
        typer.echo(f"lawkit: error: cannot write the output: {exc.strerror or exc}", err=True)
        raise typer.Exit(2) from None
    raise typer.Exit(code)


def _is_output_error(exc: OSError) -> bool:
    """Whether `exc` came from writing stdout (a full disk, a closed pipe), not from the work."""
    if isinstance(exc, BrokenPipeError) or exc.errno in (errno.ENOSPC, errno.EPIPE, errno.EDQUOT):
        tb = exc.__traceback__
        frames = traceback.extract_tb(tb) if tb is not None else []
        return any(f.name in ("echo", "print_json") for f in frames[-2:])
    return False


def _drop_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _internal_error() -> None:
    """Print a bug's traceback and where to report it, and exit 3."""
    sys.stderr.write("lawkit: internal error (a bug in lawkit, not in your input)\n")
    traceback.print_exc(file=sys.stderr)
    sys.stderr.write(f"lawkit: internal error: {REPORT_TO}\n")
    raise typer.Exit(INTERNAL_ERROR) from None


def print_json(document: Any) -> None:
    """One JSON document on stdout."""
    sys.stdout.write(json.dumps(document, indent=2, sort_keys=False) + "\n")
