"""The start-up hook of every Python process `footprint record` measures (it is copied as
``sitecustomize.py`` into a temp folder put on ``PYTHONPATH``, and imports the recorder from
lawkit, which must be importable there).

In each process it writes a marker naming the process and the process that started it (so that
`record` knows every process it measured, and every Python child each one started), starts the
recorder (``sys.monitoring`` on Python 3.12+, coverage.py from the generated rcfile on 3.11),
adds the audit hook that notes Python children, and sets the phase: ``startup`` in the main
process (the one whose parent is `record` itself), ``steps`` in any other. In a forked child (a
``multiprocessing`` worker) it writes the child's marker and the recorder starts over in
``steps`` with no region open. At exit, on SIGTERM, on ``os._exit`` and before an exec it
writes ``<marker>.done``: what ran, the Python children, the modules loaded from the engine's
folders, and any call that turned the recorder off. Its SIGTERM handler is watched by a
thread (``lawkit-sigterm``) woken through the wakeup fd, so that a signal the main thread would
never handle still ends the process (`_watch_sigterm`); ``signal.set_wakeup_fd`` is wrapped so
that a program's reset (-1) puts the watch back. Then it runs the ``sitecustomize`` this one
hides, if there is one.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import signal
import sys
import threading
import time
from collections.abc import Mapping
from types import FrameType
from typing import Any, NoReturn

DIR_ENV = "LAWKIT_FOOTPRINT_DIR"
PARENT_ENV = "LAWKIT_FOOTPRINT_PARENT"
SPAWNER_ENV = "LAWKIT_FOOTPRINT_SPAWNER"
ROOTS_ENV = "LAWKIT_FOOTPRINT_ROOTS"
NAMES_ENV = "LAWKIT_FOOTPRINT_NAMES"
COVERAGE_ENV = "LAWKIT_FOOTPRINT_COVERAGE"
"""The coverage rcfile (Python 3.11); not COVERAGE_PROCESS_START, which would start
coverage.py from its .pth file in every process, 3.12+ ones too."""


def needed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The recording's variables in ``environ``: what a Python child must inherit to be
    measured (`ChildWatch` checks that a child's environment keeps them)."""
    return {k: environ[k] for k in (DIR_ENV, PARENT_ENV, COVERAGE_ENV) if k in environ}

_real_exit = os._exit
_real_set_wakeup_fd = signal.set_wakeup_fd
_marker = ""  # this process's marker, without its extension
# Imported at start-up, never later: a forked child, a SIGTERM handler or an exit must not
# import (a module lock another thread held at fork time is held in the child for ever).
_markers: Any = None  # lawkit.footprint
_loaded_modules: Any = None  # lawkit.footprint.loaded.loaded_modules
_recorder: Any = None
_children: Any = None
_saving = False
_wakeup: tuple[int, int] | None = None  # the pipe SIGTERM's arrival is written to
KICK_S = 0.05
"""How long the watch waits for the main thread to run the SIGTERM handler before it signals
that thread again (`_watch_sigterm`)."""


def _ping() -> int:
    """Run one measured line, so that every process coverage.py measures leaves a data file."""
    return 1


def _write_marker(folder: str, *, main: bool, how: str, error: str | None = None) -> None:
    """Announce this process: ``markers/<pid>-<random>.json``; its children name it."""
    global _marker
    pid = os.getpid()
    ident = f"{pid}-{secrets.token_hex(4)}"
    doc = {"id": ident, "pid": pid, "ppid": os.getppid(), "main": main, "how": how,
           "spawner": os.environ.get(SPAWNER_ENV), "error": error,
           "argv": list(getattr(sys, "orig_argv", sys.argv))}
    _marker = os.path.join(folder, "markers", ident)
    _write_json(_marker + ".json", doc)
    os.environ[SPAWNER_ENV] = ident


def _write_json(path: str, doc: object) -> None:
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.replace(path + ".tmp", path)


def _roots() -> list[str]:
    return [r for r in os.environ.get(ROOTS_ENV, "").split(os.pathsep) if r]


