"""The debug log of the 3.12+ recorder (`Trace`): with ``LAWKIT_SYSMON_LOG=FOLDER`` set for
`lawkit footprint record`, each measured process writes ``FOLDER/sysmon-<pid>-<n>.log``, one
line per monitoring call its recorder makes (``set_events``, ``set_local_events``,
``restart_events``) and per ``DISABLE`` one of its callbacks returns, in order, with the
thread's ident: what a reported false ``untouched`` is debugged from (coverage.py's
``COVERAGE_SYSMON_LOG`` is the model). Without the variable nothing is wrapped and nothing
costs.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from types import CodeType
from typing import Any


class Trace:
    """One process's log file, and the wrappers that write to it."""

    def __init__(self, folder: str) -> None:
        self._folder = folder
        self._fd = -1
        self._opened = 0
        self._open()

    def _open(self) -> None:
        self._opened += 1
        path = os.path.join(self._folder, f"sysmon-{os.getpid()}-{self._opened}.log")
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def forked(self) -> None:
        """In a forked child: a file of the child's own (the parent's stays the parent's)."""
        os.close(self._fd)
        self._opened = 0
        self._open()

    def write(self, *words: object) -> None:
        """One line: the calling thread's ident, then ``words`` (a code object as
        ``file:line qualname``)."""
        shown = " ".join(_shown(w) for w in words)
        os.write(self._fd, f"{threading.get_ident()} {shown}\n".encode(errors="replace"))

    def calls(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` (a ``sys.monitoring`` function), each call logged first."""
        name = function.__name__

        def logged(*args: Any) -> Any:
            self.write(name, *args)
            return function(*args)

        return logged

    def callback(self, tool: int, event: str, function: Callable[..., Any],
                 disable: object) -> Callable[..., Any]:
        """``function`` (a callback of ``event``), each ``DISABLE`` it returns logged."""

        def logged(*args: Any) -> Any:
            answer = function(*args)
            if answer is disable:
                self.write("DISABLE", tool, event, args[0])
            return answer

        return logged


def _shown(word: object) -> str:
    if isinstance(word, CodeType):
        return f"{word.co_filename}:{word.co_firstlineno} {word.co_qualname}"
    return str(word)
