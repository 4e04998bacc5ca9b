"""One measured process: what the start-up hook, the SIGTERM watch and the markers keep, on one
object made at install (`MeasuredProcess`).

`MeasuredProcess.install`:

1. announces the process (a marker naming it and the process that started it, so that `record`
   knows every process it measured, and every Python child each one started);
2. starts the recorder (``sys.monitoring`` on Python 3.12+, coverage.py from the generated
   rcfile on 3.11) in ``startup`` in the main process, in ``steps`` in any other, noting the
   modules already imported before it (`before_recorder`: a ``.pth`` file's, the hook's own);
3. adds the audit hook that notes Python children (`audit.ChildWatch`), and tells the recorder
   of code executed and threads started;
4. saves, at exit, on SIGTERM (`sigterm`), on ``os._exit`` and before an exec (`patch`),
   ``<marker>.done``: what ran, the Python children, the modules loaded from the engine's
   folders, any call that turned the recorder off, the recorder's event counts, the threads
   that kept code armed and those that ran code in steps with no region open; for the
   environment, the files outside the hashed ones whose code ran (by context), the contexts
   the process was in, the shared objects it mapped, the files of its loaded modules, the
   modules imported before the recorder, its search path and its Python build (`loaded`);
5. in a forked child (a ``multiprocessing`` worker), announces the child and starts the
   recorder over in ``steps`` with no region open.

Imported at start-up, never later: a forked child, a SIGTERM handler or an exit must not import
(a module lock another thread held at fork time is held in the child for ever).
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
from typing import Any, Protocol

from lawkit.footprint.measured import loaded, patch, sigterm
from lawkit.footprint.measured.audit import ChildWatch
from lawkit.footprint.measured.configuration import ConfigurationReads
from lawkit.footprint.measured.markers import MARKERS, Markers
from lawkit.footprint.measured.recorder import Recorder, hashed_files


class Hook(Protocol):
    """What the start-up hook (``sitecustomize``, which runs before lawkit is imported) lends
    the process: announcing it, writing a document whole, and one line coverage.py measures."""

    def announce(self, folder: str, *, main: bool, how: str, error: str | None = None) -> str:
        """Write this process's marker; its path without the extension."""

    def write_json(self, path: str, doc: object) -> None:
        """Write ``doc`` to ``path`` whole."""

    def ping(self) -> int:
        """Run one line of the hook's file (coverage.py measures it)."""


