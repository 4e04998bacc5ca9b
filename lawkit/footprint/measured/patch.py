"""Every process-wide patch of a measured process: one small function each, each replacing
functions of the standard library for the rest of the process.

- `exit_saving`: ``os._exit`` saves what the process ran first.
- `exec_saving`: ``os.execv`` and ``os.execve`` save this image's runs before it is replaced,
  and measure on if the exec fails.
- `wakeup_fd_keeping`: ``signal.set_wakeup_fd(-1)`` puts back the SIGTERM watch's pipe.
- `trace_guarded`: ``sys.settrace``, ``sys.setprofile`` (on a profiled thread) and
  ``threading.settrace`` note a call that turns the 3.11 recorder off.
- `threads_traced`: ``_thread.start_new_thread`` (and threading's own reference to it) runs
  each new thread under the tracer and a profile hook of its own (3.11).
- `monitoring_guarded`: ``sys.monitoring``'s functions note a call that turns lawkit's tool
  off (3.12+).
- `signals_watched`: every Python signal handler, set before or after, tells the recorder
  first (3.12+).

The originals are taken when this module is imported, at the process's start-up, before any
patch.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import BuiltinFunctionType, FrameType
from typing import Any, NoReturn

real_exit = os._exit
real_set_wakeup_fd = signal.set_wakeup_fd
real_signal = signal.signal
real_getsignal = signal.getsignal
real_settrace = sys.settrace
real_setprofile = sys.setprofile
real_thread_settrace = threading.settrace

Note = Callable[[str], None]
"""Told of a call that turns the measurement off, as a message names it."""


def exit_saving(save: Callable[[], None]) -> None:
    """``os._exit`` saves first."""

    def _exit(status: int) -> NoReturn:
        save()
        real_exit(status)

    os._exit = _exit


def exec_saving(before: Callable[[Any, Any, Any], object],
                failed: Callable[[object], None]) -> None:
    """``os.execv``/``os.execve`` call ``before(path, argv, env)`` (note the new image, save
    this one's runs), then exec; if the exec fails, ``failed(what before returned)`` and the
    error is raised."""

    def saving(real: Callable[..., Any]) -> Callable[..., Any]:
        def exec_(path: Any, argv: Any, *env: Any) -> Any:
            noted = before(path, argv, env[0] if env else None)
            try:
                return real(path, argv, *env)
            except BaseException:  # no exec: an OSError, or a bad argument (ValueError)
                failed(noted)
                raise

        return exec_

    os.execv = saving(os.execv)
    os.execve = saving(os.execve)


def wakeup_fd_keeping(pipe: Callable[[], int | None]) -> None:
    """``signal.set_wakeup_fd``: a reset (-1) sets ``pipe()`` (the SIGTERM watch's write end)
    back instead, when there is one; any other fd is set as asked."""

    def set_wakeup_fd(fd: int, /, *, warn_on_full_buffer: bool = True) -> int:
        ours = pipe()
        if fd == -1 and ours is not None:
            old = real_set_wakeup_fd(ours, warn_on_full_buffer=False)
            return -1 if old == ours else old
        return real_set_wakeup_fd(fd, warn_on_full_buffer=warn_on_full_buffer)

    signal.set_wakeup_fd = set_wakeup_fd


def trace_guarded(note: Note, profiled: Callable[[], bool]) -> None:
    """``sys.settrace`` and ``threading.settrace`` from outside coverage.py and threading, and
    ``sys.setprofile`` on a thread whose profile hook is the recorder's (``profiled()``), are
    noted, then done."""

    def check(name: str, fn: Any) -> None:
        caller = sys._getframe(2).f_globals.get("__name__", "")
        if not (caller == "threading" or caller.startswith("coverage")):
            note(f"{name}({getattr(fn, '__name__', fn)!r})")

    def settrace(fn: Any) -> None:
        check("sys.settrace", fn)
        real_settrace(fn)

    def setprofile(fn: Any) -> None:
        if profiled():
            check("sys.setprofile", fn)
        real_setprofile(fn)

    def thread_settrace(fn: Any) -> None:
        check("threading.settrace", fn)
        real_thread_settrace(fn)

    sys.settrace = settrace
    sys.setprofile = setprofile
    threading.settrace = thread_settrace  # type: ignore[assignment]


def threads_traced(wrap: Callable[[Callable[..., Any], Any], Callable[..., Any]]) -> None:
    """Every thread started from Python runs ``wrap(function, tracer)(*args)`` instead of
    ``function``: ``tracer`` is the starting thread's tracer for a ``_thread`` thread (which
    coverage.py alone does not trace), None for a ``threading`` one (its bootstrap sets it)."""

    def starting(real: Callable[..., int], *, trace: bool) -> Callable[..., int]:
        def start_new_thread(function: Callable[..., Any], args: tuple[Any, ...],
                             kwargs: dict[str, Any] | None = None) -> int:
            tracer = threading.gettrace() if trace else None
            return real(wrap(function, tracer), args, kwargs or {})

        return start_new_thread

    _thread.start_new_thread = starting(_thread.start_new_thread, trace=True)
    start = getattr(threading, "_start_new_thread", None)
    if start is not None:  # what threading.Thread calls on 3.11
        setattr(threading, "_start_new_thread", starting(start, trace=False))  # noqa: B010


def monitoring_guarded(tool_id: int, note: Note) -> None:
    """``sys.monitoring``'s functions that could turn tool ``tool_id`` off note such a call,
    then do it (a call that restores the events later is refused all the same)."""
    mon: Any = getattr(sys, "monitoring")  # noqa: B009 (not in 3.11's typeshed)
    space: dict[str, Any] = {}
    exec(compile(_GUARD, UNMEASURED, "exec"), space)  # lawkit's own source
    for name in ("set_events", "set_local_events", "free_tool_id", "clear_tool_id",
                 "register_callback"):
        real = getattr(mon, name, None)
        if real is not None:
            setattr(mon, name, space["guarded"](name, real, tool_id, note))


def signals_watched(before: Callable[[FrameType | None, bool], None]) -> None:
    """Every signal handler but lawkit's own, set before this call or after it, calls
    ``before(frame, python)`` first (``python``: not a C function, which runs no Python code
    itself); ``signal.signal`` and ``signal.getsignal`` give back the handlers as they were
    set."""
    asked: dict[int, tuple[Any, Any]] = {}
    """By signal number: the handler set in its place, and the one asked for."""

    def shown(signum: int, current: Any) -> Any:
        kept = asked.get(signum)
        return kept[1] if kept is not None and kept[0] is current else current

    def watched(handler: Any) -> Any:
        if not callable(handler) or str(getattr(handler, "__module__", "")).startswith(
                "lawkit."):
            return handler
        python = not isinstance(handler, BuiltinFunctionType)

        def on_signal(signum: int, frame: FrameType | None) -> Any:
            before(frame, python)
            return handler(signum, frame)

        return on_signal

    def set_handler(signalnum: int | signal.Signals, handler: Any) -> Any:
        placed = watched(handler)
        old = shown(int(signalnum), real_signal(signalnum, placed))
        if placed is handler:
            asked.pop(int(signalnum), None)
        else:
            asked[int(signalnum)] = (placed, handler)
        return old

    def getsignal(signalnum: int | signal.Signals) -> Any:
        return shown(int(signalnum), real_getsignal(signalnum))

    for signum in signal.valid_signals():
        with contextlib.suppress(OSError, ValueError):  # not settable here
            current = real_getsignal(signum)
            if watched(current) is not current:
                set_handler(signum, current)
    signal.signal = set_handler
    signal.getsignal = getsignal


UNMEASURED = "<lawkit footprint guard>"
"""The file name of the guards of `monitoring_guarded`. Another tool on sys.monitoring calls
them, maybe from its own callback under its own lock (coverage.py's sys.monitoring core): a
guard must never be code that tool measures, or its ``PY_START`` callback takes that lock again
(a deadlock). Tools measure no code of a file named ``<...>`` (not a real file)."""
_GUARD = """
def guarded(name, real, tool_id, note):
    def call(tool, *args):
        if tool == tool_id:
            note(f"sys.monitoring.{name}({tool}, ...)")
        return real(tool, *args)

    return call
"""
