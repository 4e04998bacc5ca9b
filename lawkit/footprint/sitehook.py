"""The start-up hook of every Python process `footprint record` measures (standard library and
coverage only: it is copied as ``sitecustomize.py`` into a temp folder put on ``PYTHONPATH``).

In each process it writes a marker naming the process (so that `record` knows every process it
measured and can tell one that left no data), starts coverage.py from the generated rcfile
(``COVERAGE_PROCESS_START``), and sets the context: ``startup`` in the main process (the one
whose parent is `record` itself), ``steps`` in any other. In a forked child (a
``multiprocessing`` worker) it writes the child's marker, switches to ``steps`` and saves the
child's data on ``os._exit`` (how forked workers end) and on SIGTERM (how a pool terminates
them). Then it runs the ``sitecustomize`` this one hides, if there is one.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import signal
import sys
from types import FrameType
from typing import Any, NoReturn

DIR_ENV = "LAWKIT_FOOTPRINT_DIR"
PARENT_ENV = "LAWKIT_FOOTPRINT_PARENT"

_real_exit = os._exit


def _ping() -> int:
    """Run one measured line, so that every measuring process leaves a data file."""
    return 1


_marker = ""  # this process's marker, without its extension


def _write_marker(folder: str, *, main: bool, error: str | None = None) -> None:
    """Announce this process: ``markers/<pid>-<random>.json``."""
    global _marker
    pid = os.getpid()
    doc = {"pid": pid, "ppid": os.getppid(), "main": main, "error": error,
           "argv": list(getattr(sys, "orig_argv", sys.argv))}
    _marker = os.path.join(folder, "markers", f"{pid}-{secrets.token_hex(4)}")
    with open(_marker + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.replace(_marker + ".tmp", _marker + ".json")


def _write_done() -> None:
    """Say that this process's data is saved: ``markers/<pid>-<random>.done``."""
    if _marker:
        with open(_marker + ".done", "w", encoding="utf-8"):
            pass


def _current() -> Any:
    coverage = sys.modules.get("coverage")
    return coverage.Coverage.current() if coverage is not None else None


_saving = False


def _save_current() -> None:
    """Stop and save this process's measurement, with SIGTERM held off until the end.

    A pool terminates its workers with SIGTERM while they may be saving on their way out; a
    save cut short leaves a data file without arcs, so SIGTERM stays blocked from here on
    (the process is ending) and a second one waits for the first save.
    """
    global _saving
    if _saving:
        return
    _saving = True
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    cov = _current()
    if cov is not None:
        try:
            cov.stop()
            cov.save()
            _write_done()
        except Exception as exc:  # never mask the process's own exit
            sys.stderr.write(f"lawkit footprint: cannot save coverage data: {exc}\n")


def _exec_saving(real: Any) -> Any:
    """An ``os.execv``/``os.execve`` that saves this image's data before it is replaced."""

    def exec_saving(*args: Any, **kwargs: Any) -> Any:
        global _saving
        cov = _current()
        _save_current()
        try:
            return real(*args, **kwargs)
        except OSError:
            # The exec failed and this image goes on: measure it again, and save at its end.
            _saving = False
            if cov is not None:
                cov.start()
            if _marker:
                os.unlink(_marker + ".done")
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
            raise

    return exec_saving


def _exit_saving(status: int) -> NoReturn:
    _save_current()
    _real_exit(status)


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    if _saving:
        return  # the save under way ends the process, or the SIGTERM after it will
    _save_current()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    os.kill(os.getpid(), signal.SIGTERM)


def _take_sigterm() -> None:
    """Save on SIGTERM with this hook's handler rather than coverage's.

    In a forked child coverage's handler would chain to the parent's instance and write the
    parent's data from the child; and it does not hold off a second SIGTERM.
    """
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
        signal.signal(signal.SIGTERM, _on_sigterm)


_mask_before_fork: set[int | signal.Signals] = set()


def _before_fork() -> None:
    # SIGTERM waits until the child has its marker, its own measurement and this hook's handler:
    # a pool may terminate a worker it has only just forked.
    global _mask_before_fork
    _mask_before_fork = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})


def _after_fork_in_parent() -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, _mask_before_fork)


def _after_fork(folder: str) -> None:
    # coverage's own fork patch (registered before this hook, so run first) has stopped the
    # parent's measurement in this child and started a fresh one with this child's data file.
    global _saving
    _saving = False
    try:
        _write_marker(folder, main=False)
        cov = _current()
        if cov is not None:
            cov.switch_context("steps")
            _ping()
        _take_sigterm()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, _mask_before_fork)


def _start(folder: str) -> None:
    main = os.environ.get(PARENT_ENV) == str(os.getppid())
    try:
        import coverage
    except Exception as exc:
        _write_marker(folder, main=main, error=f"coverage.py is not importable here ({exc})")
        return
    _write_marker(folder, main=main)
    try:
        cov = coverage.process_startup() or coverage.Coverage.current()
        if cov is None:
            raise RuntimeError("coverage did not start (COVERAGE_PROCESS_START is unset)")
        cov.switch_context("startup" if main else "steps")
        _ping()
    except Exception as exc:
        _write_marker(folder, main=main, error=f"coverage.py did not start: {exc}")
        return
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=lambda: _after_fork(folder))
    os._exit = _exit_saving
    os.execv = _exec_saving(os.execv)
    os.execve = _exec_saving(os.execve)
    atexit.register(_save_current)  # runs before coverage's own (atexit is last in, first out)
    _take_sigterm()


def _chain() -> None:
    """Run the sitecustomize module this one hides on sys.path, if any."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def install() -> None:
    """Start measuring this process when `footprint record` runs it; then chain."""
    folder = os.environ.get(DIR_ENV)
    if folder and os.path.isdir(os.path.join(folder, "markers")):
        try:
            _start(folder)
        except Exception as exc:  # a hook must never break the engine
            sys.stderr.write(f"lawkit footprint: start-up hook failed: {exc}\n")
    _chain()


if __name__ == "sitecustomize":
    install()
