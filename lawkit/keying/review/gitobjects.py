"""The git plumbing of `lawkit review`: revisions, trees, blobs and merges, read-only.

Everything comes from git objects; nothing touches the work tree or the index. Per review:
one `git rev-parse` per revision named, one `git ls-tree -r -z` per tree (base, head, and the
merge), one `git cat-file --batch` for every blob needed, each object id asked for once, and with
`--merge-with` one `git version` and one `git merge-tree --write-tree` (which stores the merged
tree in the object database, like any merge, and changes nothing else).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import src_digest
from lawkit.config import Workspace
from lawkit.errors import GitError, LawkitError

MERGE_TREE_GIT = (2, 38)
"""`git merge-tree --write-tree` (a merge without a checkout) arrived in git 2.38."""


@dataclass(frozen=True)
class RepoPaths:
    """Where the workspace, its laws and its engine root lie in their git repository."""

    top: str
    workspace: str
    laws: str
    engine: str

    def shown(self, repo_path: str) -> str:
        """A repository path as shown to the user: relative to the workspace root."""
        if not self.workspace:
            return repo_path
        return os.path.relpath(repo_path, self.workspace).replace(os.sep, "/")


@dataclass(frozen=True)
class MergeTree:
    """The tree `git merge-tree --write-tree` made and the paths it could not merge."""

    tree: str
    conflicts: tuple[str, ...]


def toplevel(ws: Workspace) -> str:
    """The top level of the git repository that holds the workspace, resolved."""
    try:
        top, _prefix = src_digest.git_toplevel(ws.root)
    except src_digest.DigestError as exc:
        raise GitError(f"{exc}: lawkit review reads the laws and the engine from the git "
                       "repository that holds the workspace") from None
    return str(Path(top).resolve())


def locate(ws: Workspace, top: str) -> RepoPaths:
    """Where the workspace's laws and engine lie in the repository at `top` (`toplevel`); a
    LawkitError if they lie outside it."""
    top_path = Path(top)
    workspace = _inside(top_path, ws.root.resolve(), "the workspace root", ws)
    laws = _inside(top_path, ws.laws.resolve(), "the laws folder", ws)
    engine = _inside(top_path, ws.digest.root.resolve(), "the engine root", ws)
    return RepoPaths(top=str(top_path), workspace=workspace, laws=laws, engine=engine)


def _inside(top: Path, path: Path, what: str, ws: Workspace) -> str:
    """`path` from `top`, `/`-separated ("" at the top); an error outside the repository."""
    try:
        rel = path.relative_to(top)
    except ValueError:
        raise LawkitError(
            f"{what} {ws.rel(path)} is outside the git repository at {top}: lawkit review "
            "needs the laws and the engine in one repository (check [tool.lawkit] laws and "
            "[tool.lawkit.digest] root, or --laws and --engine)"
        ) from None
    # A nested checkout or submodule is another repository: its files are not blobs of `top`.
    folder = top
    for part in rel.parts:
        folder = folder / part
        if (folder / ".git").exists():
            raise LawkitError(
                f"{what} {ws.rel(path)} is inside another git repository ({ws.rel(folder)}, a "
                f"submodule or nested checkout), not in {top}: lawkit review needs the laws "
                "and the engine in one repository"
            )
    return rel.as_posix() if rel.parts else ""


def resolve_commit(top: str, rev: str, what: str) -> str:
    """The commit id `rev` names (`git rev-parse --verify REV^{commit}`)."""
    if not rev or rev.startswith("-") or "\0" in rev or "\n" in rev:
        raise GitError(f"{what} revision {rev!r} is not a revision name")
    code, out, _err = _git(top, ["rev-parse", "--verify", "--quiet", "--end-of-options",
                                 f"{rev}^{{commit}}"])
    if code != 0:
        raise GitError(f"{what} revision {rev!r} does not name a commit in {top}: check the "
                       "name, or fetch it first (a shallow CI clone may lack it)")
    return out.decode("ascii").strip()


def git_version(top: str) -> tuple[int, ...]:
    """The installed git's version numbers, as `git version` prints them."""
    code, out, err = _git(top, ["version"])
    match = re.search(rb"(\d+)\.(\d+)(?:\.(\d+))?", out)
    if code != 0 or match is None:
        raise GitError(f"cannot tell the git version: {(out or err).decode(errors='replace')}")
    return tuple(int(g) for g in match.groups() if g is not None)


