"""src_digest/1 from git objects at a revision, without a checkout.

One ``git ls-tree -r -z --full-tree REV -- <prefix/package>...`` lists the blobs and one
``git cat-file --batch`` process reads them all. A symlink (mode 120000) is a blob holding its
target string, which is exactly what the work-tree walk hashes for a symlink; a symlinked folder
is such a blob too, so it is never walked. A submodule (160000) inside a hashed package is read
as the work-tree walk reads its checkout: its files at the commit the revision records, from the
submodule's own objects (its checkout's ``.git``, or ``.git/modules/<name>``); where those are
not present the digest fails naming the submodule, never leaving its files out. Blob bytes are raw
object bytes: where git attributes rewrite bytes on checkout (eol, filters, LFS) the work tree
and the revision can differ, and ``diff_manifests`` says where.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from ._manifest import (
    _PYCACHE,
    DigestError,
    FileEntry,
    GitObjectsError,
    Manifest,
    SubmoduleError,
    _matcher,
    normalize_packages,
)

_SUBMODULE = "160000"
_TREE = "040000"


class TreeEntry(NamedTuple):
    """One ``git ls-tree`` record: mode (``"100644"``...), object id and top-level path."""

    mode: str
    oid: str
    path: bytes


def git_toplevel(path: str | os.PathLike[str] | bytes) -> tuple[str, str]:
    """The top level of the git work tree holding ``path``, and ``path``'s prefix in it.

    The prefix is ``/``-separated without a trailing ``/``; ``""`` at the top level.
    """
    out = _git(
        path,
        ["rev-parse", "--show-toplevel", "--show-prefix"],
        failure=f"{os.fsdecode(path)} is not inside a git work tree",
    )
    lines = out.split(b"\n")
    if len(lines) < 2:
        raise GitObjectsError(f"git rev-parse gave no top level for {os.fsdecode(path)}")
    return os.fsdecode(lines[0]), os.fsdecode(lines[1].rstrip(b"/"))


def ls_tree(
    repo_dir: str | os.PathLike[str] | bytes, rev: str, paths: Sequence[str | bytes] = ()
) -> list[TreeEntry]:
    """Every blob and submodule under ``paths`` (top-level relative; all when empty) at ``rev``."""
    _check_rev(rev)
    out = _git(
        repo_dir,
        ["--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths],
        failure=f"cannot read revision {rev!r} in {os.fsdecode(repo_dir)}",
    )
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, _type, oid = meta.decode("ascii").split(" ")
        entries.append(TreeEntry(mode, oid, path))
    return entries


def blob_sizes(repo_dir: str | os.PathLike[str] | bytes, oids: Iterable[str]) -> dict[str, int]:
    """The size in bytes of each blob, by the id asked for, from one ``git cat-file
    --batch-check`` (nothing is read): to refuse a blob too big before reading it."""
    wanted = list(dict.fromkeys(oids))
    if not wanted:
        return {}
    out = _cat_file(repo_dir, "--batch-check", wanted)
    sizes: dict[str, int] = {}
    lines = out.split(b"\n")
    for oid, line in zip(wanted, lines, strict=False):
        header = line.split(b" ")
        if len(header) != 3 or header[1] != b"blob":
            got = line.decode("ascii", "replace") or "no answer"
            raise GitObjectsError(f"git cat-file cannot size blob {oid}: {got}")
        sizes[oid] = int(header[2])
    return sizes


def _cat_file(repo_dir: str | os.PathLike[str] | bytes, batch: str, oids: list[str]) -> bytes:
    """What one ``git cat-file <batch> --buffer`` prints for the object ids, in their order."""
    return _git(
        repo_dir,
        ["cat-file", batch, "--buffer"],
        failure=f"cannot read git objects in {os.fsdecode(repo_dir)}",
        stdin=("\n".join(oids) + "\n").encode("ascii"),
    )


def read_blobs(repo_dir: str | os.PathLike[str] | bytes, oids: Iterable[str]) -> dict[str, bytes]:
    """The raw bytes of each blob, by the id asked for, from one ``git cat-file --batch``."""
    wanted = list(dict.fromkeys(oids))
    if not wanted:
        return {}
    out = _cat_file(repo_dir, "--batch", wanted)
    blobs: dict[str, bytes] = {}
    pos = 0
    for oid in wanted:
        end = out.find(b"\n", pos)
        header = out[pos:end].split(b" ") if end >= 0 else []
        if len(header) != 3:
            got = b" ".join(header).decode("ascii", "replace") or "no answer"
            raise GitObjectsError(f"git cat-file cannot read object {oid}: {got}")
        if header[1] != b"blob":
            raise GitObjectsError(f"git object {oid} is a {header[1].decode()}, not a blob")
        size = int(header[2])
        blobs[oid] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return blobs


def select_tree(
    entries: Iterable[TreeEntry],
    packages: Sequence[str] = ("atom",),
    include: Sequence[str] = ("*.py",),
    exclude: Sequence[str] = (),
    prefix: str = "",
) -> list[tuple[bytes, TreeEntry]]:
    """The (relpath, entry) pairs a digest keeps, ascending by relpath bytes.

    ``prefix`` is the digest root's path from the repository top level; relpaths are relative to
    the digest root. The rules are those of the work-tree walk (see the package docstring).
    """
    pre = _clean_prefix(prefix)
    roots = [_join(pre, pkg) for pkg in normalize_packages(packages)]
    kept = _matcher(include, exclude)
    cut = len(pre) + 1 if pre else 0
    selected: dict[bytes, TreeEntry] = {}
    for entry in entries:
        if entry.mode in (_SUBMODULE, _TREE):
            continue
        path = entry.path
        for top in roots:
            if top and path != top and not path.startswith(top + b"/"):
                continue
            below = path[len(top) + 1 :] if top else path
            if _PYCACHE in below.split(b"/")[:-1]:
                continue
            relpath = path[cut:]
            if kept(path.rpartition(b"/")[2], relpath):
                selected[relpath] = entry
                break
    return sorted(selected.items())


def manifest_from_blobs(
    selected: Iterable[tuple[bytes, TreeEntry]], blobs: Mapping[str, bytes]
) -> Manifest:
    """The manifest of selected tree entries whose blob bytes have been read already."""
    digests: dict[str, bytes] = {}
    files = []
    for relpath, entry in selected:
        sha = digests.get(entry.oid)
        if sha is None:
            try:
                content = blobs[entry.oid]
            except KeyError:
                raise DigestError(f"no blob {entry.oid} given for {os.fsdecode(relpath)}") from None
            sha = digests[entry.oid] = hashlib.sha256(content).digest()
        files.append(FileEntry(relpath, sha))
    return Manifest(tuple(files))


def manifest_at_rev(
    repo_dir: str | os.PathLike[str] | bytes,
    rev: str,
    packages: Sequence[str] = ("atom",),
    include: Sequence[str] = ("*.py",),
    exclude: Sequence[str] = (),
    prefix: str = "",
    *,
    allow_empty: bool = False,
) -> Manifest:
    """The manifest ``manifest_of`` gives on a checkout of ``rev``, read from git objects.

    ``repo_dir`` is any folder of the repository; ``prefix`` is the digest root's path from its
    top level (``git_toplevel`` gives both).
    """
    pre = _clean_prefix(prefix)
    paths = [_join(pre, pkg) for pkg in normalize_packages(packages)]
    entries = ls_tree(repo_dir, rev, [] if b"" in paths else paths)
    sources: dict[str, str | bytes] = {}
    if any(entry.mode == _SUBMODULE for entry in entries):
        top = git_toplevel(repo_dir)[0]
        entries = _with_submodules(top, rev, entries, sources)
    selected = select_tree(entries, packages, include, exclude, prefix)
    if not selected and not allow_empty:
        where = f"{os.fsdecode(repo_dir)}" + (f" (root {prefix})" if pre else "")
        what = "no file matched" if entries else "none of the packages exists"
        raise DigestError(
            f"{what}: include {list(include)} under packages {list(packages)} at revision "
            f"{rev!r} in {where}"
            + (f" (exclude {list(exclude)})" if exclude else ""),
            config_keys="packages, include and exclude",
        )
    blobs: dict[str, bytes] = {}
    by_source: dict[str | bytes, list[str]] = {}
    for _, entry in selected:
        by_source.setdefault(sources.get(entry.oid, os.fsencode(repo_dir)), []).append(entry.oid)
    for source, oids in by_source.items():
        blobs.update(read_blobs(source, oids))
    return manifest_from_blobs(selected, blobs)


def submodules_at_rev(
    repo_dir: str | os.PathLike[str] | bytes,
    rev: str,
    packages: Sequence[str] = ("atom",),
    prefix: str = "",
) -> list[tuple[str, str]]:
    """The submodules inside the hashed packages at ``rev``: (path relative to the digest root,
    recorded commit), for ``--explain`` to name their files as theirs."""
    pre = _clean_prefix(prefix)
    paths = [_join(pre, pkg) for pkg in normalize_packages(packages)]
    cut = len(pre) + 1 if pre else 0
    return [(os.fsdecode(e.path[cut:]), e.oid)
            for e in ls_tree(repo_dir, rev, [] if b"" in paths else paths)
            if e.mode == _SUBMODULE]


def with_submodules(
    top: str | bytes,
    rev: str,
    entries: list[TreeEntry],
    sources: dict[str, str | bytes],
    under: Sequence[bytes] | None = None,
) -> list[TreeEntry]:
    """``entries`` (``ls_tree`` at ``rev`` in the repository at ``top``) with each submodule
    (below one of the top-level paths ``under``, all when None) replaced by its files at the
    recorded commit; ``sources`` gets the git folder to read each of their blobs from.
    SubmoduleError where a submodule's objects are not here."""
    if not any(e.mode == _SUBMODULE for e in entries):
        return entries
    if under is not None:
        inside = [p for p in under if p]
        if len(inside) == len(under):
            keep = [e for e in entries if e.mode == _SUBMODULE and not any(
                e.path == p or e.path.startswith(p + b"/") for p in inside)]
            kept = {id(e) for e in keep}
            expanded = _with_submodules(top, rev, [e for e in entries if id(e) not in kept],
                                        sources)
            return [*keep, *expanded]
    return _with_submodules(top, rev, entries, sources)


