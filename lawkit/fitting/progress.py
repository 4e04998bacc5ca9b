"""A progress bar on stderr for commands that read large captures.

    with progress(total_bytes, quiet=quiet) as advance:
        for capture in captures:
            ...                                  # read it
            advance(capture_size, capture.shown) # bytes done, and what is being read now

The bar (rich) appears only when stderr is a terminal, `quiet` is false and the total is large
enough to be worth watching (`min_total`, 32 MiB by default); otherwise `advance` does nothing
and rich is not even imported. The bar is transient: it leaves nothing behind in the terminal,
and stdout (where `--json` writes) is never touched.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Advance = Callable[..., None]
MIN_TOTAL = 32 << 20


def _nothing(done: int = 0, note: str | None = None) -> None:
    """The `advance` of a silent bar."""


def shown(quiet: bool = False) -> bool:
    """Whether a bar would be drawn: stderr is a terminal and the caller is not quiet."""
    if quiet:
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):  # replaced or closed stderr
        return False


@contextmanager
def progress(total: int, *, quiet: bool = False, description: str = "reading captures",
             min_total: int = MIN_TOTAL) -> Iterator[Advance]:
    """A bar counting `total` bytes; yields `advance(done, note=None)` (see the module doc)."""
    if total < min_total or not shown(quiet):
        yield _nothing
        return
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                   TransferSpeedColumn(), TimeRemainingColumn(),
                   console=Console(file=sys.stderr), transient=True)
    with bar:
        task = bar.add_task(description, total=total)

        def advance(done: int = 0, note: str | None = None) -> None:
            if note is None:
                bar.advance(task, done)
            else:
                bar.update(task, advance=done, description=f"{description}: {note}")

        yield advance
