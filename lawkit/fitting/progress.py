"""A progress bar on stderr for commands that read large captures.

    with progress(total_bytes, quiet=quiet) as advance:
        for capture in captures:
            ...                                  # read it
            advance(capture_size, capture.shown) # bytes done, and what is being read now

The bar (rich) appears only when stderr is a terminal, `quiet` is false and the total is large
enough to be worth watching (`min_total`, 32 MiB by default); otherwise `advance` does nothing
and rich is not even imported. The bar is transient: it leaves nothing behind in the terminal,
and stdout (where `--json` writes) is never touched. A description is shown as plain text, never
read as rich markup: a file or `--by` group named `host_s[decode]` would lose its `[decode]`.

A streamed fit shows `PassBar`: one bar per pass over the rows, saying which law, which pass
of how many and, for the rows of that pass, the time left. How many passes an iterative
method makes depends on when its fit stops moving, so the count is an estimate: the passes
the previous law made by the same method, else the method's own typical count
(`methods.Method.typical_passes`), and never less than the passes made so far.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

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

    bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(), DownloadColumn(),
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


class PassBar:
    """The bar of a streamed fit: a task per pass (see the module doc); silent unless `shown`.
    A context manager: the bar is drawn inside it."""

    def __init__(self, *, quiet: bool = False) -> None:
        self.enabled = shown(quiet)
        self._bar: Any = None
        self._task: Any = None
        self._law = "reading the captures"
        self._method: str | None = None
        self._expected: int | None = None
        self._made = 0
        self._typical: dict[str, int] = {}

    def __enter__(self) -> PassBar:
        if self.enabled:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._bar = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("rows"),
                                 TimeRemainingColumn(), TimeElapsedColumn(),
                                 console=Console(file=sys.stderr), transient=True)
            self._bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.__exit__(None, None, None)
            self._bar = None

    def law(self, text: str, method: str, typical: int) -> None:
        """The passes that follow fit this law by `method` (`typical` passes when nothing
        better is known)."""
        if self._method is not None and self._made:
            self._typical[self._method] = self._made  # the last law's count: the best estimate
        self._method = method
        self._law = f"{text} ({method})"
        self._expected = self._typical.get(method, typical)
        self._made = 0

    def start(self, rows: int | None) -> None:
        """A new pass over `rows` rows (None: not known yet)."""
        self._made += 1
        if self._bar is None:
            return
        if self._expected is None:
            which = f"pass {self._made}"
        else:
            which = f"pass {self._made} of about {max(self._expected, self._made)}"
        if self._task is not None:
            self._bar.remove_task(self._task)
        self._task = self._bar.add_task(f"{self._law}: {which}", total=rows)

    def advance(self, rows: int) -> None:
        """Rows of the current pass done."""
        if self._bar is not None and self._task is not None:
            self._bar.advance(self._task, rows)
