"""`lawkit review`: a reviewer's checks of a law-changing change, from git objects alone.

`review(ws, base, head)` digests each revision with its own workspace config, as git holds it
there (`lawkit.keying.review.configs`: a change to the digest settings or the laws folder is a
finding, listed first), classifies every law file that differs between the two revisions
(`lawkit.keying.review.lawchange` says how; a removed one is a finding, and so is no law file
at head), verifies that each change is explained by the provenance it appends and that every
law file at head names the engine digest at head, lists the hashed engine files that changed
(what the re-keys vouch cannot move host time) and the files in hashed packages that no digest
hashes, and with `merge_with` computes the engine digest after merging head with another
revision (the laws go stale on merge when it differs). Nothing is checked out: one `git
cat-file --batch-check` naming each revision's config file and one `--batch` reading them, one
`git ls-tree` per tree and one `git cat-file --batch` for every blob needed
(`lawkit.keying.review.gitobjects`).

A conflicted merge is a finding, not an error: the change itself is fine to review, but it cannot
land as it is. The merged digest is still given when no conflicted path is hashed.
"""

from __future__ import annotations

import os
import posixpath
from collections import Counter
from collections.abc import Mapping, Sequence
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
    from lawkit.footprint.envverdict import EnvSpec
    from lawkit.footprint.require import Require
    from lawkit.keying.footprints import FileVerdict, LawVerdict
    from lawkit.keying.review.configs import ConfigChange
    from lawkit.keying.review.footprints import EngineFileUnits, NotHashed

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
    laws: tuple[LawVerdict, ...] = ()
    """The verdict at head of each law of those files (of every law file, with `require`)."""
    footprint_findings: tuple[Finding, ...] = ()
    require: Require | None = None
    """The re-key policy the laws at head were held to (`lawkit.footprint.require`)."""
    config: tuple[ConfigChange, ...] = ()
    """The digest fields and `laws` that differ between the config at base and at head."""
    config_findings: tuple[Finding, ...] = ()
    """The config's findings and `check`'s rules at head (no law files there)."""
    not_hashed: tuple[NotHashed, ...] = ()
    """Files inside a hashed package's folder, not hashed, that the change touches."""

    @property
    def findings(self) -> list[Finding]:
        """Every finding: the config's first, then the files' in path order, then the merge's,
        then the footprints'."""
        out = list(self.config_findings)
        out += [f for review in self.files for f in review.findings]
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
            "footprints": [{**v.to_json(), **({"environment": v.diff.env.to_json()}
                                              if v.diff is not None and v.diff.env is not None
                                              and v.diff.env.source is not None else {})}
                           for v in self.footprints],
            "laws": [law.to_json() for law in self.laws],
            "require": None if self.require is None else self.require.level,
            "config": [c.to_json() for c in self.config],
            "not_hashed": [n.to_json() for n in self.not_hashed],
            "findings": [_finding_json(f) for f in self.findings],
        }


def _revision_json(rev: Revision) -> dict[str, Any]:
    return {"rev": rev.rev, "commit": rev.commit, "digest": rev.digest}


def _finding_json(finding: Finding) -> dict[str, Any]:
    return {"kind": finding.kind, "path": finding.path, "line": finding.line,
            "message": finding.message}


