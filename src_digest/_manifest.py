"""The work-tree half of src_digest/1: the manifest model, the walk and the errors.

Below both ``src_digest`` (which re-exports every public name here) and ``src_digest.git``
(which reads the same files from git objects and builds the same ``Manifest``), so that neither
imports the other's module. The contract is in the package docstring.
"""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import itertools
import os
import re
import stat
import sys
from dataclasses import dataclass

# Not `from typing import TYPE_CHECKING`: typing and collections cost a vendoring engine's
# start-up several milliseconds for names that only annotations use (mypy knows this idiom).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence
    from typing import Any

MAGIC = b"src_digest/1\n"
"""The bytes the outer sha256 starts from; they name the algorithm version."""

_FS_ENCODING = sys.getfilesystemencoding()
_FS_ERRORS = sys.getfilesystemencodeerrors()
_PYCACHE = b"__pycache__"


class DigestError(Exception):
    """The digest cannot be computed; the message is one line a person can act on.

    ``config_keys`` names the ``[tool.lawkit.digest]`` keys that would fix it (``"root and
    packages"``), so that lawkit can say where those are set, or that no config was found.
    """

    def __init__(self, message: str, *, config_keys: str | None = None) -> None:
        self.reason = message
        self.config_keys = None if config_keys is None else \
            f"[tool.lawkit.digest] {config_keys}".rstrip()
        super().__init__(message if self.config_keys is None
                         else f"{message}: check {self.config_keys}")


class GitObjectsError(DigestError):
    """git is missing or failed, or a revision does not resolve."""


class SubmoduleError(GitObjectsError):
    """A submodule inside the hashed packages has no git objects here (not initialised, or
    without the commit the revision records): its files cannot be read, so there is no digest."""


@dataclass(frozen=True)
class FileEntry:
    """One hashed file: its root-relative relpath and the sha256 of its content."""

    relpath: bytes
    sha256: bytes

    @property
    def relpath_text(self) -> str:
        """The relpath as text (``os.fsdecode``: undecodable bytes become surrogates)."""
        return os.fsdecode(self.relpath)

    @property
    def hexdigest(self) -> str:
        """The content's sha256 in hex."""
        return self.sha256.hex()


@dataclass(frozen=True)
class Manifest:
    """The files a digest covers, ascending by relpath bytes."""

    entries: tuple[FileEntry, ...]

    def __post_init__(self) -> None:
        entries = tuple(self.entries)
        if any(a.relpath >= b.relpath for a, b in itertools.pairwise(entries)):
            entries = tuple(sorted(entries, key=lambda e: e.relpath))
            for a, b in itertools.pairwise(entries):
                if a.relpath == b.relpath:
                    raise ValueError(f"duplicate relpath in manifest: {a.relpath_text}")
        object.__setattr__(self, "entries", entries)

    def __len__(self) -> int:
        return len(self.entries)

    def digest(self, length: int = 8) -> str:
        """The src_digest/1 digest of these files, ``length`` hex characters long."""
        _check_length(length)
        if not self.entries:
            raise DigestError("no file matched: an empty manifest has no digest")
        h = hashlib.sha256(MAGIC)
        for entry in self.entries:
            h.update(entry.relpath + b"\0" + entry.sha256)
        return h.hexdigest()[:length]

    def lines(self) -> list[str]:
        """One ``<sha256 hex>  <relpath>`` line per file, in digest order."""
        return [f"{e.sha256.hex()}  {e.relpath_text}" for e in self.entries]