class MeasuredProcess:
    """What this process keeps while `footprint record` measures it, from install to its save."""

    def __init__(self, folder: str, *, main: bool, hook: Hook, site: str,
                 roots: tuple[str, ...], names: tuple[str, ...], needed: dict[str, str],
                 coverage_rc: str | None = None, log: str | None = None,
                 markers: Markers = MARKERS) -> None:
        self.folder = folder
        self.main = main
        self.phase = "startup" if main else "steps"
        self._hook = hook
        self._site = site
        self._roots = roots
        self._names = names
        self._needed = needed
        self._coverage_rc = coverage_rc
        self._log = log
        self.markers = markers
        self.marker = ""
        """This process's marker, without its extension."""
        self.recorder: Recorder | None = None
        self.children: ChildWatch | None = None
        self.saving = False
        """A save has begun: SIGTERM stays held off until the process ends."""
        self.sigterm = sigterm.SigtermWatch(self.save, self.is_saving)
        self.configuration = ConfigurationReads(markers)
        self.before_recorder: list[str] = []
        """The modules imported before the recorder started (a ``.pth`` file's, this hook's):
        their code may have run unseen, so they count as run everywhere."""

    def install(self) -> None:
        """Announce this process, start its recorder and watch it to its end."""
        # A pool may terminate a spawned worker still starting up: SIGTERM waits until the
        # marker written here has the handler that saves its data.
        mask = sigterm.hold()
        try:
            self.marker = self._hook.announce(self.folder, main=self.main, how="start")
            self.before_recorder = sorted(sys.modules)
            try:
                recorder = self.recorder = self._new_recorder()
                recorder.start()
            except Exception as exc:
                self.recorder = None
                os.unlink(self.marker + ".json")
                self._hook.announce(self.folder, main=self.main, how="start",
                                    error="the recorder did not start "
                                          f"({type(exc).__name__}: {exc})")
                return
            self._hook.ping()
            children = self.children = ChildWatch(self._needed, self._site, recorder,
                                                  hashed_files(self._roots))
            self.markers.phase = self.phase
            self.markers.recorder = recorder
            self.configuration.install()
            self.markers.configuration = self.configuration
            self.configuration.switched_phase(self.phase)  # a child starts in steps
            children.install()
            os.register_at_fork(before=self.sigterm.before_fork,
                                after_in_parent=self.sigterm.after_fork,
                                after_in_child=self._after_fork)
            patch.exit_saving(self.save)
            patch.exec_saving(self._before_exec, self._exec_failed)
            patch.wakeup_fd_keeping(self.sigterm.pipe)
            atexit.register(self.save)  # runs before coverage's own (atexit: last in, first out)
            self.sigterm.take()
        finally:
            sigterm.restore(mask)

    def _new_recorder(self) -> Recorder:
        if sys.version_info >= (3, 12):
            from lawkit.footprint.measured.sysmon import SysMonRecorder

            return SysMonRecorder(self._roots, self.phase, log=self._log)
        import coverage

        from lawkit.footprint.measured.cover import CoverageRecorder

        os.environ["COVERAGE_PROCESS_START"] = self._coverage_rc or ""
        try:
            cov = coverage.process_startup() or coverage.Coverage.current()
        finally:
            del os.environ["COVERAGE_PROCESS_START"]
        if cov is None:
            raise RuntimeError("coverage did not start (COVERAGE_PROCESS_START is unset)")
        return CoverageRecorder(cov, self.phase, self._roots)

    def is_saving(self) -> bool:
        """Whether a save has begun."""
        return self.saving

    def save(self) -> None:
        """Save this process's measurement (``<marker>.done``), with SIGTERM held off until
        the end.

        A pool terminates its workers with SIGTERM while they may be saving on their way out;
        a save cut short leaves no data, so SIGTERM stays blocked from here on (the process is
        ending) and a second one waits for the first save.
        """
        recorder, children = self.recorder, self.children
        if self.saving or not self.marker or recorder is None or children is None:
            return
        self.saving = True
        sigterm.hold()
        try:
            recorder.save()
            self._hook.write_json(self.marker + ".done", {
                "recorder": recorder.name, "runs": recorder.runs(),
                "opened": children.opened_files(),
                "children": children.children, "turned_off": recorder.turned_off,
                "unseen": recorder.unseen, "configuration": self.configuration.to_json(),
                "regions": sorted(recorder.regions), "steps_again": recorder.steps_again,
                "modules": loaded.loaded_modules(self._roots, self._names),
                "events": recorder.event_counts(), "armed": recorder.armed_threads(),
                "unregioned": recorder.unregioned_threads(),
                "environment": {
                    "runs": recorder.env_runs(), "codes": recorder.env_codes(),
                    "everywhere": recorder.env_everywhere,
                    "contexts": sorted([p, list(r)] for p, r in recorder.entered),
                    "native": loaded.native_libraries(), "loaded": loaded.module_files(),
                    "before_recorder": loaded.files_by_module(self.before_recorder),
                    "path": list(sys.path), "python": loaded.python_build()}})
        except Exception as exc:  # never mask the process's own exit
            sys.stderr.write(f"lawkit footprint: cannot save what this process ran: {exc}\n")

    # The patches below are set once the recorder and the audit hook are in place (`install`).

    def _before_exec(self, path: Any, argv: Any, env: Any) -> int:
        # The audit event comes once this image's data is saved: note the new image first.
        noted = self.children.exec(path, argv, env) if self.children is not None else 0
        self.save()
        return noted

    def _exec_failed(self, noted: Any) -> None:
        """The exec failed and this image goes on: measure it again, and save at its end."""
        if self.children is None or self.recorder is None:
            return
        self.children.forget(noted)
        self.saving = False
        self.recorder.resume()
        with contextlib.suppress(FileNotFoundError):  # no save to undo: the exec's error stays
            os.unlink(self.marker + ".done")
        sigterm.release()

    def _after_fork(self) -> None:
        # With coverage.py, its own fork patch (registered before this hook, so run first) has
        # started a fresh measurement with this child's data file.
        if self.children is None or self.recorder is None:
            return
        self.saving = False
        try:
            self.marker = self._hook.announce(self.folder, main=False, how="fork")
            self.markers.phase = "steps"
            self.recorder.forked()
            self.configuration.forked()
            self.children.children = []  # the parent's children are the parent's
            self._hook.ping()
            self.sigterm.take()
        finally:
            self.sigterm.after_fork()
