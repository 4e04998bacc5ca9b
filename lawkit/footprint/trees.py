"""The hashed engine files, with their bytes, from the work tree or from a git revision."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

import src_digest
from lawkit.config import DigestConfig
from lawkit.errors import GitError, LawkitError


@dataclass(frozen=True)
class SourceTree:
    """The hashed files of an engine tree: relpath -> bytes as stored, and the digest."""

    digest: str
    files: dict[str, bytes]
    where: str  # "work tree" or "revision REV"

    def sha256(self, relpath: str) -> str:
        """The sha256 of one file's bytes, in hex."""
        return hashlib.sha256(self.files[relpath]).hexdigest()


def work_tree_sources(config: DigestConfig) -> SourceTree:
    """The hashed files of the engine's work tree, read once and checked against the digest."""
    try:
        manifest = src_digest.manifest_of(config.root, config.packages, config.include,
                                          config.exclude)
    except src_digest.DigestError as exc:
        raise LawkitError(str(exc)) from None
    files: dict[str, bytes] = {}
    for entry in manifest.entries:
        path = os.path.join(os.fsencode(config.root), entry.relpath)
        try:
            data = os.fsencode(os.readlink(path)) if os.path.islink(path) else _read(path)
        except OSError as exc:
            raise LawkitError(f"cannot read {entry.relpath_text}: {exc.strerror}") from None
        if hashlib.sha256(data).digest() != entry.sha256:
            raise LawkitError(f"{entry.relpath_text} changed while it was read: try again")
        files[entry.relpath_text] = data
    return SourceTree(manifest.digest(config.length), files, "work tree")


def rev_sources(config: DigestConfig, rev: str) -> SourceTree:
    """The hashed files of the engine at a git revision, from git objects (no checkout)."""
    try:
        top, prefix = src_digest.git_toplevel(config.root)
        pre = os.fsencode(prefix)
        paths = [b"/".join(p for p in (pre, pkg) if p)
                 for pkg in src_digest.normalize_packages(config.packages)]
        entries = src_digest.ls_tree(top, rev, [] if b"" in paths else paths)
        # a submodule inside a package: its files at the recorded commit, from its own objects
        # (the digest's rules), as `lawkit digest --rev` reads them
        sources: dict[str, str | bytes] = {}
        entries = src_digest.with_submodules(top, rev, entries, sources)
        selected = src_digest.select_tree(entries, config.packages, config.include,
                                          config.exclude, prefix)
        if not selected:
            advice = "check [tool.lawkit.digest] packages and include"
            raise LawkitError(f"no engine file matched at revision {rev!r}: "
                              f"{config.source.advice(advice) if config.source else advice}")
        by_source: dict[str | bytes, list[str]] = {}
        for _, entry in selected:
            by_source.setdefault(sources.get(entry.oid, top), []).append(entry.oid)
        blobs: dict[str, bytes] = {}
        for source, oids in by_source.items():
            blobs.update(src_digest.read_blobs(source, oids))
        manifest = src_digest.manifest_from_blobs(selected, blobs)
    except src_digest.GitObjectsError as exc:
        raise GitError(str(exc)) from None
    except src_digest.DigestError as exc:
        raise LawkitError(str(exc)) from None
    files = {os.fsdecode(rel): blobs[e.oid] for rel, e in selected}
    return SourceTree(manifest.digest(config.length), files, f"revision {rev}")


def _read(path: bytes) -> bytes:
    with open(path, "rb") as f:
        return f.read()
