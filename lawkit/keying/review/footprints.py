"""What `lawkit review` says of a change's engine code, unit by unit (docs/footprints.md).

For every hashed engine file changed between base and head: the units (``units.units_of`` on
the base and head blobs) changed, added or removed, and whether only layout, comments or
docstrings moved, for the file and for each unit. For every law file at head whose ``fit``
entries name a footprint: its verdict against the engine at head, each law's on the footprint
of the fit that fitted it, and the units behind them. The footprint file is read from git
objects at head, like everything else a review reads: a footprint the change does not commit
(or commits with other bytes than the fit named) makes the verdict ``unknown``. With
``--require untouched``, every law file at head must have the verdict ``untouched``; any other
(``unknown`` included, so a law file without a footprint too) is a finding.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import posixpath
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import src_digest
from lawkit.config import Workspace
from lawkit.footprint import document
from lawkit.footprint.document import Footprint, decode_footprint
from lawkit.footprint.errors import FootprintError
from lawkit.footprint.lawverdict import env_option, law_verdict, worst_verdict
from lawkit.footprint.trees import SourceTree
from lawkit.footprint.units import codes_of, layout_only, units_of
from lawkit.footprint.verdict import FootprintDiff
from lawkit.keying.footprints import (
    FileVerdict,
    LawVerdict,
    fit_footprints,
    verdicts_of,
)
from lawkit.keying.review import gitobjects
from lawkit.keying.review.lawchange import AddedFit, FileReview, Finding, identity

if TYPE_CHECKING:
    from lawkit.footprint.envverdict import EnvSpec
    from lawkit.footprint.require import Require

_SYMLINK = "120000"


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
        """`2 units changed, 1 added`, or that only layout, comments or docstrings moved."""
        if self.how == "changed" and self.layout_only:
            return "layout, comments or docstrings only"
        counts = [(sum(1 for u in self.units if u.change == kind), kind)
                  for kind in ("changed", "added", "removed")]
        parts = [(n, kind) for n, kind in counts if n]
        if not parts:
            return "no unit changed"
        (n, kind), rest = parts[0], parts[1:]
        return ", ".join([f"{n} unit{'' if n == 1 else 's'} {kind}",
                          *(f"{m} {other}" for m, other in rest)])

    def to_json(self) -> dict[str, Any]:
        """The file as one JSON object."""
        return {"path": self.path, "change": self.how, "layout_only": self.layout_only,
                "units": [u.to_json() for u in self.units]}


def engine_units(base: Mapping[str, str], head: Mapping[str, str],
                 blobs: Mapping[str, bytes]) -> tuple[EngineFileUnits, ...]:
    """The units of every hashed engine file that differs between base and head, given as the
    blob of each file by the path shown (each side from its own digest root)."""
    out = []
    for shown in sorted(base.keys() | head.keys()):
        old, new = base.get(shown), head.get(shown)
        if old == new:
            continue
        if old is None:
            assert new is not None
            deltas = tuple(UnitDelta(u.qualname, "added") for u in units_of(blobs[new], path=shown))
            out.append(EngineFileUnits(shown, "added", False, deltas))
        elif new is None:
            deltas = tuple(UnitDelta(u.qualname, "removed")
                           for u in units_of(blobs[old], path=shown))
            out.append(EngineFileUnits(shown, "removed", False, deltas))
        else:
            deltas = _unit_deltas(blobs[old], blobs[new], shown)
            # The units partition the file (a body lists its members' names), so the file moved
            # only layout when each unit that differs did, and none was added or removed.
            layout = all(d.change == "changed" and d.layout_only for d in deltas)
            out.append(EngineFileUnits(shown, "changed", layout, deltas))
    return tuple(out)


def _unit_deltas(old_source: bytes, new_source: bytes, shown: str) -> tuple[UnitDelta, ...]:
    """The units changed, added or removed; a changed unit is layout only when its code in the
    normal form is the same (what a footprint's verdict says of it), or, where either side is
    not valid Python, when its tokens are."""
    old, new = units_of(old_source, path=shown), units_of(new_source, path=shown)
    codes = codes_of(old_source), codes_of(new_source)
    before = {u.qualname: u for u in old}
    after = {u.qualname: u for u in new}
    deltas = []
    for unit in new:
        was = before.get(unit.qualname)
        if was is None:
            deltas.append(UnitDelta(unit.qualname, "added"))
        elif was.digest != unit.digest:
            if codes[0] is not None and codes[1] is not None:
                layout = codes[0].get(unit.qualname) == codes[1].get(unit.qualname)
            else:
                layout = layout_only(was.data, unit.data)
            deltas.append(UnitDelta(unit.qualname, "changed", layout))
    deltas += [UnitDelta(u.qualname, "removed") for u in old if u.qualname not in after]
    return tuple(deltas)


@dataclass(frozen=True)
class NotHashed:
    """A file inside a hashed package's folder that the digest does not hash (a data file, a
    `.pyc`, another extension), added, removed or changed: code there can run unseen."""

    path: str
    """As the review shows it (from the workspace root)."""
    change: str  # "added" | "removed" | "changed"
    relpath: str
    """From the engine root at head, as a footprint's `unhashed` lists it."""

    def to_json(self) -> dict[str, str]:
        """The file as one JSON object."""
        return {"path": self.path, "change": self.change}


