"""The workspace's engine digest: from the work tree, from a git revision, and why they differ."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import src_digest
from lawkit.config import DigestConfig, Workspace
from lawkit.errors import GitError, LawkitError


@dataclass(frozen=True)
class DigestReport:
    """A digest with the manifest it covers and, on request, how the work tree differs from HEAD."""

    key: str
    digest: str
    manifest: src_digest.Manifest
    root: str
    rev: str | None
    versus_head: src_digest.ManifestDiff | None = None
    cannot_explain: str | None = None
    """Why `--explain` could not compare with HEAD (no git, no repository), or None."""
    submodules: tuple[tuple[str, str], ...] = ()
    """The submodules inside the hashed packages at HEAD (path, recorded commit), for
    `--explain` to name their files as theirs, not as untracked."""

    def explanation_lines(self) -> list[str]:
        """One line per file that makes the work tree's digest differ from HEAD's."""
        diff = self.versus_head
        if diff is None:
            return []
        if diff.is_empty:
            return ["the work tree hashes the same files as HEAD"]
        lines = [self._submodule_line("edited", p, "differs from") or
                 f"edited     {p}  (differs from HEAD: commit it, or check git attributes that "
                 "convert bytes on checkout)" for p in diff.changed]
        lines += [self._submodule_line("untracked", p, "is not in") or
                  f"untracked  {p}  (not in HEAD: commit it, or add it to "
                  "[tool.lawkit.digest] exclude if it is generated)" for p in diff.added]
        lines += [self._submodule_line("missing", p, "is in, not in the work tree:") or
                  f"missing    {p}  (in HEAD, not in the work tree)" for p in diff.removed]
        return lines

    def _submodule_line(self, kind: str, path: str, how: str) -> str | None:
        for sub, commit in self.submodules:
            if path.startswith(sub + "/"):
                return (f"{kind:<10} {path}  (submodule {sub}'s file: {how} the commit HEAD "
                        f"records for it, {commit[:12]}: commit in the submodule and git add "
                        f"{sub}, or git submodule update -- {sub})")
        return None

    def to_json(self, *, manifest: bool = False) -> dict[str, Any]:
        """The report as the JSON document `lawkit digest --json` prints."""
        out: dict[str, Any] = {"key": self.key, "digest": self.digest,
                               "files": len(self.manifest), "root": self.root, "rev": self.rev}
        if manifest:
            out["manifest"] = [{"sha256": e.hexdigest, "path": e.relpath_text}
                               for e in self.manifest.entries]
        if self.cannot_explain is not None:
            out["explain"] = {"error": self.cannot_explain}
        if self.versus_head is not None:
            out["explain"] = {"edited": list(self.versus_head.changed),
                              "untracked": list(self.versus_head.added),
                              "missing": list(self.versus_head.removed)}
        return out


def work_tree_manifest(config: DigestConfig) -> src_digest.Manifest:
    """The manifest of the engine's work tree."""
    try:
        return src_digest.manifest_of(config.root, config.packages, config.include,
                                      config.exclude)
    except src_digest.DigestError as exc:
        raise LawkitError(config.explain(exc)) from None


def rev_manifest(config: DigestConfig, rev: str) -> src_digest.Manifest:
    """The manifest of the engine at a git revision, from git objects."""
    try:
        top, prefix = src_digest.git_toplevel(config.root)
        return src_digest.manifest_at_rev(top, rev, config.packages, config.include,
                                          config.exclude, prefix=prefix)
    except src_digest.GitObjectsError as exc:
        raise GitError(str(exc)) from None
    except src_digest.DigestError as exc:
        raise LawkitError(config.explain(exc)) from None


def current_digest(ws: Workspace) -> str:
    """The digest of the workspace's engine work tree: what every law must name."""
    return work_tree_manifest(ws.digest).digest(ws.digest.length)


def digest_report(ws: Workspace, *, rev: str | None = None, explain: bool = False) -> DigestReport:
    """The digest at `rev` (or of the work tree), with the HEAD comparison when asked."""
    config = ws.digest
    if rev is not None and not rev.strip():
        raise GitError("--rev: an empty revision names nothing: give a commit, branch or tag "
                       "(HEAD for the last commit), or leave --rev out for the work tree")
    manifest = rev_manifest(config, rev) if rev is not None else work_tree_manifest(config)
    versus_head = cannot_explain = None
    submodules: tuple[tuple[str, str], ...] = ()
    if explain:
        try:
            head = rev_manifest(config, "HEAD")
        except GitError as exc:
            # The digest stands without git: say why the comparison cannot be made, and how.
            cannot_explain = (f"--explain compares the work tree with the engine's files at "
                              f"HEAD, read from git, and that failed: {exc}; the digest above "
                              "is the work tree's: run --explain in a git checkout of the "
                              "engine (with git installed) to list what differs")
        else:
            tree = manifest if rev is None else work_tree_manifest(config)
            versus_head = src_digest.diff_manifests(head, tree)
            submodules = _submodules(config)
    return DigestReport(key=config.key, digest=manifest.digest(config.length), manifest=manifest,
                        root=ws.rel(config.root), rev=rev, versus_head=versus_head,
                        cannot_explain=cannot_explain, submodules=submodules)


def _submodules(config: DigestConfig) -> tuple[tuple[str, str], ...]:
    top, prefix = src_digest.git_toplevel(config.root)
    return tuple(src_digest.submodules_at_rev(top, "HEAD", config.packages, prefix))