def _with_submodules(
    top: str | bytes, rev: str, entries: list[TreeEntry], sources: dict[str, str | bytes],
    depth: int = 0,
) -> list[TreeEntry]:
    out: list[TreeEntry] = []
    for entry in entries:
        if entry.mode != _SUBMODULE:
            out.append(entry)
            continue
        name = os.fsdecode(entry.path)
        if depth > 16:
            raise SubmoduleError(f"submodule {name}: submodules nested deeper than 16 levels")
        where = _submodule_objects(top, rev, entry.path)
        if where is None:
            raise SubmoduleError(
                f"submodule {name} (commit {entry.oid[:12]} at revision {rev!r}) lies inside "
                "the hashed packages and its git objects are not here (no checkout of it with "
                f"a .git, no .git/modules for it), and the digest needs its files as the work tree "
                f"walk hashes them: run `git submodule update --init -- {name}`")
        try:
            inner = ls_tree(where, entry.oid)
        except GitObjectsError:
            raise SubmoduleError(
                f"submodule {name}: its git objects ({os.fsdecode(where)}) do not hold the "
                f"commit {entry.oid[:12]} that revision {rev!r} records: run `git submodule "
                f"update --init -- {name}` (or git fetch in the submodule)") from None
        inner = _with_submodules(where, entry.oid, inner, sources, depth + 1)
        for sub in inner:
            sources.setdefault(sub.oid, where)
            out.append(TreeEntry(sub.mode, sub.oid, entry.path + b"/" + sub.path))
    return out


