"""Reading what the measured processes left: their markers, what each ran, and coverage.py's
data files (Python 3.11).

Every process the start-up hook measured wrote a marker ``markers/<id>.json`` when it started
(naming the process that started it) and ``<id>.done`` once it saved what it ran. `record`
waits up to 10 seconds for processes still running after the command ended (multiprocessing's
resource tracker outlives its program); a marker still without its ``.done`` then is a process
that left no data (killed with SIGKILL, crashed, still running): refused. So is a process that
turned its recorder off, a Python child that could not be measured (an environment without the
recording's variables, ``-I``, ``-E``, ``-S``), and a Python child a process started that never
checked in.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lawkit.footprint.errors import RecordRefused
from lawkit.footprint.measured.cover import parse_context
from lawkit.footprint.measured.markers import ANY_REGION, Context

WAIT_SECONDS = 10.0
"""How long `record` waits for measured processes that outlive the command."""
COMMAND = "the recorded command"
"""How messages name the command `record` runs, as the spawner of the processes it starts."""



@dataclass(frozen=True)
class Process:
    """One measured process, as its marker names it."""

    id: str
    pid: int
    main: bool
    how: str
    spawner: str | None
    argv: tuple[str, ...]
    error: str | None = None

    def label(self) -> str:
        """``process 123 (python run.py)``: how messages name it."""
        return f"process {self.pid} ({_shown(self.argv)})"


@dataclass
class Measurement:
    """The processes measured and what ran in them: code objects (sys.monitoring) by file and
    ``(qualname, firstlineno)``, arcs (coverage.py) by file, each with its contexts."""

    processes: list[Process]
    runs: dict[str, dict[tuple[str, int], set[Context]]] = field(default_factory=dict)
    arcs: dict[str, dict[Context, set[tuple[int, int]]]] = field(default_factory=dict)
    modules: list[dict[str, str]] = field(default_factory=list)
    regions: set[str] = field(default_factory=set)
    recorders: set[str] = field(default_factory=set)
    opened: dict[str, set[Context]] = field(default_factory=dict)
    """Files under a hashed package's folder that are not Python, opened, by real path."""
    env: dict[str, set[Context]] = field(default_factory=dict)
    """Files outside the hashed ones whose Python code ran, with the contexts it ran in; on a
    recorder that sees no such code (coverage.py), the files of every loaded module, with every
    context its process was in."""
    env_codes: dict[str, dict[tuple[str, int], set[Context]]] = field(default_factory=dict)
    """The code objects outside the hashed files that started, by file and ``(qualname,
    firstlineno)``, with the contexts each may have run in (`code_contexts`)."""
    before: dict[str, set[Context]] = field(default_factory=dict)
    """The files of the modules imported before a process's recorder started (a ``.pth``
    file's, the start-up hook's), with every context that process was in: their code may have
    run unseen."""
    before_recorder: dict[str, str] = field(default_factory=dict)
    """Those modules' names, with their files."""
    configuration: list[dict[str, Any]] = field(default_factory=list)
    """Each process's configuration read (``measured.configuration``), the main process's
    first."""
    native: dict[str, set[Context]] = field(default_factory=dict)
    """The shared objects the processes mapped, with every context each process was in."""
    env_everywhere: bool = False
    """Some process counted its loaded distributions everywhere (it saw no code outside the
    hashed files run)."""
    search_path: list[str] = field(default_factory=list)
    """The measured processes' search paths, the main process's first, each folder once."""
    python: dict[str, Any] | None = None
    """The main process's Python build (``environment.PythonBuild`` as JSON)."""
    events: dict[str, dict[str, int]] = field(default_factory=dict)
    """For each region in steps (``*``: none open), the recorder's callbacks fired there by
    event kind, summed over the processes (a callback inside nested regions counts in each)."""
    armed_threads: dict[str, list[str]] = field(default_factory=dict)
    """For each region in steps, the names of the threads live in another context beside it,
    which kept its code armed until it had run in theirs."""
    unregioned_threads: set[str] = field(default_factory=set)
    """The names of the threads that ran hashed code in steps with no region open (or were
    live there while one did), over every process."""


def read_markers(folder: Path) -> list[tuple[Process, dict[str, Any] | None]]:
    """Each process that announced itself, and what it saved (None: nothing yet)."""
    found: list[tuple[Process, dict[str, Any] | None]] = []
    for path in sorted((folder / "markers").glob("*.json")):
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
            proc = Process(str(doc["id"]), int(doc["pid"]), bool(doc["main"]), str(doc["how"]),
                           doc.get("spawner"), tuple(map(str, doc["argv"])), doc.get("error"))
            done = path.with_suffix(".done")
            saved = json.loads(done.read_text(encoding="utf-8")) if done.exists() else None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RecordRefused(f"a measured process left an unreadable marker {path.name} "
                                f"({exc}): record again") from None
        found.append((proc, saved))
    return found


