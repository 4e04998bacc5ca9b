"""What `lawkit review` says of a change's engine code, unit by unit (DESIGN section 11).

For every hashed engine file changed between base and head: the units (``units.units_of`` on
the base and head blobs) changed, added or removed, and whether only layout, comments or
docstrings moved, for the file and for each unit. For every law file at head whose newest
``fit`` entry names a footprint: its verdict against the engine at head, and the units behind
it. The footprint file is read from git objects at head, like everything else a review reads:
a footprint the change does not commit (or commits with other bytes than the fit named) makes
the verdict ``unknown``. With ``--require untouched``, every law file at head must have the
verdict ``untouched``; any other (``unknown`` included, so a law file without a footprint too)
is a finding.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import src_digest
from lawkit.config import Workspace
from lawkit.footprint.trees import SourceTree
from lawkit.footprint.units import Unit, layout_only, units_of
from lawkit.keying.footprints import FileVerdict, failing, fit_binding, verdicts_of
from lawkit.keying.review import gitobjects
from lawkit.keying.review.lawchange import Finding

_Selection = list[tuple[bytes, src_digest.TreeEntry]]


@dataclass(frozen=True)
class UnitDelta:
    """One unit of an engine file changed, added or removed between base and head."""

    unit: str
    change: str  # "changed" | "added" | "removed"
    layout_only: bool = False

    def to_json(self) -> dict[str, Any]:
        """The unit as one JSON object."""
        return {"unit": self.unit, "change": self.change, "layout_only": self.layout_only}

    def text(self) -> str:
        """`changed  Runner.run`, with `(layout only)` when only layout moved."""
        return f"{self.change:<8} {self.unit}" + ("  (layout only)" if self.layout_only else "")


@dataclass(frozen=True)
class EngineFileUnits:
    """An engine file changed, added or removed, and its units that did."""

    path: str  # workspace-relative, as review shows it
    how: str  # "changed" | "added" | "removed"
    layout_only: bool
    units: tuple[UnitDelta, ...]

    def summary(self) -> str:
        """`1 unit changed: a, b`, or that only layout, comments or docstrings moved."""
        if self.how == "changed" and self.layout_only:
            return "layout, comments or docstrings only"
        n = len(self.units)
        return f"{n} unit{'' if n == 1 else 's'} {self.how}" if self.how != "changed" else \
            f"{n} unit{'' if n == 1 else 's'} changed, added or removed"

    def to_json(self) -> dict[str, Any]:
        """The file as one JSON object."""
        return {"path": self.path, "change": self.how, "layout_only": self.layout_only,
                "units": [u.to_json() for u in self.units]}


def engine_units(repo: gitobjects.RepoPaths, base_sel: _Selection, head_sel: _Selection,
                 blobs: Mapping[str, bytes]) -> tuple[EngineFileUnits, ...]:
    """The units of every hashed engine file that differs between base and head."""
    base = {os.fsdecode(rel): e.oid for rel, e in base_sel}
    head = {os.fsdecode(rel): e.oid for rel, e in head_sel}
    out = []
    for rel in sorted(base.keys() | head.keys()):
        old, new = base.get(rel), head.get(rel)
        if old == new:
            continue
        shown = repo.shown(gitobjects.repo_path(repo.engine, rel))
        if old is None:
            assert new is not None
            deltas = tuple(UnitDelta(u.qualname, "added") for u in units_of(blobs[new]))
            out.append(EngineFileUnits(shown, "added", False, deltas))
        elif new is None:
            deltas = tuple(UnitDelta(u.qualname, "removed") for u in units_of(blobs[old]))
            out.append(EngineFileUnits(shown, "removed", False, deltas))
        else:
            deltas = _unit_deltas(units_of(blobs[old]), units_of(blobs[new]))
            # The units partition the file (a body lists its members' names), so the file moved
            # only layout when each unit that differs did, and none was added or removed.
            layout = all(d.change == "changed" and d.layout_only for d in deltas)
            out.append(EngineFileUnits(shown, "changed", layout, deltas))
    return tuple(out)


def _unit_deltas(old: list[Unit], new: list[Unit]) -> tuple[UnitDelta, ...]:
    before = {u.qualname: u for u in old}
    after = {u.qualname: u for u in new}
    deltas = []
    for unit in new:
        was = before.get(unit.qualname)
        if was is None:
            deltas.append(UnitDelta(unit.qualname, "added"))
        elif was.digest != unit.digest:
            deltas.append(UnitDelta(unit.qualname, "changed", layout_only(was.data, unit.data)))
    deltas += [UnitDelta(u.qualname, "removed") for u in old if u.qualname not in after]
    return tuple(deltas)


def head_verdicts(ws: Workspace, repo: gitobjects.RepoPaths, head_commit: str, head: str,
                  head_laws: Mapping[str, src_digest.TreeEntry], blobs: Mapping[str, bytes],
                  base_sel: _Selection, head_sel: _Selection, head_digest: str,
                  require: str | None) -> tuple[tuple[FileVerdict, ...], tuple[Finding, ...]]:
    """Each law file's verdict at head: those naming a footprint (every one with `require`),
    and the findings `require` makes."""
    files = []
    for path in sorted(head_laws):
        raw = blobs.get(head_laws[path].oid)
        shown = repo.shown(path)
        if raw is not None and (require is not None or fit_binding(raw, shown) is not None):
            files.append((shown, raw))
    if not files:
        return (), ()
    target = SourceTree(head_digest, {os.fsdecode(rel): blobs[e.oid] for rel, e in head_sel},
                        f"revision {head}")
    at_base = {os.fsdecode(rel): blobs[e.oid] for rel, e in base_sel}

    def read(rel: str) -> bytes | None:
        """A file of the workspace (by its path from the workspace root) at head."""
        path = posixpath.normpath(gitobjects.repo_path(repo.workspace, rel))
        if path.startswith(("../", "/")) or path in ("..", "."):
            return None  # outside the repository: no git object holds it
        entries = [e for e in gitobjects.list_tree(repo.top, head_commit, [path])
                   if e.path.decode("utf-8", "surrogateescape") == path and e.mode != "120000"]
        return gitobjects.read_blobs(repo.top, [entries[0].oid])[entries[0].oid] \
            if entries else None

    def old_source(relpath: str, sha256: str) -> bytes | None:
        """The recorded bytes of an engine file: the base's blob when it is that, else history."""
        data = at_base.get(relpath)
        if data is not None and hashlib.sha256(data).hexdigest() == sha256:
            return data
        return history(relpath, sha256)

    from lawkit.footprint.history import git_old_source

    history = git_old_source(ws.digest)
    verdicts = verdicts_of(ws, files, target, read, old_source)
    shown_verdicts = [_shown_paths(v, repo) for v in verdicts if v.footprint is not None]
    findings = tuple(
        Finding("footprint", f"--require {require}: footprint verdict {v.summary()}", v.path)
        for v in failing(verdicts, require))
    return tuple(shown_verdicts), findings


def _shown_paths(verdict: FileVerdict, repo: gitobjects.RepoPaths) -> FileVerdict:
    """The verdict with its units' engine paths shown from the workspace root."""
    import dataclasses

    if verdict.diff is None:
        return verdict
    units = tuple(dataclasses.replace(u, path=repo.shown(gitobjects.repo_path(repo.engine,
                                                                              u.path)))
                  for u in verdict.diff.units)
    return dataclasses.replace(verdict, diff=dataclasses.replace(verdict.diff, units=units))


def grouped(verdicts: Sequence[FileVerdict]) -> list[tuple[str, FileVerdict]]:
    """One verdict per distinct footprint compared (the first law file naming it), by path."""
    seen: dict[str, FileVerdict] = {}
    for v in verdicts:
        if v.footprint is not None and v.diff is not None and v.footprint not in seen:
            seen[v.footprint] = v
    return sorted(seen.items())
