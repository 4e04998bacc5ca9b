"""`lawkit footprint record`: run a command under coverage.py and write which units ran.

COMMAND runs with the start-up hook (``sitehook``, as ``sitecustomize`` on ``PYTHONPATH``) and a
generated coverage rcfile (``COVERAGE_PROCESS_START``) in a temp folder: arcs, the C tracer,
measuring the hashed packages' folders (and the packages by import name, to catch an installed
copy running instead), data files per process, saved at exit, on SIGTERM, on ``os._exit`` and
before an exec; each process says when its data is saved. Every Python process COMMAND starts
that reads ``PYTHONPATH`` is measured; one started with ``-I``/``-E`` or with an environment
that drops these variables is not seen at all.

The main process, which starts in the ``startup`` phase, is the one whose parent is `record`
itself: COMMAND when it is Python (or a shell that execs Python). A Python process started by a
wrapper script, like every other process, counts as ``steps`` unless it calls
``lawkit.footprint.phase()`` itself.

Refused (exit 2, nothing written): a measured process left no readable data, COMMAND exited
non-zero, nothing hashed ran, a measured file is not a hashed one (an installed copy of the
engine ran), or a hashed file changed during the run.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from lawkit.config import Workspace
from lawkit.footprint import sitehook
from lawkit.footprint.collect import Measurement, collect
from lawkit.footprint.document import FileRecord, Footprint, UnitRecord, sort_phases
from lawkit.footprint.errors import RecordRefused
from lawkit.footprint.ran import phases_of_units
from lawkit.footprint.trees import SourceTree, work_tree_sources
from lawkit.footprint.units import units_of

# coverage.py warns in every process that imports no engine code; those warnings say nothing
# about the footprint.
_QUIET = ("module-not-imported", "module-not-measured", "no-data-collected",
          "module-not-python", "already-imported", "include-ignored", "couldnt-parse")
_CLEARED_ENV = ("COVERAGE_FILE", "COVERAGE_RCFILE", "COVERAGE_PROCESS_CONFIG")


@dataclass(frozen=True)
class RecordReport:
    """A recorded footprint, where it was written, and the file's sha256."""

    footprint: Footprint
    path: str
    sha256: str

    def lines(self) -> list[str]:
        """What `footprint record` prints."""
        fp = self.footprint
        units = [u for f in fp.files.values() for u in f.units.values()]
        startup = sum(1 for u in units if "startup" in u.phases)
        steps = sum(1 for u in units if "steps" in u.phases)
        return [f"{self.path}: {fp.ran_units()} of {len(units)} units ran ({startup} at "
                f"start-up, {steps} in steps) in {fp.processes} processes, "
                f"{fp.key}={fp.digest}"]

    def to_json(self) -> dict[str, object]:
        """The report as JSON."""
        fp = self.footprint
        return {"path": self.path, "sha256": self.sha256, "key": fp.key, "digest": fp.digest,
                "processes": fp.processes, "units_ran": fp.ran_units()}


def record_footprint(ws: Workspace, command: Sequence[str], out: Path, *,
                     cwd: Path | None = None) -> RecordReport:
    """Run ``command`` measured (in ``cwd``, default the working directory), and write its
    footprint to ``out`` (nothing on refusal)."""
    from lawkit.footprint.document import write_footprint

    _check_coverage()
    if not command:
        raise RecordRefused("no command given: `lawkit footprint record --out FILE -- "
                            "COMMAND...`")
    if not out.parent.is_dir():
        raise RecordRefused(f"the folder of {ws.rel(out)} does not exist: create it first")
    before = work_tree_sources(ws.digest)
    folder = Path(tempfile.mkdtemp(prefix="lawkit-footprint-"))
    try:
        env = _prepare(folder, ws, before)
        try:
            code = subprocess.run(list(command), env=env, cwd=cwd, check=False).returncode
        except OSError as exc:
            raise RecordRefused(f"cannot run {command[0]}: {exc.strerror}") from None
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            raise RecordRefused(f"the command {how}: nothing written; a footprint is of a run "
                                "that worked")
        measurement = collect(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    after = work_tree_sources(ws.digest)
    if after.files != before.files:
        changed = sorted(set(before.files) ^ set(after.files)
                         | {p for p in before.files if after.files.get(p) != before.files[p]})
        raise RecordRefused(f"{changed[0]} changed while the command ran: record again on a "
                            "tree that stays put")
    measurement.arcs = {f: a for f, a in measurement.arcs.items()
                        if not _inside(f, os.path.realpath(folder))}  # the hook's own lines
    footprint = build_footprint(ws, before, measurement, tuple(command))
    sha = write_footprint(footprint, out)
    return RecordReport(footprint, ws.rel(out), sha)


def build_footprint(ws: Workspace, tree: SourceTree, measurement: Measurement,
                    command: tuple[str, ...]) -> Footprint:
    """The footprint of a measurement: every unit of every hashed file, with its phases."""
    root = os.path.realpath(ws.digest.root)  # coverage.py names files by their real path
    by_path = {os.path.join(root, *rel.split("/")): rel for rel in tree.files}
    ran_any = False
    for filename in measurement.arcs:
        if filename not in by_path and not _inside(filename, root):
            raise RecordRefused(f"{filename} ran, but it is not a hashed engine file (an "
                                f"installed copy of the engine?): run the engine from "
                                f"{ws.rel(root)}, the digest root")
    files: dict[str, FileRecord] = {}
    for path, rel in sorted(by_path.items(), key=lambda item: item[1]):
        units = units_of(tree.files[rel])
        phases = phases_of_units(units, measurement.arcs.get(path, {}))
        records = {u.qualname: UnitRecord(u.digest, sort_phases(phases[u.qualname]))
                   for u in units}
        ran_any |= any(r.phases for r in records.values())
        files[rel] = FileRecord(tree.sha256(rel), records)
    if not ran_any:
        raise RecordRefused(f"no hashed engine file ran under {ws.rel(root)}: is the command "
                            "running this engine, and does it import it from here?")
    return Footprint(ws.digest.key, tree.digest, command, len(measurement.processes), files,
                     recorder="coverage", python=platform.python_version())


def _check_coverage() -> None:
    import coverage

    if coverage.version_info < (7, 10, 4):
        raise RecordRefused(f"coverage.py {coverage.__version__} is too old to record "
                            "footprints (7.10.4 measures forked workers on their own): "
                            "pip install -U coverage")


def _inside(filename: str, root: str) -> bool:
    return filename.startswith(os.path.join(root, ""))


def _prepare(folder: Path, ws: Workspace, tree: SourceTree) -> dict[str, str]:
    """Write the hook and rcfile into ``folder``; the environment COMMAND runs in."""
    site = folder / "site"
    for sub in ("site", "markers", "data"):
        (folder / sub).mkdir()
    shutil.copyfile(sitehook.__file__, site / "sitecustomize.py")
    root = os.path.abspath(ws.digest.root)
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
    env["COVERAGE_PROCESS_START"] = str(rc)
    env["COVERAGE_CORE"] = "ctrace"
    env[sitehook.DIR_ENV] = str(folder)
    env[sitehook.PARENT_ENV] = str(os.getpid())
    return env
