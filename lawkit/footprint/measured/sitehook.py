"""The start-up hook of every Python process `footprint record` measures: it is copied as
``sitecustomize.py`` into a temp folder put on ``PYTHONPATH``, and imports the rest of
`lawkit.footprint.measured` from lawkit, which must be importable there.

In each process, `install` decides whether it is the main process (the one whose parent is
`record` itself: it starts in ``startup``; any other in ``steps``), makes the process object
(`process.MeasuredProcess`), which announces the process, starts the recorder and saves at the
end, then runs the ``sitecustomize`` this one hides, if there is one. Where lawkit cannot be
imported it only announces the process with the reason, which `record` refuses.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections.abc import Mapping

DIR_ENV = "LAWKIT_FOOTPRINT_DIR"
PARENT_ENV = "LAWKIT_FOOTPRINT_PARENT"
SPAWNER_ENV = "LAWKIT_FOOTPRINT_SPAWNER"
ROOTS_ENV = "LAWKIT_FOOTPRINT_ROOTS"
NAMES_ENV = "LAWKIT_FOOTPRINT_NAMES"
COVERAGE_ENV = "LAWKIT_FOOTPRINT_COVERAGE"
"""The coverage rcfile (Python 3.11); not COVERAGE_PROCESS_START, which would start
coverage.py from its .pth file in every process, 3.12+ ones too."""
LOG_ENV = "LAWKIT_SYSMON_LOG"
"""A folder: each measured process on 3.12+ writes there a log of every monitoring call its
recorder makes (`trace`), one file per process."""


def needed_env(environ: Mapping[str, str]) -> dict[str, str]:
    """The recording's variables in ``environ``: what a Python child must inherit to be
    measured (`ChildWatch` checks that a child's environment keeps them)."""
    return {k: environ[k] for k in (DIR_ENV, PARENT_ENV, COVERAGE_ENV) if k in environ}


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
    # The main process: `record`'s own child. An orphan `record` reaps (a worker COMMAND left
    # behind) has `record` as its parent too, but another measured process started it
    # (SPAWNER_ENV names it); the main process after an exec keeps its pid, so it names itself.
    spawner = os.environ.get(SPAWNER_ENV)
    main = (os.environ.get(PARENT_ENV) == str(os.getppid())
            and (spawner is None or spawner.partition("-")[0] == str(os.getpid())))
    try:
        from lawkit.footprint.measured.process import MeasuredProcess
    except Exception as exc:
        announce(folder, main=main, how="start",
                 error=f"lawkit cannot be imported ({type(exc).__name__}: {exc})")
        return
    MeasuredProcess(folder, main=main, hook=sys.modules[__name__],
                    site=os.path.dirname(os.path.abspath(__file__)), roots=_listed(ROOTS_ENV),
                    names=_listed(NAMES_ENV), needed=needed_env(os.environ),
                    coverage_rc=os.environ.get(COVERAGE_ENV),
                    log=os.environ.get(LOG_ENV)).install()


def _listed(name: str) -> tuple[str, ...]:
    return tuple(r for r in os.environ.get(name, "").split(os.pathsep) if r)


def ping() -> int:
    """Run one measured line (this file is in coverage.py's sources), so that every process
    coverage.py measures leaves a data file."""
    return 1


def announce(folder: str, *, main: bool, how: str, error: str | None = None) -> str:
    """Announce this process: ``markers/<pid>-<random>.json``, which its children name; the
    marker's path without its extension."""
    pid = os.getpid()
    ident = f"{pid}-{secrets.token_hex(4)}"
    doc = {"id": ident, "pid": pid, "ppid": os.getppid(), "main": main, "how": how,
           "spawner": os.environ.get(SPAWNER_ENV), "error": error,
           "argv": list(getattr(sys, "orig_argv", sys.argv))}
    marker = os.path.join(folder, "markers", ident)
    write_json(marker + ".json", doc)
    os.environ[SPAWNER_ENV] = ident
    return marker


def write_json(path: str, doc: object) -> None:
    """Write ``doc`` to ``path`` whole (through a temp file), as `record` reads it."""
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        json.dump(doc, f)
    os.replace(path + ".tmp", path)


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