class Evidence:
    """The footprint files a review reads, by their path from the workspace root: their bytes
    at head, and whether the change adds or replaces them. One `ls-tree` per side for all the
    footprints the law files at head and the fit entries the change adds name, their sizes
    asked before any is read; a symlink, a path outside the repository or a blob over
    `document.MAX_FILE_BYTES` is no footprint (why: `problem`)."""

    def __init__(self, top: str, repo: gitobjects.RepoPaths, base_commit: str,
                 head_commit: str) -> None:
        self._top, self.repo = top, repo
        self._commits = (base_commit, head_commit)
        self._problems: dict[str, str] = {}
        self._head: dict[str, bytes] = {}
        self._changed: dict[str, bool] = {}
        self._decoded: dict[str, Footprint | None] = {}

    def prefetch(self, rels: Iterable[object]) -> None:
        """Read the footprints at these paths (non-strings are skipped) in one batch."""
        self._load([rel for rel in rels if isinstance(rel, str)])

    def read(self, rel: str) -> bytes | None:
        """The footprint's bytes at head, or None (see `problem`)."""
        self._load([rel])
        return self._head.get(rel)

    def problem(self, rel: str) -> str | None:
        """Why head holds no footprint at `rel` that a review reads, or None."""
        self._load([rel])
        return self._problems.get(rel)

    def changed(self, rel: str) -> bool:
        """Whether the change adds the footprint, or gives it other bytes than at base."""
        self._load([rel])
        return self._changed.get(rel, False)

    def footprint(self, rel: str) -> Footprint | None:
        """The footprint at head, decoded (None: see `problem`, or it does not decode)."""
        if rel not in self._decoded:
            raw = self.read(rel)
            try:
                self._decoded[rel] = None if raw is None else decode_footprint(raw, shown=rel)
            except FootprintError as exc:
                self._problems[rel] = exc.detail
                self._decoded[rel] = None
        return self._decoded[rel]

    def _load(self, rels: Sequence[str]) -> None:
        todo = {rel: path for rel in dict.fromkeys(rels) if rel not in self._problems
                and rel not in self._head for path in [self._repo_path(rel)]}
        for rel in [r for r, p in todo.items() if p is None]:
            self._problems[rel] = "outside the repository: no git object holds it"
            del todo[rel]
        if not todo:
            return
        paths = list(dict.fromkeys(p for p in todo.values() if p is not None))
        base, head = ({e.path.decode("utf-8", "surrogateescape"): e
                       for e in gitobjects.list_tree(self._top, commit, paths)}
                      for commit in self._commits)
        found = {rel: head.get(p) for rel, p in todo.items() if p is not None}
        sizes = gitobjects.blob_sizes(self._top, [e.oid for e in found.values()
                                                  if e is not None and e.mode != _SYMLINK])
        wanted = []
        for rel, entry in found.items():
            if entry is None:
                self._problems[rel] = "not in git at head"
            elif entry.mode == _SYMLINK:
                self._problems[rel] = "a symlink at head, not a regular file"
            elif sizes[entry.oid] > document.MAX_FILE_BYTES:
                self._problems[rel] = (f"{sizes[entry.oid]:,} bytes at head, over the "
                                       f"{document.MAX_FILE_BYTES >> 20} MiB a footprint may "
                                       "hold")
            else:
                wanted.append(entry.oid)
        data = gitobjects.read_blobs(self._top, wanted)
        for rel, entry in found.items():
            if entry is not None and entry.oid in data:
                self._head[rel] = data[entry.oid]
                old = base.get(todo[rel] or "")
                self._changed[rel] = identity(old) != identity(entry)

    def _repo_path(self, rel: str) -> str | None:
        path = posixpath.normpath(gitobjects.repo_path(self.repo.workspace, rel))
        return None if path.startswith(("../", "/")) or path in ("..", ".") else path


