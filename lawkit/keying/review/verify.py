"""`lawkit review`: a reviewer's checks of a law-changing change, from git objects alone.

`review(ws, base, head)` classifies every law file that differs between the two revisions
(`lawkit.keying.review.lawchange` says how),
verifies that each change is explained by the provenance it
appends and that every law file at head names the engine digest at head, lists the hashed engine
files that changed (what the re-keys vouch cannot move host time), and with `merge_with` computes
the engine digest after merging head with another revision (the laws go stale on merge when it
differs). Nothing is checked out: one `git ls-tree` per tree and one `git cat-file --batch` for
every blob needed (`lawkit.keying.review.gitobjects`).

A conflicted merge is a finding, not an error: the change itself is fine to review, but it cannot
land as it is. The merged digest is still given when no conflicted path is hashed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import src_digest
from lawkit.config import DigestConfig, Workspace
from lawkit.errors import LawkitError
from lawkit.keying.review import gitobjects
from lawkit.keying.review.lawchange import (
    Checker,
    FileReview,
    Finding,
    blob_needed,
    identity,
    law_entries,
    load,
)
from lawkit.lawfiles import lawbytes
from lawkit.workers import map_in_workers

if TYPE_CHECKING:
    from lawkit.keying.footprints import FileVerdict
    from lawkit.keying.review.footprints import EngineFileUnits

__all__ = [
    "CLASSES",
    "EngineChanges",
    "FileReview",
    "Finding",
    "MergeReview",
    "ReviewReport",
    "Revision",
    "review",
]

CLASSES = ("rekey", "refit", "adopt", "new", "removed", "hand-edit", "invalid", "forgotten")
"""Every class a law file can get, in report order."""

_Selection = list[tuple[bytes, src_digest.TreeEntry]]


@dataclass(frozen=True)
class Revision:
    """A revision as named, the commit it resolved to, and the engine digest there."""

    rev: str
    commit: str
    digest: str | None

    @property
    def short(self) -> str:
        """The commit id, abbreviated."""
        return self.commit[:10]


@dataclass(frozen=True)
class EngineChanges:
    """Hashed engine files (workspace-relative) added, removed and changed between two trees."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    changed: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.added) + len(self.removed) + len(self.changed)

    def lines(self) -> list[tuple[str, str]]:
        """(how, path) pairs: changed, then added, then removed."""
        return ([("changed", p) for p in self.changed] + [("added", p) for p in self.added]
                + [("removed", p) for p in self.removed])

    def to_json(self) -> dict[str, list[str]]:
        """The three lists."""
        return {"added": list(self.added), "removed": list(self.removed),
                "changed": list(self.changed)}


@dataclass(frozen=True)
class MergeReview:
    """The engine digest after merging head with another revision, and what moves it."""

    rev: str
    commit: str
    tree: str
    digest: str | None
    conflicts: tuple[str, ...]
    moved: EngineChanges
    findings: tuple[Finding, ...]