def _write_done() -> None:
    """Say what this process ran, and that it is saved: ``markers/<pid>-<random>.done``."""
    names = [n for n in os.environ.get(NAMES_ENV, "").split(os.pathsep) if n]
    _write_json(_marker + ".done", {
        "recorder": _recorder.name, "runs": _recorder.runs(),
        "children": _children.children if _children is not None else [],
        "turned_off": _recorder.turned_off, "regions": sorted(_recorder.regions),
        "modules": _loaded_modules(_roots(), names)})


def _current_coverage() -> Any:
    coverage = sys.modules.get("coverage")
    return coverage.Coverage.current() if coverage is not None else None


def _save_current() -> None:
    """Save this process's measurement, with SIGTERM held off until the end.

    A pool terminates its workers with SIGTERM while they may be saving on their way out; a
    save cut short leaves no data, so SIGTERM stays blocked from here on (the process is
    ending) and a second one waits for the first save.
    """
    global _saving
    if _saving or not _marker or _recorder is None:
        return
    _saving = True
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        if _recorder.name == "coverage":
            cov = _current_coverage()
            cov.stop()
            cov.save()
        _write_done()
    except Exception as exc:  # never mask the process's own exit
        sys.stderr.write(f"lawkit footprint: cannot save what this process ran: {exc}\n")


def _exec_saving(real: Any) -> Any:
    """An ``os.execv``/``os.execve`` that saves this image's data before it is replaced."""

    def exec_saving(path: Any, argv: Any, *env: Any) -> Any:
        global _saving
        # The audit event comes once this image's data is saved: note the new image first.
        noted = _children.exec(path, argv, env[0] if env else None)
        _save_current()
        try:
            return real(path, argv, *env)
        except OSError:
            # The exec failed and this image goes on: measure it again, and save at its end.
            _children.forget(noted)
            _saving = False
            if _recorder.name == "coverage":
                _current_coverage().start()
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
    """Save on SIGTERM with this hook's handler (coverage's would chain, in a forked child, to
    the parent's instance, and it does not hold off a second SIGTERM), watched so that it runs
    (`_watch_sigterm`)."""
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
        signal.signal(signal.SIGTERM, _on_sigterm)
        _watch_sigterm()


def _watch_sigterm() -> None:
    """Make sure the SIGTERM handler runs once a SIGTERM has come.

    CPython runs a Python signal handler in the main thread, between bytecodes. A SIGTERM that
    another thread's C handler takes, or that lands just before the main thread blocks, is not
    seen by a main thread waiting on a lock that does not wake for a signal already handled (a
    pool worker idle on its queue's lock: `sem_wait`); with the handler in place the process
    then never ends, and ``Pool.terminate()`` waits for it for ever. The C handler writes the
    signal's number to the wakeup fd whichever thread takes it: a daemon thread reading it
    signals the main thread again until the handler runs (and saves, then ends the process).
    A wakeup fd the program sets (asyncio's signal handlers, a forkserver) stands while it is
    set: the watch is back once the program resets it (`_set_wakeup_fd`), as a forkserver's
    worker does right after the fork.
    """
    global _wakeup
    previous = _wakeup
    read, write = os.pipe()
    os.set_blocking(write, False)
    try:
        old = _real_set_wakeup_fd(write, warn_on_full_buffer=False)
    except ValueError:  # not the main thread
        _close(read, write)
        return
    if previous is not None:  # a forked child: the parent's pipe is the parent's
        _close(*previous)
    if old not in (-1, previous[1] if previous is not None else -1):
        _real_set_wakeup_fd(old)  # the program's own: it stands until the program resets it
    _wakeup = read, write
    main = threading.get_ident()
    threading.Thread(target=_kick_on_sigterm, args=(read, main), name="lawkit-sigterm",
                     daemon=True).start()


def _set_wakeup_fd(fd: int, /, *, warn_on_full_buffer: bool = True) -> int:
    """``signal.set_wakeup_fd`` as the program calls it: a reset (-1) puts back the SIGTERM
    watch's pipe (`_watch_sigterm`); any other fd is set as asked."""
    if fd == -1 and _wakeup is not None:
        old = _real_set_wakeup_fd(_wakeup[1], warn_on_full_buffer=False)
        return -1 if old == _wakeup[1] else old
    return _real_set_wakeup_fd(fd, warn_on_full_buffer=warn_on_full_buffer)