def check_fits(files: Sequence[FileReview], evidence: Evidence, key: str) -> None:
    """A finding on each `fit` entry the change adds whose footprint `fit --footprint` would
    have refused: not at head, other bytes than the entry's sha256, not a footprint, recorded
    on another digest than the fit's captures, or its files not digesting to the digest it
    names (a footprint copied and edited)."""
    evidence.prefetch(f.footprint.get("path") for r in files for f in r.fits
                      if isinstance(f.footprint, Mapping))
    for review in files:
        for fit in review.fits:
            problem = _fit_problem(fit, evidence, key)
            if problem is not None:
                review.add("fit-footprint", f"the fit entry's footprint: {problem}; a fit "
                           "rests only on the footprint of its own capture runs (lawkit fit "
                           "--footprint records it): record it, refit, and commit both",
                           fit.line)


def _fit_problem(fit: AddedFit, evidence: Evidence, key: str) -> str | None:
    bound = fit.footprint
    if bound is None:
        return None
    if not isinstance(bound, Mapping) or not isinstance(bound.get("path"), str) or \
            not isinstance(bound.get("sha256"), str):
        return "not {path, sha256}, as lawkit fit --footprint writes it"
    rel = bound["path"]
    raw = evidence.read(rel)
    if raw is None:
        return f"{rel} is {evidence.problem(rel)}"
    sha = hashlib.sha256(raw).hexdigest()
    if sha != bound["sha256"]:
        return f"{rel} at head has sha256 {sha}, not the {bound['sha256']} the entry names"
    footprint = evidence.footprint(rel)
    if footprint is None:
        return f"{rel} is not a footprint ({evidence.problem(rel)})"
    if footprint.key != key:
        return f"{rel} keys {footprint.key!r}, but the workspace's digest keys {key!r}"
    if footprint.digest != fit.digest:
        return (f"{rel} was recorded on {key}={footprint.digest}, but the entry's captures ran "
                f"on {key}={fit.digest}")
    files = src_digest.Manifest(tuple(src_digest.FileEntry(os.fsencode(p), bytes.fromhex(f.sha256))
                                      for p, f in footprint.files.items()))
    if not len(files) or files.digest(len(footprint.digest)) != footprint.digest:
        return (f"{rel} names {key}={footprint.digest}, but the files it lists do not digest "
                "to it: it was edited after it was recorded")
    return None


def head_verdicts(ws: Workspace, evidence: Evidence, head: str,
                  head_laws: Mapping[str, src_digest.TreeEntry], blobs: Mapping[str, bytes],
                  at_base: Mapping[str, bytes], at_head: Mapping[str, bytes], head_digest: str,
                  not_hashed: Sequence[NotHashed], require: Require | None,
                  env: EnvSpec | None = None,
                  ) -> tuple[tuple[FileVerdict, ...], tuple[LawVerdict, ...],
                             tuple[Finding, ...]]:
    """Each law file's verdict at head (those naming a footprint), each of their laws' (of
    every law file under the policy `require`), and the findings it makes: one per law whose
    verdict it does not pass, naming it. `at_base` and `at_head` hold the hashed engine files
    by their path from the digest root. With ``env`` naming a target environment, the footprints'
    environments count in the verdicts, and under `require` a law moved by the environment is a
    finding of its own per distribution (`environment`), naming the law and the distribution;
    the `footprint` finding is then kept for laws the engine's code moves."""
    files, named = [], []
    repo = evidence.repo
    for path, entry in sorted(head_laws.items()):
        raw = blobs.get(entry.oid)
        shown = repo.shown(path)
        bound = fit_footprints(raw, shown) if raw is not None else []
        if raw is not None and (require is not None or bound):
            files.append((shown, raw))
            named += bound
    if not files:
        return (), (), ()
    evidence.prefetch(named)
    target = SourceTree(head_digest, dict(at_head), f"revision {head}")

    def old_source(relpath: str, sha256: str) -> bytes | None:
        """The recorded bytes of an engine file: the base's blob when it is that, else history."""
        data = at_base.get(relpath)
        if data is not None and hashlib.sha256(data).hexdigest() == sha256:
            return data
        return history(relpath, sha256)

    from lawkit.footprint.history import git_old_source

    history = git_old_source(ws.digest)
    verdicts = verdicts_of(ws, files, lambda: target, evidence.read, old_source, env)
    shown_verdicts = [_shown_paths(v, repo) for v in verdicts if v.footprint is not None]
    by_path = {v.path: v for v in verdicts}
    findings = []
    if require is None:
        return (tuple(shown_verdicts), tuple(law for v in verdicts for law in v.laws), ())
    for law in require.failing(law for v in verdicts for law in v.laws):
        moved = _env_findings(law, by_path[law.file], require)
        if not moved or not require.passes(_code_verdict(law, by_path[law.file])):
            findings.append(Finding("footprint", f"{require.said()}: law {law.name} "
                                    f"({law.target}) is {law.verdict}: footprint verdict "
                                    f"{by_path[law.file].summary()}; "
                                    f"{require.way_on([law.verdict])}", law.file))
        findings += moved
    findings += _self_vouching(verdicts, evidence, not_hashed, require)
    return (tuple(shown_verdicts), tuple(law for v in verdicts for law in v.laws),
            tuple(findings))


