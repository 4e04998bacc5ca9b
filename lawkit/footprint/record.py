"""`lawkit footprint record`: run a command with every Python process it starts measured, and
write which units ran, in which phases and regions.

COMMAND runs with the start-up hook (``measured.sitehook``, as ``sitecustomize`` on
``PYTHONPATH``) in a temp folder. On Python 3.12+ each process records with ``sys.monitoring``
(``measured.sysmon``), cheap enough to take in the capture run; on 3.11 with coverage.py
(``measured.cover``: arcs, the C tracer, the generated rcfile), whose tracer inflates step
times, which `record` says on stderr. Each process's audit hook (``measured.audit``) notes the
Python children it starts; one that cannot be measured, or never checked in, is refused. What
the measured processes wrote is read here (``collect``), then hashed, attributed and judged.

The main process, which starts in the ``startup`` phase, is the one whose parent is `record`
itself: COMMAND when it is Python (or a shell that execs Python). Every other process counts
as ``steps`` unless it calls ``lawkit.footprint.phase()`` itself.

Refused (exit 2, nothing written): a measured process left no data, turned its recorder off or
started a Python child that was not measured; COMMAND exited non-zero; nothing hashed ran; a
file that ran is not a hashed one (an installed copy of the engine, a ``.py`` outside
``include``, a custom loader's file, a sourceless or stale unchecked-hash ``.pyc``); or a
hashed file changed during the run.
"""

from __future__ import annotations

import contextlib
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from lawkit.config import Workspace
from lawkit.footprint import Context
from lawkit.footprint.collect import WAIT_SECONDS, Measurement, collect
from lawkit.footprint.configured import configuration_of
from lawkit.footprint.dependencies import FileRuns, distribution_records
from lawkit.footprint.document import (
    ANY_REGION,
    Configuration,
    EnvironmentRecord,
    FileRecord,
    Footprint,
    UnitRecord,
    sort_phases,
)
from lawkit.footprint.environment import PythonBuild, python_build
from lawkit.footprint.errors import RecordRefused
from lawkit.footprint.measured import sitehook
from lawkit.footprint.measured.audit import ChildWatch
from lawkit.footprint.owners import Owners
from lawkit.footprint.ran import phases_of_units, regions_in, unit_of_code
from lawkit.footprint.trees import SourceTree, work_tree_sources
from lawkit.footprint.units import NORMAL, Unit, codes_of, units_of

# coverage.py warns in every process that imports no engine code; those warnings say nothing
# about the footprint.
_QUIET = ("module-not-imported", "module-not-measured", "no-data-collected",
          "module-not-python", "already-imported", "include-ignored", "couldnt-parse")
_CLEARED_ENV = ("COVERAGE_FILE", "COVERAGE_RCFILE", "COVERAGE_PROCESS_CONFIG",
                "COVERAGE_PROCESS_START")
INFLATED = ("lawkit footprint record: Python {python} records with coverage.py, whose tracer "
            "inflates step times: take captures from a "
            "run on Python 3.12+, which records with sys.monitoring")
EVERYWHERE = ("lawkit footprint record: {who} saw no code outside the hashed files run, so "
              "every distribution it loaded counts as run in every phase and region (a change "
              "to any of them moves every law); record on Python 3.12+ to attribute them by "
              "region")


@dataclass(frozen=True)
class RecordReport:
    """A recorded footprint, where it was written, the file's sha256, and what the recorder did
    in each region in steps (``*``: none open), summed over the processes: the callbacks it
    fired by event kind (``events``) and the threads that kept code armed (``armed_threads``),
    from which the footprint's cost report is read."""

    footprint: Footprint
    path: str
    sha256: str
    events: dict[str, dict[str, int]] = field(default_factory=dict)
    armed_threads: dict[str, list[str]] = field(default_factory=dict)

    def lines(self) -> list[str]:
        """What `footprint record` prints: ``7 units ran: 7 at start-up, 6 of them also in
        steps; 1 process``."""
        fp = self.footprint
        return [f"{self.path}: {summary(fp)}; {fp.key}={fp.digest}"]

    def to_json(self) -> dict[str, object]:
        """The report as JSON."""
        fp = self.footprint
        return {"path": self.path, "sha256": self.sha256, "key": fp.key, "digest": fp.digest,
                "processes": fp.processes, "units_ran": fp.ran_units(),
                "recorder": fp.recorder, "regions": list(fp.regions)}