@dataclass(frozen=True)
class ReviewReport:
    """The whole review: per-file classes and verdicts, the engine changes, the merge check."""

    key: str
    base: Revision
    head: Revision
    files: tuple[FileReview, ...]
    unchanged: int
    engine: EngineChanges
    merge: MergeReview | None = None
    engine_units: tuple[EngineFileUnits, ...] = ()
    """The units of each engine file changed (`lawkit.keying.review.footprints`)."""
    footprints: tuple[FileVerdict, ...] = ()
    """The footprint verdict at head of each law file that names a footprint."""
    footprint_findings: tuple[Finding, ...] = ()
    require: str | None = None

    @property
    def findings(self) -> list[Finding]:
        """Every finding: the files' in path order, then the merge's, then `--require`'s."""
        out = [f for review in self.files for f in review.findings]
        return out + list(self.merge.findings if self.merge else ()) + \
            list(self.footprint_findings)

    @property
    def exit_code(self) -> int:
        """0 when everything verifies, 1 with findings."""
        return 1 if self.findings else 0

    def counts(self) -> dict[str, int]:
        """How many law files got each class (every class listed), and how many are unchanged."""
        seen = Counter(review.kind for review in self.files)
        return {**{kind: seen[kind] for kind in CLASSES}, "unchanged": self.unchanged}

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON document."""
        merge = None
        if self.merge is not None:
            m = self.merge
            merge = {"rev": m.rev, "commit": m.commit, "tree": m.tree, "digest": m.digest,
                     "stale": any(f.kind == "merge-stale" for f in m.findings),
                     "conflicts": list(m.conflicts), "moved": m.moved.to_json(),
                     "findings": [_finding_json(f) for f in m.findings]}
        return {
            "verdict": "findings" if self.findings else "ok",
            "key": self.key,
            "base": _revision_json(self.base),
            "head": _revision_json(self.head),
            "counts": self.counts(),
            "files": [{"path": r.path, "class": r.kind, "from": r.key_from, "to": r.key_to,
                       "touched": r.touched, "verdict": "ok" if r.ok else "finding",
                       "why": r.whys, "refs": r.refs,
                       "findings": [_finding_json(f) for f in r.findings]} for r in self.files],
            "engine": self.engine.to_json(),
            "merge": merge,
            "engine_units": [f.to_json() for f in self.engine_units],
            "footprints": [v.to_json() for v in self.footprints],
            "require": self.require,
            "findings": [_finding_json(f) for f in self.findings],
        }


def _revision_json(rev: Revision) -> dict[str, Any]:
    return {"rev": rev.rev, "commit": rev.commit, "digest": rev.digest}


def _finding_json(finding: Finding) -> dict[str, Any]:
    return {"kind": finding.kind, "path": finding.path, "line": finding.line,
            "message": finding.message}


def review(ws: Workspace, base: str, head: str = "HEAD",
           merge_with: str | None = None, require: str | None = None) -> ReviewReport:
    """Classify and verify every law file changed from `base` to `head`, from git objects.

    With `require` ("untouched"), a law file at head whose footprint verdict differs is a
    finding (`lawkit.keying.review.footprints`).
    """
    from lawkit.keying.footprints import check_require
    from lawkit.keying.review import footprints

    check_require(require)
    repo = gitobjects.locate(ws)
    top, cfg = repo.top, ws.digest
    base_commit = gitobjects.resolve_commit(top, base, "base")
    head_commit = gitobjects.resolve_commit(top, head, "head")
    merged = other = None
    if merge_with is not None:
        other = gitobjects.resolve_commit(top, merge_with, "--merge-with")
        merged = gitobjects.merge_tree(top, head_commit, other, merge_with)

    engine_paths = [gitobjects.repo_path(repo.engine, p.decode("utf-8", "surrogateescape"))
                    for p in src_digest.normalize_packages(cfg.packages)]
    base_tree = gitobjects.list_tree(top, base_commit, [repo.laws, *engine_paths])
    head_tree = gitobjects.list_tree(top, head_commit, [repo.laws, *engine_paths])
    merge_tree = gitobjects.list_tree(top, merged.tree, engine_paths) if merged else []
    # A submodule in the engine is hashed as its files at the recorded commit (DESIGN.md §4).
    sources: dict[str, str | bytes] = {}
    base_tree = gitobjects.with_submodules(top, base_commit, base_tree, sources, engine_paths)
    head_tree = gitobjects.with_submodules(top, head_commit, head_tree, sources, engine_paths)
    if merged:
        merge_tree = gitobjects.with_submodules(top, merged.tree, merge_tree, sources,
                                                engine_paths)
    base_sel, head_sel = _hashed(cfg, repo, base_tree), _hashed(cfg, repo, head_tree)
    merge_sel = _hashed(cfg, repo, merge_tree)
    base_laws, head_laws = law_entries(base_tree, repo.laws), law_entries(head_tree, repo.laws)
    changed = {p for p in base_laws.keys() | head_laws.keys()
               if identity(base_laws.get(p)) != identity(head_laws.get(p))}

    # One cat-file for every blob of the review; identical blobs (one id) are read once. A law
    # blob over the law-file cap is refused by its size, unread: a 2 GiB blob under laws/ costs
    # nothing (issue 14 item 7).
    law_oids = [e.oid for e in head_laws.values() if blob_needed(e)]
    law_oids += [e.oid for p, e in base_laws.items() if p in changed and blob_needed(e)]
    sizes = gitobjects.blob_sizes(top, law_oids)
    too_big = {oid: size for oid, size in sizes.items() if size > lawbytes.MAX_BYTES}
    wanted = [oid for oid in law_oids if oid not in too_big]
    engine_oids = [e.oid for sel in (base_sel, head_sel, merge_sel) for _, e in sel]
    wanted += [oid for oid in engine_oids if oid not in sources]
    blobs = gitobjects.read_blobs(top, wanted)
    blobs.update(gitobjects.submodule_blobs(sources, (o for o in engine_oids if o in sources)))

    base_manifest = src_digest.manifest_from_blobs(base_sel, blobs)
    head_manifest = src_digest.manifest_from_blobs(head_sel, blobs)
    if not len(head_manifest):
        raise LawkitError(
            f"no engine file at head ({head}): nothing matches include {list(cfg.include)} "
            f"under packages {list(cfg.packages)} in {ws.rel(cfg.root)}: "
            f"{ws.advice('check [tool.lawkit.digest] root and packages, or --engine')}")
    head_digest = head_manifest.digest(cfg.length)
    base_digest = base_manifest.digest(cfg.length) if len(base_manifest) else None

    checker = Checker(key=cfg.key, head_digest=head_digest, base_rev=base,
                      base_digest=base_digest)
    def judge(path: str) -> FileReview | None:
        name = repo.shown(path)
        at_head = load(head_laws.get(path), blobs, name, cfg.key, too_big)
        if path in changed:
            return checker.classify(name, load(base_laws.get(path), blobs, name, cfg.key,
                                               too_big), at_head)
        assert at_head is not None
        return checker.untouched(name, at_head)  # None: untouched and current

    # Parsing dominates a large review (about 1 ms a file): share it with forked workers.
    judged = map_in_workers(judge, sorted(base_laws.keys() | head_laws.keys()))
    files = sorted((r for r in judged if r is not None), key=lambda r: r.path)
    unchanged = judged.count(None)

    merge_review = None
    if merged is not None and merge_with is not None and other is not None:
        merge_review = _merge_review(cfg, repo, merge_with, other, merged, merge_sel, blobs,
                                     head_manifest)
    verdicts, footprint_findings = footprints.head_verdicts(
        ws, repo, head_commit, head, head_laws, blobs, base_sel, head_sel, head_digest, require)
    return ReviewReport(
        key=cfg.key,
        base=Revision(base, base_commit, base_digest),
        head=Revision(head, head_commit, head_digest),
        files=tuple(files),
        unchanged=unchanged,
        engine=_engine_changes(repo, base_manifest, head_manifest),
        merge=merge_review,
        engine_units=footprints.engine_units(repo, base_sel, head_sel, blobs),
        footprints=verdicts,
        footprint_findings=footprint_findings,
        require=require,
    )


def _hashed(cfg: DigestConfig, repo: gitobjects.RepoPaths,
            entries: Sequence[src_digest.TreeEntry]) -> _Selection:
    return src_digest.select_tree(entries, cfg.packages, cfg.include, cfg.exclude, repo.engine)


def _engine_changes(repo: gitobjects.RepoPaths, old: src_digest.Manifest,
                    new: src_digest.Manifest) -> EngineChanges:
    diff = src_digest.diff_manifests(old, new)

    def shown(paths: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(repo.shown(gitobjects.repo_path(repo.engine, p)) for p in paths)

    return EngineChanges(shown(diff.added), shown(diff.removed), shown(diff.changed))


def _merge_review(cfg: DigestConfig, repo: gitobjects.RepoPaths, rev: str, commit: str,
                  merged: gitobjects.MergeTree, merge_sel: _Selection, blobs: dict[str, bytes],
                  head_manifest: src_digest.Manifest) -> MergeReview:
    findings = []
    head_digest = head_manifest.digest(cfg.length)
    conflicts = tuple(repo.shown(p) for p in merged.conflicts)
    if conflicts:
        findings.append(Finding("merge-conflict", f"merging {rev} into the head conflicts in "
                                f"{', '.join(conflicts)}: rebase the change on {rev}, resolve "
                                "the conflicts and review again"))
    # A conflicted hashed file has no merged content yet, so the merged digest is unknown.
    as_entries = [src_digest.TreeEntry("100644", "", p.encode("utf-8", "surrogateescape"))
                  for p in merged.conflicts]
    if _hashed(cfg, repo, as_entries):
        return MergeReview(rev, commit, merged.tree, None, conflicts, EngineChanges(),
                           tuple(findings))
    merge_manifest = src_digest.manifest_from_blobs(merge_sel, blobs)
    moved = _engine_changes(repo, head_manifest, merge_manifest)
    digest = merge_manifest.digest(cfg.length) if len(merge_manifest) else None
    if digest != head_digest:
        files = ", ".join(f"{how} {path}" for how, path in moved.lines())
        now = f"digests to {digest}" if digest else "has no hashed file"
        findings.append(Finding("merge-stale", f"the laws will be stale once merged with {rev}: "
                                f"the engine then {now}, not {head_digest} as at head; moved by "
                                f"{files}: rebase on {rev}, then re-key or refit"))
    return MergeReview(rev, commit, merged.tree, digest, conflicts, moved, tuple(findings))
