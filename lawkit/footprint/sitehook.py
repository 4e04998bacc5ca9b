"""The start-up hook of every Python process `footprint record` measures (it is copied as
``sitecustomize.py`` into a temp folder put on ``PYTHONPATH``, and imports the recorder from
lawkit, which must be importable there).

In each process, `install`:

1. writes a marker naming the process and the process that started it (so that `record` knows
   every process it measured, and every Python child each one started);
2. starts the recorder (``sys.monitoring`` on Python 3.12+, coverage.py from the generated
   rcfile on 3.11) in ``startup`` in the main process (the one whose parent is `record`
   itself), in ``steps`` in any other;
3. adds the audit hook that notes Python children (`audit.ChildWatch`), and tells the recorder
   of code executed and threads started;
4. saves, at exit, on SIGTERM (`sigterm`), on ``os._exit`` and before an exec (`patch`),
   ``<marker>.done``: what ran, the Python children, the modules loaded from the engine's
   folders, and any call that turned the recorder off; for the environment, the files outside
   the hashed ones whose code ran (by context), the contexts the process was in, the shared
   objects it mapped (``/proc/self/maps``), the files of its loaded modules, its search path
   and its Python build;
5. in a forked child (a ``multiprocessing`` worker), writes the child's marker and starts the
   recorder over in ``steps`` with no region open;
6. then runs the ``sitecustomize`` this one hides, if there is one.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import sys
from collections.abc import Mapping
from typing import Any

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


# Imported at start-up, never later: a forked child, a SIGTERM handler or an exit must not
# import (a module lock another thread held at fork time is held in the child for ever).
_marker = ""  # this process's marker, without its extension
_markers: Any = None  # lawkit.footprint
_sigterm: Any = None  # lawkit.footprint.sigterm
_loaded_modules: Any = None  # lawkit.footprint.loaded.loaded_modules
_native_libraries: Any = None  # lawkit.footprint.owners.native_libraries
_python_build: Any = None  # lawkit.footprint.environment.python_build
_recorder: Any = None  # a lawkit.footprint.Recorder
_children: Any = None  # a lawkit.footprint.audit.ChildWatch
_saving = False


def install() -> None:
    """Start measuring this process when `footprint record` runs it; then chain."""
    folder = os.environ.get(DIR_ENV)
    if folder and os.path.isdir(os.path.join(folder, "markers")):
        try:
            _start(folder)
        except Exception as exc:  # a hook must never break the engine
            sys.stderr.write(f"lawkit footprint: start-up hook failed: {exc}\n")
    _chain()


def _start(folder: str) -> None:
    global _recorder, _children, _markers, _sigterm, _loaded_modules, _native_libraries
    global _python_build
    # The main process: `record`'s own child. An orphan `record` reaps (a worker COMMAND left
    # behind) has `record` as its parent too, but another measured process started it
    # (SPAWNER_ENV names it); the main process after an exec keeps its pid, so it names itself.
    spawner = os.environ.get(SPAWNER_ENV)
    main = (os.environ.get(PARENT_ENV) == str(os.getppid())
            and (spawner is None or spawner.partition("-")[0] == str(os.getpid())))
    phase = "startup" if main else "steps"
    try:
        import lawkit.footprint
        from lawkit.footprint import patch, sigterm
        from lawkit.footprint.audit import ChildWatch
        from lawkit.footprint.environment import python_build
        from lawkit.footprint.loaded import loaded_modules
        from lawkit.footprint.owners import native_libraries
    except Exception as exc:
        _write_marker(folder, main=main, how="start",
                      error=f"lawkit cannot be imported ({type(exc).__name__}: {exc})")
        return
    _markers, _sigterm, _loaded_modules = lawkit.footprint, sigterm, loaded_modules
    _native_libraries, _python_build = native_libraries, python_build
    # A pool may terminate a spawned worker still starting up: SIGTERM waits until the marker
    # written here has the handler that saves its data.
    mask = sigterm.hold()
    try:
        _write_marker(folder, main=main, how="start")
        try:
            _recorder = _new_recorder(phase)
            _recorder.start()
        except Exception as exc:
            os.unlink(_marker + ".json")
            _write_marker(folder, main=main, how="start",
                          error=f"the recorder did not start ({type(exc).__name__}: {exc})")
            return
        _ping()
        _children = ChildWatch(needed_env(os.environ),
                               os.path.dirname(os.path.abspath(__file__)), _recorder,
                               lawkit.footprint.hashed_files(tuple(_roots())))
        _markers._phase = phase
        _markers._recorder = _recorder
        _children.install()
        os.register_at_fork(before=sigterm.before_fork, after_in_parent=sigterm.after_fork,
                            after_in_child=lambda: _after_fork(folder))
        patch.exit_saving(_save)
        patch.exec_saving(_before_exec, _exec_failed)
        patch.wakeup_fd_keeping(sigterm.pipe)
        atexit.register(_save)  # runs before coverage's own (atexit is last in, first out)
        sigterm.take(_save, lambda: _saving)
    finally:
        sigterm.restore(mask)


def _new_recorder(phase: str) -> Any:
    roots = tuple(_roots())
    if sys.version_info >= (3, 12):
        from lawkit.footprint.sysmon import SysMonRecorder

        return SysMonRecorder(roots, phase)
    import coverage

    from lawkit.footprint.cover import CoverageRecorder

    os.environ["COVERAGE_PROCESS_START"] = os.environ[COVERAGE_ENV]
    try:
        cov = coverage.process_startup() or coverage.Coverage.current()
    finally:
        del os.environ["COVERAGE_PROCESS_START"]
    if cov is None:
        raise RuntimeError("coverage did not start (COVERAGE_PROCESS_START is unset)")
    return CoverageRecorder(cov, phase, roots)


def _ping() -> int:
    """Run one measured line (this file is in coverage.py's sources), so that every process
    coverage.py measures leaves a data file."""
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


def _save() -> None:
    """Save this process's measurement (``markers/<id>.done``), with SIGTERM held off until
    the end.

    A pool terminates its workers with SIGTERM while they may be saving on their way out; a
    save cut short leaves no data, so SIGTERM stays blocked from here on (the process is
    ending) and a second one waits for the first save.
    """
    global _saving
    if _saving or not _marker or _recorder is None:
        return
    _saving = True
    _sigterm.hold()
    try:
        _recorder.save()
        names = [n for n in os.environ.get(NAMES_ENV, "").split(os.pathsep) if n]
        _write_json(_marker + ".done", {
            "recorder": _recorder.name, "runs": _recorder.runs(),
            "opened": _children.opened_files(),
            "children": _children.children, "turned_off": _recorder.turned_off,
            "unseen": _recorder.unseen,
            "regions": sorted(_recorder.regions), "steps_again": _recorder.steps_again,
            "modules": _loaded_modules(_roots(), names),
            "environment": {
                "runs": _recorder.env_runs(), "everywhere": _recorder.env_everywhere,
                "contexts": sorted([p, list(r)] for p, r in _recorder.entered),
                "native": _native_libraries(), "loaded": _module_files(),
                "path": list(sys.path), "python": _python_build().to_json()}})
    except Exception as exc:  # never mask the process's own exit
        sys.stderr.write(f"lawkit footprint: cannot save what this process ran: {exc}\n")


def _module_files() -> list[str]:
    """The files of the modules loaded (what a recorder that sees no code outside the hashed
    files counts as run)."""
    found: set[str] = set()
    for module in list(sys.modules.values()):
        filename = getattr(module, "__file__", None)
        if isinstance(filename, str):
            found.add(filename)
    return sorted(found)


def _before_exec(path: Any, argv: Any, env: Any) -> int:
    # The audit event comes once this image's data is saved: note the new image first.
    noted: int = _children.exec(path, argv, env)
    _save()
    return noted


def _exec_failed(noted: object) -> None:
    """The exec failed and this image goes on: measure it again, and save at its end."""
    global _saving
    _children.forget(noted)
    _saving = False
    _recorder.resume()
    os.unlink(_marker + ".done")
    _sigterm.release()


def _after_fork(folder: str) -> None:
    # With coverage.py, its own fork patch (registered before this hook, so run first) has
    # started a fresh measurement with this child's data file.
    global _saving
    _saving = False
    try:
        _write_marker(folder, main=False, how="fork")
        _markers._phase = "steps"
        _recorder.forked()
        _children.children = []  # the parent's children are the parent's
        _ping()
        _sigterm.take(_save, lambda: _saving)
    finally:
        _sigterm.after_fork()


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


if __name__ == "sitecustomize":
    install()