def summary(fp: Footprint) -> str:
    """How many units ran, when, and in how many processes, as a person would say it."""
    phases = [u.phases for f in fp.files.values() for u in f.units.values() if u.phases]
    startup = sum(1 for p in phases if "startup" in p)
    both = sum(1 for p in phases if "startup" in p and "steps" in p)
    only_steps = len(phases) - startup
    parts = []
    if startup:
        parts.append(f"{startup} at start-up")
        if both:
            parts.append("also in steps" if startup == both == 1 else
                         "all of them also in steps" if both == startup else
                         f"{both} of them also in steps")
        if only_steps:
            parts.append(f"{only_steps} only in steps")
    elif only_steps:
        parts.append(f"{only_steps} in steps")
    ran = f"{_count(len(phases), 'unit')} ran"
    ran += ": " + ", ".join(parts) if parts else ""
    named = [r for r in fp.regions if r != ANY_REGION]
    regions = f"; {_count(len(named), 'region')} ({', '.join(named)})" if named else ""
    return f"{ran}; {_count(fp.processes, 'process')}{regions}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}es" if noun.endswith("s") else f"{n} {noun}s"


def record_footprint(ws: Workspace, command: Sequence[str], out: Path, *,
                     cwd: Path | None = None) -> RecordReport:
    """Run ``command`` measured (in ``cwd``, default the working directory), and write its
    footprint to ``out`` (nothing on refusal)."""
    from lawkit.footprint.document import write_footprint

    if sys.version_info < (3, 12):
        _check_coverage()
    if not command:
        raise RecordRefused("no command given: `lawkit footprint record --out FILE -- "
                            "COMMAND...`")
    if not out.parent.is_dir():
        raise RecordRefused(f"the folder of {ws.rel(out)} does not exist: create it first")
    before = work_tree_sources(ws.digest)
    outside = {os.fsencode(k): os.fsencode(v) for k, v in os.environ.items()}
    folder = Path(tempfile.mkdtemp(prefix="lawkit-footprint-"))
    try:
        env = _prepare(folder, ws)
        started = ChildWatch(sitehook.needed_env(env), str(folder / "site"))
        started.starts(command, env, None if cwd is None else str(cwd))
        before_children = _children_of(os.getpid())
        reaping = _subreaper(True)
        try:
            code = subprocess.run(list(command), env=env, cwd=cwd, check=False).returncode
            if reaping:
                _wait_for_descendants(before_children)
        except OSError as exc:
            raise RecordRefused(f"cannot run {command[0]}: {exc.strerror}") from None
        finally:
            if reaping:
                _subreaper(False)
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            raise RecordRefused(f"the command {how}: nothing written; a footprint is of a run "
                                "that worked")
        measurement = collect(folder, started.children)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if "coverage" in measurement.recorders:
        sys.stderr.write(INFLATED.format(python=platform.python_version()) + "\n")
    if measurement.env_everywhere:
        who = (f"Python {platform.python_version()} (coverage.py)"
               if "coverage" in measurement.recorders else
               "a process whose sys.monitoring tool id for the environment was taken")
        sys.stderr.write(EVERYWHERE.format(who=who) + "\n")
    after = work_tree_sources(ws.digest)
    if after.files != before.files:
        changed = sorted(set(before.files) ^ set(after.files)
                         | {p for p in before.files if after.files.get(p) != before.files[p]})
        raise RecordRefused(f"{changed[0]} changed while the command ran: record again on a "
                            "tree that stays put")
    hook = os.path.realpath(folder)
    measurement.arcs = {f: a for f, a in measurement.arcs.items()
                        if not _inside(f, hook)}  # the hook's own lines
    measurement.env = {f: c for f, c in measurement.env.items()
                       if not _inside(os.path.realpath(f), hook)}
    measurement.before = {f: c for f, c in measurement.before.items()
                          if not _inside(os.path.realpath(f), hook)}
    configuration = configuration_of(measurement.configuration, outside,
                                     shown=ws.footprint_environ)
    footprint = build_footprint(ws, before, measurement, tuple(command), configuration)
    sha = write_footprint(footprint, out)
    return RecordReport(footprint, ws.rel(out), sha, measurement.events,
                        measurement.armed_threads)


_PR_SET_CHILD_SUBREAPER = 36