def review(ws: Workspace, base: str, head: str = "HEAD",
           merge_with: str | None = None, require: str | None = None,
           env: EnvSpec | None = None) -> ReviewReport:
    """Classify and verify every law file changed from `base` to `head`, from git objects.

    Each side is read and digested with its own workspace config (`configs`). Under a policy
    (`require`: "untouched" or "startup"; else the stricter of the base's and the head's
    `[rekey] require`), a law at head whose footprint verdict it does not pass is a finding
    (`lawkit.keying.review.footprints`), and so is a change to the evidence the verdicts
    stand on: the config's environment or python, the lock file or manifest it names, an
    ``env`` clause the change appends. With `env` naming a target environment, each
    footprint's environment is compared with it, and counts in the laws' verdicts.
    """
    from lawkit.footprint.require import Require
    from lawkit.keying.review import configs, footprints

    Require.of(require)  # a bad value fails before git is asked anything
    top = gitobjects.toplevel(ws)
    base_commit = gitobjects.resolve_commit(top, base, "base")
    head_commit = gitobjects.resolve_commit(top, head, "head")
    merged = other = None
    treeishes = {"base": base_commit, "head": head_commit}
    if merge_with is not None:
        other = gitobjects.resolve_commit(top, merge_with, "--merge-with")
        merged = gitobjects.merge_tree(top, head_commit, other, merge_with)
        # A conflicted config has no merged content yet (the conflict is a finding): the
        # merge is digested with the head's.
        if not configs.repo_paths(ws, top) & set(merged.conflicts):
            treeishes["merge"] = merged.tree
    at = configs.at_revisions(ws, top, treeishes)
    at.setdefault("merge", at["head"])
    policy = Require.of(require) or configs.policy(at["base"].ws, at["head"].ws)
    config_changes = configs.changes(at["base"].ws, at["head"].ws)
    # A submodule in the engine is hashed as its files at the recorded commit (docs/digest.md).
    sources: dict[str, str | bytes] = {}
    base_side = _side(top, at["base"].ws, base_commit, sources)
    head_side = _side(top, at["head"].ws, head_commit, sources)
    merge_side = _side(top, at["merge"].ws, merged.tree, sources, laws=False) \
        if merged else None
    cfg, repo = head_side.ws.digest, head_side.repo
    base_laws = law_entries(base_side.tree, base_side.repo.laws)
    head_laws = law_entries(head_side.tree, repo.laws)
    changed = {p for p in base_laws.keys() | head_laws.keys()
               if identity(base_laws.get(p)) != identity(head_laws.get(p))}

    # One cat-file for every blob of the review; identical blobs (one id) are read once. A law
    # blob over the law-file cap is refused by its size, unread: a 2 GiB blob under laws/ costs
    # nothing.
    law_oids = [e.oid for e in head_laws.values() if blob_needed(e)]
    law_oids += [e.oid for p, e in base_laws.items() if p in changed and blob_needed(e)]
    sizes = gitobjects.blob_sizes(top, law_oids)
    too_big = {oid: size for oid, size in sizes.items() if size > lawbytes.MAX_BYTES}
    wanted = [oid for oid in law_oids if oid not in too_big]
    sides = [s for s in (base_side, head_side, merge_side) if s is not None]
    engine_oids = [e.oid for side in sides for _, e in side.sel]
    wanted += [oid for oid in engine_oids if oid not in sources]
    blobs = gitobjects.read_blobs(top, wanted)
    blobs.update(gitobjects.submodule_blobs(sources, (o for o in engine_oids if o in sources)))

    base_manifest = src_digest.manifest_from_blobs(base_side.sel, blobs)
    head_manifest = src_digest.manifest_from_blobs(head_side.sel, blobs)
    if not len(head_manifest):
        raise LawkitError(
            f"no engine file at head ({head}): nothing matches include {list(cfg.include)} "
            f"under packages {list(cfg.packages)} in {ws.rel(cfg.root)}: "
            f"{ws.advice('check [tool.lawkit.digest] root and packages, or --engine')}")
    head_digest = head_manifest.digest(cfg.length)
    base_digest = base_manifest.digest(base_side.ws.digest.length) if len(base_manifest) \
        else None

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
    if merged is not None and merge_with is not None and other is not None and merge_side:
        merge_review = _merge_review(head_side, merge_side, merge_with, other, merged, blobs,
                                     head_manifest)
    not_hashed = _not_hashed(base_side, head_side)
    evidence = footprints.Evidence(top, repo, base_commit, head_commit)
    footprints.check_fits(files, evidence, cfg.key)
    verdicts, law_verdicts, footprint_findings = footprints.head_verdicts(
        head_side.ws, evidence, head, head_laws, blobs, base_side.files(blobs),
        head_side.files(blobs), head_digest, not_hashed, policy, env)
    found = configs.findings(config_changes, at["base"], at["head"])
    if policy is not None:
        found += configs.environment_findings(policy, top, at["base"], at["head"],
                                              (base_commit, head_commit))
        for r in files:
            for line in r.env_rekeys:
                r.add("environment", f"{policy.said()}: the change appends a rekey entry "
                      "accepting an environment: a change cannot vouch for itself; land the "
                      "acceptance (lawkit rekey --accept-env) in a change of its own", line)
    if not head_laws:
        found.append(Finding("no-laws", f"no law files at head in the laws folder "
                             f"{ws.rel(head_side.ws.laws)} (every *.yaml and *.yml below it is "
                             "one): an empty laws folder is an error, not a pass; restore the "
                             "law files, or point [tool.lawkit] laws at them"))
    return ReviewReport(
        key=cfg.key,
        base=Revision(base, base_commit, base_digest),
        head=Revision(head, head_commit, head_digest),
        files=tuple(files),
        unchanged=unchanged,
        engine=_engine_changes(base_side, head_side, base_manifest, head_manifest),
        merge=merge_review,
        engine_units=footprints.engine_units(base_side.oids(), head_side.oids(), blobs),
        footprints=verdicts,
        laws=law_verdicts,
        footprint_findings=footprint_findings,
        require=policy,
        config=tuple(config_changes),
        config_findings=tuple(found),
        not_hashed=not_hashed,
    )


@dataclass(frozen=True)
class _Side:
    """One revision as the review reads it: its workspace config, where its laws and engine lie
    in the repository, its tree below them, and the engine files its digest hashes."""

    ws: Workspace
    repo: gitobjects.RepoPaths
    tree: list[src_digest.TreeEntry]
    sel: _Selection

    @property
    def packages(self) -> list[str]:
        """The repository path of each hashed package's folder."""
        return [gitobjects.repo_path(self.repo.engine, p.decode("utf-8", "surrogateescape"))
                for p in src_digest.normalize_packages(self.ws.digest.packages)]

    def shown(self, rel: bytes | str) -> str:
        """An engine file's path (from the digest root) as the review shows it."""
        return self.repo.shown(gitobjects.repo_path(self.repo.engine, os.fsdecode(rel)))

    def oids(self) -> dict[str, str]:
        """The blob of each hashed engine file, by the path shown."""
        return {self.shown(rel): e.oid for rel, e in self.sel}

    def files(self, blobs: Mapping[str, bytes]) -> dict[str, bytes]:
        """The bytes of each hashed engine file, by its path from the digest root."""
        return {os.fsdecode(rel): blobs[e.oid] for rel, e in self.sel}