@dataclass(frozen=True)
class ManifestDiff:
    """The relpaths that make two manifests differ, each tuple in digest order."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[str, ...]

    @property
    def is_empty(self) -> bool:
        """True when both manifests hold the same files with the same content."""
        return not (self.added or self.removed or self.changed)


def diff_manifests(old: Manifest, new: Manifest) -> ManifestDiff:
    """The files added, removed and changed from ``old`` to ``new``."""
    before = {e.relpath: e.sha256 for e in old.entries}
    after = {e.relpath: e.sha256 for e in new.entries}
    added = sorted(p for p in after if p not in before)
    removed = sorted(p for p in before if p not in after)
    changed = sorted(p for p, h in after.items() if p in before and before[p] != h)
    return ManifestDiff(
        added=tuple(map(os.fsdecode, added)),
        removed=tuple(map(os.fsdecode, removed)),
        changed=tuple(map(os.fsdecode, changed)),
    )


def host_key_of(
    root: str | os.PathLike[str] | bytes,
    packages: Sequence[str] = ("atom",),
    include: Sequence[str] = ("*.py",),
    exclude: Sequence[str] = (),
    length: int = 8,
) -> str:
    """The src_digest/1 digest of the engine source under ``root``."""
    _check_length(length)
    return manifest_of(root, packages, include, exclude).digest(length)


def manifest_of(
    root: str | os.PathLike[str] | bytes,
    packages: Sequence[str] = ("atom",),
    include: Sequence[str] = ("*.py",),
    exclude: Sequence[str] = (),
    *,
    allow_empty: bool = False,
) -> Manifest:
    """The manifest of the work tree under ``root``: what ``host_key_of`` hashes."""
    root_b = os.fsencode(root)
    pkgs = normalize_packages(packages)
    kept = _matcher(include, exclude)
    found: dict[bytes, bytes] = {}
    any_package = False
    for pkg in pkgs:
        any_package |= _walk_package(root_b, pkg, kept, found)
    if not found and not allow_empty:
        where = os.fsdecode(root_b)
        if not os.path.isdir(root_b):
            raise DigestError(
                f"the digest root {where} is not a folder", config_keys="root"
            )
        if not any_package:
            raise DigestError(
                f"none of the packages {list(packages)} exists in {where}",
                config_keys="root and packages",
            )
        raise DigestError(
            f"no file matched include {list(include)} under packages {list(packages)} "
            f"in {where}"
            + (f" (exclude {list(exclude)})" if exclude else ""),
            config_keys="include and exclude",
        )
    return Manifest(tuple(FileEntry(p, found[p]) for p in sorted(found)))


def normalize_packages(packages: Sequence[str]) -> list[bytes]:
    """Each package as a clean ``/``-separated relative path in bytes (``b""`` is the root)."""
    if isinstance(packages, str | bytes):
        raise TypeError("packages must be a sequence of paths, not a single string")
    if not packages:
        raise DigestError("no packages given: name at least one folder to hash")
    out: list[bytes] = []
    for pkg in packages:
        raw = os.fsencode(pkg)
        parts = [p for p in raw.split(b"/") if p not in (b"", b".")]
        if raw.startswith(b"/") or b".." in parts:
            raise DigestError(f"package {pkg!r} must be a path inside the digest root")
        out.append(b"/".join(parts))
    return out


def _check_length(length: int) -> None:
    if isinstance(length, bool) or not isinstance(length, int) or not 4 <= length <= 64:
        raise DigestError(f"digest length must be an integer from 4 to 64, got {length!r}")


def _compile(patterns: Iterable[str], what: str) -> list[Callable[[str], Any]]:
    if isinstance(patterns, str | bytes):
        raise TypeError(f"{what} must be a sequence of patterns, not a single string")
    # fnmatch.fnmatchcase(name, pat) is exactly re.compile(fnmatch.translate(pat)).match.
    return [re.compile(fnmatch.translate(os.fsdecode(p))).match for p in patterns]


def _matcher(include: Sequence[str], exclude: Sequence[str]) -> Callable[[bytes, bytes], bool]:
    """A predicate on (base name, relpath), both bytes, for the include/exclude rules."""
    inc = _compile(include, "include")
    exc = _compile(exclude, "exclude")
    enc, errs = _FS_ENCODING, _FS_ERRORS

    def kept(name: bytes, relpath: bytes) -> bool:
        text = name.decode(enc, errs)
        for match in inc:
            if match(text):
                break
        else:
            return False
        if exc:
            rel = relpath.decode(enc, errs)
            return not any(match(rel) for match in exc)
        return True

    return kept


def _walk_package(
    root: bytes, pkg: bytes, kept: Callable[[bytes, bytes], bool], found: dict[bytes, bytes]
) -> bool:
    """Add the kept files of one package to ``found``; False when the package is absent."""
    path = os.path.join(root, pkg) if pkg else root
    if pkg:
        # The package path itself follows the walk's rules, like git's tree does: a symlink
        # anywhere on it is not a folder, and a file named by it is a candidate on its own.
        parent = root
        parts = pkg.split(b"/")
        for i, part in enumerate(parts):
            parent = os.path.join(parent, part)
            try:
                st = os.lstat(parent)
            except FileNotFoundError:
                return False
            except OSError as exc:
                raise DigestError(f"cannot read {os.fsdecode(parent)}: {exc.strerror}") from None
            if stat.S_ISDIR(st.st_mode):
                continue
            is_link = stat.S_ISLNK(st.st_mode)
            if i == len(parts) - 1 and (is_link or stat.S_ISREG(st.st_mode)):
                if kept(parts[-1], pkg):
                    found[pkg] = _hash_one(parent, is_link)
                return True
            return False
    stack = [(path, pkg + b"/" if pkg else b"")]
    sha256 = hashlib.sha256
    while stack:
        folder, rel = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except OSError as exc:
            raise DigestError(
                f"cannot read folder {os.fsdecode(folder)}: {exc.strerror or exc}"
            ) from None
        for entry in entries:
            name = entry.name
            try:
                if entry.is_symlink():
                    relpath = rel + name
                    if kept(name, relpath):
                        found[relpath] = sha256(os.readlink(entry.path)).digest()
                elif entry.is_dir(follow_symlinks=False):
                    if name != _PYCACHE:
                        stack.append((entry.path, rel + name + b"/"))
                elif entry.is_file(follow_symlinks=False):
                    relpath = rel + name
                    if kept(name, relpath):
                        found[relpath] = sha256(_read_file(entry.path)).digest()
            except OSError as exc:
                raise DigestError(
                    f"cannot read {os.fsdecode(entry.path)}: {exc.strerror or exc}"
                    " (was it removed or changed during the digest?)"
                ) from None
    return True


def _hash_one(path: bytes, is_link: bool) -> bytes:
    """The sha256 of one file's content (a symlink's target string), as the walk reads it."""
    try:
        if is_link:
            return hashlib.sha256(os.readlink(path)).digest()
        return hashlib.sha256(_read_file(path)).digest()
    except OSError as exc:
        raise DigestError(f"cannot read {os.fsdecode(path)}: {exc.strerror or exc}") from None


# O_NOFOLLOW: a file swapped for a symlink after the scan fails instead of hashing what it
# points at; O_NONBLOCK: a file swapped for a FIFO cannot hang the digest (fstat rejects it).
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_BINARY", 0)
)


def _read_file(path: bytes) -> bytes:
    """A regular file's bytes as stored; OSError when it is gone or no longer a regular file."""
    # os.open/os.read skip the io layer's objects: ~15% less time than open().read() per file.
    fd = os.open(path, _OPEN_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "no longer a regular file")
        data = os.read(fd, st.st_size + 1)
        if len(data) != st.st_size:  # the file changed size since fstat, or a short read
            parts = [data]
            while chunk := os.read(fd, 1 << 20):
                parts.append(chunk)
            data = b"".join(parts)
        return data
    finally:
        os.close(fd)