def _subreaper(on: bool) -> bool:
    """Make this process the reaper of COMMAND's orphaned descendants (Linux), so that a
    process COMMAND left running (a worker behind a program lawkit does not read, such as
    ``perl -e 'sleep 1; exec python ...'``) is seen; whether that took."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


def _children_of(pid: int) -> dict[int, str]:
    """This machine's processes whose parent is ``pid``, with their command lines (Linux's
    /proc; empty elsewhere)."""
    found: dict[int, str] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
            if int(stat.rpartition(")")[2].split()[1]) != pid:
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        found[int(entry)] = " ".join(os.fsdecode(a) for a in argv if a)
    return found


def _wait_for_descendants(before: dict[int, str]) -> None:
    """Wait (at most `WAIT_SECONDS`) for the processes COMMAND left behind, reaping them (each
    may still start Python, unmeasured if it checks in after the data is read); refuse, naming
    one, if any is still running then."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        left = {pid: argv for pid, argv in _children_of(os.getpid()).items()
                if pid not in before}
        for pid in list(left):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                done = pid
            if done:
                del left[pid]
        if not left:
            return
        if time.monotonic() > deadline:
            pid, argv = next(iter(left.items()))
            raise RecordRefused(f"process {pid} ({_shown_argv(argv)}) was still running "
                                f"{WAIT_SECONDS:.0f} s after the command ended: it may run "
                                "engine code unmeasured; make the command wait for it")
        time.sleep(0.02)


def _shown_argv(argv: str) -> str:
    return argv if len(argv) <= 80 else argv[:77] + "..."


def build_footprint(ws: Workspace, tree: SourceTree, measurement: Measurement,
                    command: tuple[str, ...],
                    configuration: Configuration | None = None) -> Footprint:
    """The footprint of a measurement: every unit of every hashed file, with its phases and
    regions, the environment that ran and the configuration read."""
    root = os.path.realpath(ws.digest.root)
    by_path = {os.path.join(root, *rel.split("/")): rel for rel in tree.files}
    unhashed = _check_modules(ws, measurement, by_path, root)
    for filename in [*measurement.arcs, *measurement.runs]:
        if filename not in by_path:
            _refuse_unhashed(ws, filename, root)
    files: dict[str, FileRecord] = {}
    seen: set[str] = set()
    linked = _linked(by_path, tree, measurement)
    # a module imported before its process's recorder started (by a .pth file) was never
    # armed: each of its units counts as run in every context that process was in
    before = {os.path.realpath(f): c for f, c in measurement.before.items()}
    for path, rel in sorted(by_path.items(), key=lambda item: item[1]):
        units = units_of(tree.files[rel], path=rel)
        codes = codes_of(tree.files[rel]) or {}
        contexts = _phases_of_units(units, measurement, path)
        records = {}
        for u in units:
            ran = contexts[u.qualname] | linked.get(path, set()) | before.get(path, set())
            if not rel.endswith(".py"):  # data: it ran where it was opened (one unit)
                ran |= measurement.opened.get(path, set())
            assumed = _assumed(u, rel, ran)
            if assumed:
                ran.add(("steps", ()))
            regions = regions_in(ran, "steps")
            seen |= set(regions)
            phases = sort_phases({p for p, _ in ran})
            records[u.qualname] = UnitRecord(
                u.digest, phases, regions, regions_in(ran, "startup"),
                shutdown=not phases and any(p == "shutdown" for p, _ in ran), assumed=assumed,
                code=codes.get(u.qualname), normal=NORMAL if u.qualname in codes else None)
        files[rel] = FileRecord(tree.sha256(rel), records)
    if not any(u.phases for f in files.values() for u in f.units.values()):
        raise RecordRefused(f"no hashed engine file ran under {ws.rel(root)}: is the command "
                            "running this engine, and does it import it from here?")
    recorder = "coverage" if "coverage" in measurement.recorders else "sys.monitoring"
    return Footprint(ws.digest.key, tree.digest, command, len(measurement.processes), files,
                     recorder=recorder, python=platform.python_version(),
                     regions=tuple(sorted(seen | measurement.regions)),
                     unhashed=tuple(sorted(unhashed)),
                     unregioned_threads=tuple(sorted(measurement.unregioned_threads)),
                     environment=build_environment(ws, by_path, measurement),
                     configuration=configuration)