def _submodule_objects(top: str | bytes, rev: str, path: bytes) -> str | bytes | None:
    """A folder git reads the submodule at ``path`` (from ``top``) from: its checkout when that
    is a repository of its own, else ``.git/modules/<name>`` (name from ``.gitmodules`` at
    ``rev``), else None."""
    checkout = os.path.join(os.fsencode(top), path)
    if os.path.lexists(os.path.join(checkout, b".git")):
        code, out, _ = run_git(checkout, ["rev-parse", "--show-toplevel"])
        if code == 0 and os.path.realpath(out.rstrip(b"\n")) == os.path.realpath(checkout):
            return checkout
    names = [path]
    code, out, _ = run_git(top, ["config", "--blob", f"{rev}:.gitmodules", "-z",
                                 "--get-regexp", r"^submodule\..*\.path$"])
    if code == 0:
        for record in out.split(b"\0"):
            key, _, value = record.partition(b"\n")
            if value == path:
                names.insert(0, key[len(b"submodule."):-len(b".path")])
    for name in names:
        code, out, _ = run_git(top, [b"rev-parse", b"--git-path", b"modules/" + name])
        if code == 0:
            folder = os.path.join(os.fsencode(top), out.rstrip(b"\n"))
            if os.path.isdir(folder):
                return folder
    return None


def _clean_prefix(prefix: str) -> bytes:
    return b"/".join(p for p in os.fsencode(prefix).split(b"/") if p not in (b"", b"."))


def _join(prefix: bytes, pkg: bytes) -> bytes:
    return b"/".join(p for p in (prefix, pkg) if p)


def _check_rev(rev: str) -> None:
    if not isinstance(rev, str) or not rev or rev.startswith("-") or "\0" in rev:
        raise GitObjectsError(f"not a revision: {rev!r}")


def run_git(
    cwd: str | os.PathLike[str] | bytes,
    args: Sequence[str | bytes],
    *,
    stdin: bytes | None = None,
) -> tuple[int, bytes, bytes]:
    """Run ``git -C cwd ARGS``: its exit status, stdout and stderr (the one git runner of
    src_digest and of lawkit's review). GitObjectsError when git is not installed."""
    try:
        proc = subprocess.run(
            ["git", "-C", os.fsencode(cwd), *args],
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except FileNotFoundError:
        raise GitObjectsError("git is not installed (no `git` on PATH)") from None
    return proc.returncode, proc.stdout, proc.stderr


def _git(
    cwd: str | os.PathLike[str] | bytes,
    args: list[str | bytes],
    *,
    failure: str,
    stdin: bytes | None = None,
) -> bytes:
    """Run ``git -C cwd ARGS`` and return its stdout; a failure says ``failure`` and git's why."""
    code, out, err = run_git(cwd, args, stdin=stdin)
    if code != 0:
        lines = err.decode("utf-8", "replace").strip().splitlines()
        why = lines[-1].removeprefix("fatal: ") if lines else f"exit status {code}"
        raise GitObjectsError(f"{failure}: {why}")
    return out