def _side(top: str, ws: Workspace, treeish: str, sources: dict[str, str | bytes], *,
          laws: bool = True) -> _Side:
    """A revision's tree below its laws folder (unless `laws` is false) and engine packages,
    each submodule there replaced by its files; `sources` gets where their blobs are read."""
    repo = gitobjects.locate(ws, top)
    bare = _Side(ws, repo, [], [])
    paths = [repo.laws, *bare.packages] if laws else bare.packages
    tree = gitobjects.with_submodules(top, treeish, gitobjects.list_tree(top, treeish, paths),
                                      sources, bare.packages)
    return _Side(ws, repo, tree, _hashed(ws.digest, repo, tree))


def _hashed(cfg: DigestConfig, repo: gitobjects.RepoPaths,
            entries: Sequence[src_digest.TreeEntry]) -> _Selection:
    return src_digest.select_tree(entries, cfg.packages, cfg.include, cfg.exclude, repo.engine)


def _engine_changes(old_side: _Side, new_side: _Side, old: src_digest.Manifest,
                    new: src_digest.Manifest) -> EngineChanges:
    """The hashed engine files added, removed and changed, by the path shown: each side's
    files from its own digest root."""
    before = {old_side.shown(e.relpath): e.sha256 for e in old.entries}
    after = {new_side.shown(e.relpath): e.sha256 for e in new.entries}
    return EngineChanges(tuple(sorted(after.keys() - before.keys())),
                         tuple(sorted(before.keys() - after.keys())),
                         tuple(sorted(p for p, h in after.items()
                                      if p in before and before[p] != h)))


def _not_hashed(base: _Side, head: _Side) -> tuple[NotHashed, ...]:
    """The files inside a hashed package's folder, at base or at head, that the side's digest
    does not hash and that the change adds, removes or changes (below the laws folder: none)."""
    from lawkit.keying.review.footprints import NotHashed

    def unhashed(side: _Side) -> dict[str, str]:
        hashed = {e.path for _rel, e in side.sel}
        folders = side.packages
        return {e.path.decode("utf-8", "surrogateescape"): e.oid for e in side.tree
                if e.path not in hashed and e.mode not in ("160000", "040000")
                and any(gitobjects.below(f, e.path.decode("utf-8", "surrogateescape"))
                        for f in folders)
                and not gitobjects.below(side.repo.laws, e.path.decode("utf-8",
                                                                       "surrogateescape"))}

    old, new = unhashed(base), unhashed(head)
    out = []
    for path in sorted(old.keys() | new.keys()):
        how = "added" if path not in old else "removed" if path not in new else \
            "changed" if old[path] != new[path] else None
        if how is not None:
            rel = posixpath.relpath(path, head.repo.engine) if head.repo.engine else path
            out.append(NotHashed(head.repo.shown(path), how, rel))
    return tuple(out)


def _merge_review(head: _Side, merge: _Side, rev: str, commit: str,
                  merged: gitobjects.MergeTree, blobs: dict[str, bytes],
                  head_manifest: src_digest.Manifest) -> MergeReview:
    """The merge's digest (with the merged tree's own config) against the head's."""
    findings = []
    head_digest = head_manifest.digest(head.ws.digest.length)
    repo = merge.repo
    conflicts = tuple(repo.shown(p) for p in merged.conflicts)
    if conflicts:
        findings.append(Finding("merge-conflict", f"merging {rev} into the head conflicts in "
                                f"{', '.join(conflicts)}: rebase the change on {rev}, resolve "
                                "the conflicts and review again"))
    # A conflicted hashed file has no merged content yet, so the merged digest is unknown.
    as_entries = [src_digest.TreeEntry("100644", "", p.encode("utf-8", "surrogateescape"))
                  for p in merged.conflicts]
    if _hashed(merge.ws.digest, repo, as_entries):
        return MergeReview(rev, commit, merged.tree, None, conflicts, EngineChanges(),
                           tuple(findings))
    merge_manifest = src_digest.manifest_from_blobs(merge.sel, blobs)
    moved = _engine_changes(head, merge, head_manifest, merge_manifest)
    digest = merge_manifest.digest(merge.ws.digest.length) if len(merge_manifest) else None
    if digest != head_digest:
        files = ", ".join(f"{how} {path}" for how, path in moved.lines())
        now = f"digests to {digest}" if digest else "has no hashed file"
        findings.append(Finding("merge-stale", f"the laws will be stale once merged with {rev}: "
                                f"the engine then {now}, not {head_digest} as at head; moved by "
                                f"{files}: rebase on {rev}, then re-key or refit"))
    return MergeReview(rev, commit, merged.tree, digest, conflicts, moved, tuple(findings))