def build_environment(ws: Workspace, hashed: dict[str, str],
                      measurement: Measurement) -> EnvironmentRecord:
    """The environment of a measurement: each distribution whose Python code ran (where it
    ran, as for a unit) or whose shared object was mapped (in every context its process was
    in), the code that ran from no distribution and from outside the workspace's own folder,
    and the Python build. The hashed files and the hashed packages' folders are left out
    before attribution."""
    root = os.path.realpath(ws.digest.root)
    packages = tuple(os.path.join(root, *p.split("/"), "") for p in ws.digest.packages)

    def outside(path: str) -> bool:
        real = os.path.realpath(path)
        return real not in hashed and not real.startswith(packages)

    owners = Owners(measurement.search_path or None)
    runs = _file_runs(measurement, outside)
    attribution = owners.attribute(runs)
    dists = distribution_records(runs, attribution)
    counted = {path for path, r in runs.items()  # code that ran in a phase that counts
               if path not in measurement.native and sort_phases({p for p, _ in r.contexts})}
    before = tuple(sorted(name for name, path in measurement.before_recorder.items()
                          if attribution.owners.get(os.path.realpath(path)) in dists))
    own = _own_code(ws, owners)
    unpackaged = tuple(p for p in attribution.unpackaged if p in counted and not own(p))
    python = python_build()
    if measurement.python is not None:
        with contextlib.suppress(ValueError):  # a build the process could not describe
            python = PythonBuild.from_json(measurement.python)
    return EnvironmentRecord(python, dists, unpackaged, measurement.env_everywhere, before)


def _file_runs(measurement: Measurement, outside: Callable[[str], bool]) -> dict[str, FileRuns]:
    """Where each file outside the hashed ones ran, by real path: its code (by file, with its
    code objects that started), and, as a whole in every context of its process, a module
    imported before the recorder, a native library, and every loaded file where a process saw
    no code outside the hashed files run."""
    runs: dict[str, FileRuns] = {}
    for by_file, whole in ((measurement.env, measurement.env_everywhere),
                           (measurement.before, True), (measurement.native, True)):
        for path, where in by_file.items():
            if outside(path):
                ran = runs.setdefault(os.path.realpath(path), FileRuns())
                ran.contexts |= where
                for code, contexts in measurement.env_codes.get(path, {}).items():
                    ran.codes.setdefault(code, set()).update(contexts)
                ran.whole |= whole
    return runs


def _own_code(ws: Workspace, owners: Owners) -> Callable[[str], bool]:
    """Whether a real path is the workspace's own code: under the folder of its config file
    (the repository of the laws, which versions and reviews it, as it does the hashed files),
    and not in a folder distributions are installed in (a ``.venv`` inside it is environment).
    Without a config file there is no such folder: nothing is."""
    if ws.config_path is None:
        return lambda path: False
    root = os.path.join(os.path.realpath(ws.config_path.parent), "")
    return lambda path: path.startswith(root) and not path.startswith(owners.site)


def _linked(by_path: dict[str, str], tree: SourceTree,
            measurement: Measurement) -> dict[str, set[Context]]:
    """Each hashed symlink to a hashed file (``fast.py -> impl_v1.py``, hashed as its link
    text), with every context its target ran in: a module imported through the link runs under
    the target's real path, and re-pointing the link changes what runs."""
    linked: dict[str, set[Context]] = {}
    for path in by_path:
        if not os.path.islink(path):
            continue
        target = os.path.realpath(path)
        rel = by_path.get(target)
        if rel is None or target == path:
            continue
        ran = _phases_of_units(units_of(tree.files[rel], path=rel), measurement, target)
        linked[path] = set().union(*ran.values())
    return linked


COMPILING = frozenset({"jit", "njit", "script", "compile", "autotune", "heuristics",
                       "vectorize", "guvectorize", "cfunc", "stencil", "generated_jit",
                       "kernel", "prim_func"})
"""Decorator names (the last part of a dotted name: ``triton.jit``, ``torch.jit.script``,
``numba.njit``, ``torch.compile``, ``cute.kernel``) of compilers that build a function from its
source, so its own code never runs as Python."""
_NAME = re.compile(r"[A-Za-z_][\w.]*")
_DEF = re.compile(rb"^\s*(async\s+)?def\b", re.MULTILINE)


def _assumed(u: Unit, rel: str, ran: set[Context]) -> str:
    """Why a unit counts as run in steps with no region open though that was not seen:
    ``"unseen"`` for a hashed file that is not Python and was never seen opened (native code
    may read it), ``"compiled"`` for a function under a source-compiling decorator that did
    not run in steps as Python (a JIT runs it through its wrapper); else empty."""
    if not rel.endswith(".py"):
        return "" if ran else "unseen"
    if u.kind != "function" or any(p == "steps" for p, _ in ran):
        return ""
    found = _DEF.search(u.data)
    header = u.data[:found.start() if found else 0].decode("utf-8", "replace")
    names = {part for line in header.splitlines() if line.lstrip().startswith("@")
             for name in _NAME.findall(line) for part in name.split(".")}
    return "compiled" if names & COMPILING else ""