def merge_tree(top: str, ours: str, theirs: str, shown_rev: str) -> MergeTree:
    """Merge two commits without a checkout; the merged tree and the conflicted paths."""
    version = git_version(top)
    if version < MERGE_TREE_GIT:
        have = ".".join(map(str, version))
        raise GitError(f"--merge-with needs git 2.38 or newer (git merge-tree --write-tree); "
                       f"this git is {have}: upgrade git, or review without --merge-with")
    code, out, err = _git(top, ["merge-tree", "--write-tree", "--name-only", "-z",
                                "--no-messages", ours, theirs])
    if code not in (0, 1):
        why = err.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"cannot merge {shown_rev!r} into the head: "
                       + (why[-1].removeprefix("fatal: ") if why else f"exit status {code}"))
    # With -z: the tree id, then (exit status 1 only) each conflicted path, NUL-terminated.
    fields = out.split(b"\0")
    tree = fields[0].decode("ascii").strip()
    conflicts = tuple(dict.fromkeys(os.fsdecode(f) for f in fields[1:] if f)) if code else ()
    return MergeTree(tree=tree, conflicts=conflicts)


def list_tree(top: str, treeish: str, paths: Sequence[str]) -> list[src_digest.TreeEntry]:
    """Every blob below `paths` (all when one of them is the top level) in a commit or tree."""
    wanted = [] if "" in paths else list(dict.fromkeys(paths))
    try:
        return src_digest.ls_tree(top, treeish, wanted)
    except src_digest.DigestError as exc:
        raise GitError(str(exc)) from None


def with_submodules(top: str, treeish: str, entries: list[src_digest.TreeEntry],
                    sources: dict[str, str | bytes], under: Sequence[str],
                    ) -> list[src_digest.TreeEntry]:
    """`entries` with each submodule below `under` replaced by its files at the recorded commit
    (docs/digest.md); `sources` gets where each of their blobs is read from."""
    try:
        return src_digest.with_submodules(top, treeish, entries, sources,
                                          [os.fsencode(p) for p in under])
    except src_digest.DigestError as exc:
        raise GitError(str(exc)) from None


def submodule_blobs(sources: dict[str, str | bytes], oids: Iterable[str]) -> dict[str, bytes]:
    """The bytes of blobs of submodules, each read from its own git objects."""
    by_source: dict[str | bytes, list[str]] = {}
    for oid in dict.fromkeys(oids):
        by_source.setdefault(sources[oid], []).append(oid)
    try:
        return {oid: data for source, wanted in by_source.items()
                for oid, data in src_digest.read_blobs(source, wanted).items()}
    except src_digest.DigestError as exc:
        raise GitError(str(exc)) from None


def read_blobs(top: str, oids: Iterable[str]) -> dict[str, bytes]:
    """The bytes of each blob, each id read once, by one `git cat-file --batch`."""
    try:
        return src_digest.read_blobs(top, list(dict.fromkeys(oids)))
    except src_digest.DigestError as exc:
        raise GitError(str(exc)) from None


def blob_sizes(top: str, oids: Iterable[str]) -> dict[str, int]:
    """The size of each blob, read from `git cat-file --batch-check` (no blob is read)."""
    try:
        return src_digest.blob_sizes(top, list(dict.fromkeys(oids)))
    except src_digest.DigestError as exc:
        raise GitError(str(exc)) from None


def blobs_at(top: str, named: Sequence[tuple[str, str]]
             ) -> dict[tuple[str, str], tuple[str, int] | None]:
    """The blob id and size of each (treeish, repository path), or None where there is no
    blob, from one `git cat-file --batch-check` (nothing is read)."""
    wanted = list(dict.fromkeys(named))
    if not wanted:
        return {}
    if any("\n" in path or "\n" in treeish for treeish, path in wanted):
        raise GitError("a path with a line break cannot be read from git objects")
    stdin = "".join(f"{treeish}:{path}\n" for treeish, path in wanted).encode(
        "utf-8", "surrogateescape")
    code, out, err = _git(top, ["cat-file", "--batch-check", "--buffer"], stdin)
    if code != 0:
        why = err.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"cannot read git objects in {top}: " + (why[-1] if why else
                                                                f"exit status {code}"))
    found: dict[tuple[str, str], tuple[str, int] | None] = {}
    for name, line in zip(wanted, out.split(b"\n"), strict=False):
        fields = line.split(b" ")
        found[name] = (fields[0].decode("ascii"), int(fields[2])) \
            if len(fields) == 3 and fields[1] == b"blob" else None
    return found


def below(folder: str, path: str) -> bool:
    """Whether repository path `path` lies below folder `folder` ("" is the top level)."""
    return not folder or path.startswith(folder + "/")


def repo_path(*parts: str) -> str:
    """Repository-relative parts joined with `/` (empty parts dropped)."""
    return str(PurePosixPath(*[p for p in parts if p])) if any(parts) else ""


def _git(top: str, args: list[str], stdin: bytes | None = None) -> tuple[int, bytes, bytes]:
    try:
        return src_digest.run_git(top, args, stdin=stdin)
    except src_digest.DigestError as exc:
        raise GitError(str(exc)) from None