def _bases(law: LawVerdict, verdict: FileVerdict) -> list[FootprintDiff]:
    """The diffs of the footprints a law's verdict rests on."""
    return [b.diff for b in verdict.bases if b.path in law.footprints]


def _code_verdict(law: LawVerdict, verdict: FileVerdict) -> str:
    """A law's verdict from the engine's code alone (its environment left out); ``unknown``
    when a footprint it rests on was not compared."""
    diffs = _bases(law, verdict)
    if not diffs or len(diffs) < len(law.footprints):
        return "unknown"
    return worst_verdict(law_verdict(d.regions, d.units, law.target)[1] for d in diffs)


def _env_findings(law: LawVerdict, verdict: FileVerdict, require: Require) -> list[Finding]:
    """Under the policy: one finding per difference of the environment that moves a law past
    it, naming the law and the distribution (or the Python), and one when code from no
    distribution ran."""
    out: dict[str, Finding] = {}
    for diff in _bases(law, verdict):
        env = diff.env
        if env is None or env.source is None:
            continue
        for change in env.changes:
            alone = dataclasses.replace(env, changes=(change,), unpackaged=())
            moved = law_verdict(diff.regions, (), law.target, alone)[1]
            if not require.passes(moved):
                out.setdefault(change.line(), Finding(
                    "environment", f"{require.said()}: law {law.name} ({law.target}) is "
                    f"{moved} in the environment {env.source}: {change.line()}; refit from "
                    "captures taken there, or accept it with lawkit rekey --accept-env "
                    f"{env_option(env.source)}--why TEXT", law.file))
        if env.strict and env.unpackaged:
            line = env.lines()[-1]
            out.setdefault(line, Finding(
                "environment", f"{require.said()}: law {law.name} ({law.target}): {line}",
                law.file))
    return list(out.values())


def _self_vouching(verdicts: Sequence[FileVerdict], evidence: Evidence,
                   not_hashed: Sequence[NotHashed], require: Require) -> list[Finding]:
    """Under the policy: a finding for each footprint a file's verdicts rest on
    that the change adds or replaces, and for each native module such a footprint saw loaded
    (its `unhashed`) that the change touches."""
    out = []
    for v in verdicts:
        for basis in v.bases:
            if evidence.changed(basis.path):
                out.append(Finding("evidence", f"{require.said()}: the verdict rests on the "
                                   f"footprint {basis.path}, which this change adds or replaces: "
                                   "evidence changed with the code, and a change cannot vouch "
                                   "for itself: land the footprint (with the fit it backs) in a "
                                   "change of its own, then review this one against it", v.path))
            native = sorted(n.path for n in not_hashed if n.relpath in basis.recorded.unhashed)
            if native:
                out.append(Finding("unhashed", f"{require.said()}: {', '.join(native)} "
                                   f"changed: a native module the footprint {basis.path} saw "
                                   "loaded, which no digest hashes, so no verdict can say it did "
                                   "not move host time: refit from fresh captures", v.path))
    return out


def _shown_paths(verdict: FileVerdict, repo: gitobjects.RepoPaths) -> FileVerdict:
    """The verdict with its units' engine paths shown from the workspace root."""
    if verdict.diff is None:
        return verdict

    def shown(diff: FootprintDiff) -> FootprintDiff:
        units = tuple(dataclasses.replace(u, path=repo.shown(gitobjects.repo_path(repo.engine,
                                                                                  u.path)))
                      for u in diff.units)
        return dataclasses.replace(diff, units=units)

    return dataclasses.replace(verdict, diff=shown(verdict.diff), bases=tuple(
        dataclasses.replace(b, diff=shown(b.diff)) for b in verdict.bases))


def grouped(verdicts: Sequence[FileVerdict]) -> list[tuple[str, FileVerdict]]:
    """One verdict per distinct footprint compared (the first law file whose laws rest on it,
    with that footprint's diff), by path."""
    seen: dict[str, FileVerdict] = {}
    for v in verdicts:
        for b in v.bases:
            if b.path not in seen:
                seen[b.path] = dataclasses.replace(v, footprint=b.path, diff=b.diff,
                                                   recorded=b.recorded)
    return sorted(seen.items())