def _phases_of_units(units: Sequence[Unit], measurement: Measurement,
                       path: str) -> dict[str, set[Context]]:
    """The contexts each unit of one file ran in, from code objects and from arcs."""
    ran = phases_of_units(units, measurement.arcs.get(path, {}))
    for (qualname, first), contexts in measurement.runs.get(path, {}).items():
        ran[unit_of_code(units, qualname, first)] |= contexts
    return ran


def _check_modules(ws: Workspace, measurement: Measurement, hashed: dict[str, str],
                   root: str) -> set[str]:
    """The native modules loaded from the engine's folders, by relpath; a refusal for any
    other module whose code is not a hashed file."""
    native: set[str] = set()
    for module in measurement.modules:
        path, kind = module["path"], module["kind"]
        if kind == "native":
            native.add(os.path.relpath(path, root).replace(os.sep, "/"))
        elif kind == "unchecked-pyc":
            raise RecordRefused(f"{ws.rel(path)} ran from an unchecked-hash .pyc built from "
                                "other source, so the hashed source is not what ran: delete "
                                "its __pycache__ entry and record again")
        elif kind == "stale-pyc":
            raise RecordRefused(f"{ws.rel(path)} ran from a .pyc built from other source (the "
                                "edit kept the size and time the .pyc records), so the hashed "
                                "source is not what ran: delete its __pycache__ entry and "
                                "record again")
        elif path not in hashed:
            _refuse_unhashed(ws, path, root, kind)
    return native


def _refuse_unhashed(ws: Workspace, filename: str, root: str, kind: str = "source") -> None:
    if kind == "elsewhere" or not _inside(filename, root):
        raise RecordRefused(f"{filename} ran, but it is not a hashed engine file (an "
                            f"installed copy of the engine?): run the engine from "
                            f"{ws.rel(root)}, the digest root")
    how = {"sourceless": "a .pyc without its source",
           "other": "loaded by another loader"}.get(kind, "a Python file the digest does not "
                                                      "hash (outside include, or excluded)")
    raise RecordRefused(f"{ws.rel(filename)} ran from inside a hashed package, but it is "
                        f"{how}: a change to it would go unseen; hash it (include) or move it "
                        "out of the package")


def _check_coverage() -> None:
    import coverage

    if coverage.version_info < (7, 10, 4):
        raise RecordRefused(f"coverage.py {coverage.__version__} is too old to record "
                            "footprints (7.10.4 measures forked workers on their own): "
                            "pip install -U coverage")


def _inside(filename: str, root: str) -> bool:
    return filename.startswith(os.path.join(root, ""))


def _prepare(folder: Path, ws: Workspace) -> dict[str, str]:
    """Write the hook and rcfile into ``folder``; the environment COMMAND runs in."""
    site = folder / "site"
    for sub in ("site", "markers", "data"):
        (folder / sub).mkdir()
    shutil.copyfile(sitehook.__file__, site / "sitecustomize.py")
    root = os.path.realpath(ws.digest.root)
    dirs = sorted({os.path.join(root, *p.split("/")) for p in ws.digest.packages})
    names = sorted({p.split("/")[-1] for p in ws.digest.packages
                    if p.split("/")[-1].isidentifier()})
    rc = folder / "coveragerc"
    rc.write_text("\n".join([
        "[run]",
        "branch = True",
        "parallel = True",
        "core = ctrace",
        "sigterm = True",
        "patch = fork",
        f"data_file = {folder / 'data' / '.coverage'}",
        "source =",
        *(f"    {d}" for d in [*dirs, str(site)]),
        *(["source_pkgs =", *(f"    {n}" for n in names)] if names else []),
        "disable_warnings =",
        *(f"    {w}" for w in _QUIET),
        "",
    ]), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in _CLEARED_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(site), *filter(None, [env.get("PYTHONPATH")])])
    env[sitehook.COVERAGE_ENV] = str(rc)
    env["COVERAGE_CORE"] = "ctrace"
    env[sitehook.DIR_ENV] = str(folder)
    env[sitehook.PARENT_ENV] = str(os.getpid())
    env[sitehook.ROOTS_ENV] = os.pathsep.join(dirs)
    env[sitehook.NAMES_ENV] = os.pathsep.join(names)
    env.pop(sitehook.SPAWNER_ENV, None)
    return env