def _close(*fds: int) -> None:
    for fd in fds:
        os.close(fd)


def _kick_on_sigterm(read: int, main: int) -> None:
    while True:
        try:
            got = os.read(read, 64)
        except OSError:
            return
        if not got:
            return
        if signal.SIGTERM not in got:
            continue
        # The handler is the main thread's to run: give it a moment, then signal that thread
        # again (a signal to the thread interrupts its wait), until it has started saving.
        while not _saving and signal.getsignal(signal.SIGTERM) is _on_sigterm:
            time.sleep(KICK_S)
            if _saving or signal.getsignal(signal.SIGTERM) is not _on_sigterm:
                break
            try:
                signal.pthread_kill(main, signal.SIGTERM)
            except (OSError, ValueError):
                return


_mask_before_fork: set[int | signal.Signals] = set()


def _before_fork() -> None:
    # SIGTERM waits until the child has its marker, its own measurement and this hook's handler:
    # a pool may terminate a worker it has only just forked.
    global _mask_before_fork
    _mask_before_fork = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})


def _after_fork_in_parent() -> None:
    signal.pthread_sigmask(signal.SIG_SETMASK, _mask_before_fork)


def _after_fork(folder: str) -> None:
    # With coverage.py, its own fork patch (registered before this hook, so run first) has
    # started a fresh measurement with this child's data file.
    global _saving
    _saving = False
    try:
        _write_marker(folder, main=False, how="fork")
        _set_phase("steps")
        _recorder.forked()
        _children.children = []  # the parent's children are the parent's
        if _recorder.name == "coverage":
            _ping()
        _take_sigterm()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, _mask_before_fork)


def _set_phase(name: str) -> None:
    _markers._phase = name


def _start_recorder(phase: str) -> Any:
    if sys.version_info >= (3, 12):
        from lawkit.footprint.sysmon import SysMonRecorder

        recorder: Any = SysMonRecorder(tuple(_roots()), phase)
    else:
        import coverage

        from lawkit.footprint.cover import CoverageRecorder

        os.environ["COVERAGE_PROCESS_START"] = os.environ[COVERAGE_ENV]
        try:
            cov = coverage.process_startup() or coverage.Coverage.current()
        finally:
            del os.environ["COVERAGE_PROCESS_START"]
        if cov is None:
            raise RuntimeError("coverage did not start (COVERAGE_PROCESS_START is unset)")
        recorder = CoverageRecorder(cov, phase, tuple(_roots()))
    recorder.start()
    if recorder.name == "coverage":
        _ping()
    return recorder


def _start(folder: str) -> None:
    # A pool may terminate a spawned worker still starting up: SIGTERM waits until the marker
    # written here has the handler that saves its data.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        _start_blocked(folder)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _start_blocked(folder: str) -> None:
    global _recorder, _children
    main = os.environ.get(PARENT_ENV) == str(os.getppid())
    phase = "startup" if main else "steps"
    global _markers, _loaded_modules
    try:
        import lawkit.footprint
        from lawkit.footprint.audit import ChildWatch
        from lawkit.footprint.loaded import loaded_modules

        _markers, _loaded_modules = lawkit.footprint, loaded_modules

        needed = needed_env(os.environ)
        site = os.path.dirname(os.path.abspath(__file__))
        _write_marker(folder, main=main, how="start")
        _recorder = _start_recorder(phase)
        _children = ChildWatch(needed, site, getattr(_recorder, "executing", None),
                               getattr(_recorder, "thread_started", None))
    except Exception as exc:
        if _marker:
            os.unlink(_marker + ".json")
        _write_marker(folder, main=main, how="start",
                      error=f"the recorder did not start ({type(exc).__name__}: {exc})")
        return
    _set_phase(phase)
    lawkit.footprint._recorder = _recorder
    _children.install()
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent,
                        after_in_child=lambda: _after_fork(folder))
    os._exit = _exit_saving
    signal.set_wakeup_fd = _set_wakeup_fd
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