def _wait_for_stragglers(folder: Path) -> list[tuple[Process, dict[str, Any] | None]]:
    """The markers once every measured process that is still alive has saved, or 10 s on."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        markers = read_markers(folder)
        waiting = [p for p, saved in markers if saved is None and not p.error and _alive(p.pid)]
        if not waiting or time.monotonic() > deadline:
            return markers
        time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def collect(folder: Path, command: list[dict[str, Any]]) -> Measurement:
    """Every process's marker and data; a refusal naming the first process the footprint
    cannot stand on. ``command``: the Python interpreters the recorded command starts itself
    (`ChildWatch.starts`), each of which must check in as a process no measured one started."""
    markers = _wait_for_stragglers(folder)
    for proc, _ in markers:
        if proc.error:
            raise RecordRefused(f"{proc.label()} was not measured: {proc.error}")
    for proc, saved in markers:
        if saved is None:
            raise RecordRefused(f"{proc.label()} left no data (killed with SIGKILL, crashed, or "
                                f"still running {WAIT_SECONDS:.0f} s after the command ended): "
                                "nothing written; record again")
    measurement = Measurement([proc for proc, _ in markers])
    for proc, saved in markers:
        assert saved is not None
        _check_process(proc, saved)
        _add_runs(saved, measurement)
        _add_environment(proc, saved.get("environment"), measurement)
        if isinstance(saved.get("configuration"), dict):
            at = 0 if proc.main else len(measurement.configuration)
            measurement.configuration.insert(at, saved["configuration"])
        measurement.modules.extend(saved.get("modules", []))
        measurement.recorders.add(str(saved.get("recorder")))
        measurement.regions.update(saved.get("regions", []))
        measurement.unregioned_threads.update(map(str, saved.get("unregioned", [])))
        _add_costs(saved, measurement)
        for path, phase, regions in saved.get("opened", []):
            opened = measurement.opened.setdefault(os.path.realpath(path), set())
            opened.add((phase, tuple(regions)))
    _check_children(COMMAND, command)
    _check_children_checked_in(markers, command)
    if "coverage" in measurement.recorders:
        steps_again = {c for _, saved in markers for c in (saved or {}).get("steps_again", [])}
        _read_coverage(folder, measurement, steps_again)
    return measurement


def _check_process(proc: Process, saved: dict[str, Any]) -> None:
    for call in saved.get("turned_off", []):
        raise RecordRefused(f"{proc.label()} turned the measurement off ({call}), so what it "
                            "ran after is unseen, even if it turned it back on: remove the "
                            "call from the recorded run")
    for what in saved.get("unseen", []):
        raise RecordRefused(f"{proc.label()} ran Python code the recorder could not see "
                            f"({what}): record the run again")
    _check_children(proc.label(), saved.get("children", []))


def _check_children(label: str, children: list[dict[str, Any]]) -> None:
    for child in children:
        if child.get("problem"):
            raise RecordRefused(f"{label} started a Python child that cannot be measured, "
                                f"{_child_shown(child)}: {child['problem']}; start Python "
                                "without -I/-E/-S, let it inherit the environment "
                                "(env={**os.environ, ...}), or record that process itself "
                                "(lawkit footprint record -- COMMAND), so that every process "
                                "is recorded")


def _check_children_checked_in(markers: list[tuple[Process, dict[str, Any] | None]],
                               command: list[dict[str, Any]]) -> None:
    """Each Python child a process started has a marker naming that process as its spawner;
    each one the command started itself, a marker naming none."""
    started = [p for p, _ in markers if p.how == "start"]
    spawners = [(COMMAND, None, command),
                *((proc.label(), proc.id, list((saved or {}).get("children", [])))
                  for proc, saved in markers)]
    for label, spawner, children in spawners:
        if not children:
            continue
        arrived = Counter(p.argv for p in started if p.spawner == spawner)
        unmatched = []
        for child in children:
            argv = tuple(child["command"])
            if arrived[argv] > 0:
                arrived[argv] -= 1
            else:
                unmatched.append(child)
        spare = sum(arrived.values())  # children seen under another argv (a wrapper's exec)
        if len(unmatched) > spare:
            raise RecordRefused(f"{label} started a Python child that never checked in, "
                                f"{_child_shown(unmatched[spare])}: it ran without the "
                                "recording's start-up hook (a wrapper or shell that cleared "
                                "the environment, such as env -i or env -u PYTHONPATH, "
                                "another PYTHONPATH, or no lawkit importable there), so what "
                                "it ran is unseen; start Python directly (sys.executable), "
                                "keep the environment (env={**os.environ, ...}), or record "
                                "that process itself (lawkit footprint record -- COMMAND)")


def _add_runs(saved: dict[str, Any], measurement: Measurement) -> None:
    for filename, qualname, first, phase, regions in saved.get("runs", []):
        by_code = measurement.runs.setdefault(os.path.realpath(filename), {})
        by_code.setdefault((qualname, int(first)), set()).add((phase, tuple(regions)))


def _add_costs(saved: dict[str, Any], measurement: Measurement) -> None:
    """A process's event counts and the threads that kept its code armed, by region in
    steps."""
    for phase, regions, fired in saved.get("events", []):
        if phase == "steps":
            for region in regions or [ANY_REGION]:
                counts = measurement.events.setdefault(region, {})
                for kind, n in fired.items():
                    counts[kind] = counts.get(kind, 0) + int(n)
    armed: dict[str, set[str]] = {r: set(n) for r, n in measurement.armed_threads.items()}
    for phase, regions, names in saved.get("armed", []):
        if phase == "steps":
            for region in regions or [ANY_REGION]:
                armed.setdefault(region, set()).update(names)
    measurement.armed_threads = {r: sorted(n) for r, n in sorted(armed.items())}


def _add_environment(proc: Process, saved: Any, measurement: Measurement) -> None:
    """A process's environment: the files outside the hashed ones that ran, where; each
    shared object it mapped (and, where it saw no such code run, each loaded module's file) in
    every context it was in."""
    if not isinstance(saved, dict):
        return
    contexts = {(str(phase), tuple(regions)) for phase, regions in saved.get("contexts", [])}
    files: dict[str, set[Context]] = {}
    for filename, phase, regions in saved.get("runs", []):
        files.setdefault(filename, set()).add((phase, tuple(regions)))
    for filename, where in files.items():
        measurement.env.setdefault(filename, set()).update(where)
    for filename, code, where in code_contexts(saved.get("codes") or {}, files, contexts):
        by_code = measurement.env_codes.setdefault(filename, {})
        by_code.setdefault(code, set()).update(where)
    before = saved.get("before_recorder")
    for name, filename in (before.items() if isinstance(before, dict) else ()):
        measurement.before_recorder.setdefault(name, filename)
        measurement.before.setdefault(filename, set()).update(contexts)
    everywhere = bool(saved.get("everywhere"))
    if everywhere:
        measurement.env_everywhere = True
        for filename in saved.get("loaded", []):
            measurement.env.setdefault(filename, set()).update(contexts)
    for path in saved.get("native", []):
        measurement.native.setdefault(path, set()).update(contexts)
    path = [p for p in saved.get("path", []) if isinstance(p, str)]
    if proc.main:
        measurement.search_path[:0] = path
        if isinstance(saved.get("python"), dict):
            measurement.python = saved["python"]
    else:
        measurement.search_path.extend(path)
    if measurement.python is None and isinstance(saved.get("python"), dict):
        measurement.python = saved["python"]


def code_contexts(saved: dict[str, Any], files: dict[str, set[Context]],
                  entered: set[Context]) -> list[tuple[str, tuple[str, int], set[Context]]]:
    """Each code object outside the hashed files that started in one process, with the contexts
    it may have run in: where it first started; each context its file ran in that was live
    since (a run there may have fired nothing: the recorder turns a file's code off by file);
    and, once its file was settled (it ran in steps with no region open, after which none of
    its code fires again), steps with no region open if a context of steps was live since."""
    live = {(str(p), tuple(r)): int(e) for p, r, e in saved.get("live", [])}
    settled = {str(name): int(e) for name, e in saved.get("settled", [])}
    found = []
    for filename, qualname, first, epoch, phase, regions in saved.get("codes", []):
        start: Context = (str(phase), tuple(regions))
        if start[0] == "shutdown" and start not in entered:  # steps again: it ran in steps
            start = ("steps", ())
        where = {start} | {c for c in files.get(filename, ()) if live.get(c, -1) >= epoch}
        since = max(settled.get(filename, epoch), epoch)
        if filename in settled and any(c[0] == "steps" and e >= since for c, e in live.items()):
            where.add(("steps", ()))
        found.append((filename, (str(qualname), int(first)), where))
    return found


def _read_coverage(folder: Path, measurement: Measurement, steps_again: set[str]) -> None:
    from coverage import CoverageData
    from coverage.exceptions import CoverageException

    for path in sorted((folder / "data").iterdir()):
        data = CoverageData(basename=str(path))
        try:
            data.read()
            _add_arcs(data, measurement, steps_again)
        except (CoverageException, OSError) as exc:
            raise RecordRefused(f"a measured process left unreadable coverage data "
                                f"({path.name}: {exc}): nothing written; record again") from None


def _add_arcs(data: Any, measurement: Measurement, steps_again: set[str]) -> None:
    if not data.has_arcs() and data.measured_files():
        raise RecordRefused("coverage data without arcs: a process measured lines only "
                            "(another coverage config?): record again")
    for context in sorted(data.measured_contexts()):
        parsed = parse_context(context, steps_again)
        data.set_query_contexts([f"^{re.escape(context)}$"])
        for filename in data.measured_files():
            arcs = data.arcs(filename) or []
            if arcs:
                by_context = measurement.arcs.setdefault(os.path.realpath(filename), {})
                by_context.setdefault(parsed, set()).update(arcs)
    data.set_query_contexts(None)


def _child_shown(child: dict[str, Any]) -> str:
    """A Python child as messages name it: the command its spawner started (``env -i python
    -c ...``, a shell's command line), else the interpreter's argv."""
    via = child.get("via")
    return _shown([via]) if isinstance(via, str) else _shown(child["command"])


def _shown(argv: Any) -> str:
    shown = " ".join(argv)
    return shown if len(shown) <= 80 else shown[:77] + "..."
