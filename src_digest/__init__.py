"""src_digest/1: a byte-exact digest of an engine source tree, standard library only.

This package implements the digest contract of lawkit's docs/digest.md and nothing else:
it imports only the standard library and nothing of lawkit, so an engine can vendor the
``src_digest`` folder (or import it) and compute the very key its host laws are checked against.

    h = sha256(b"src_digest/1\\n")
    for each kept file, ascending by relpath bytes:
        h.update(relpath + b"\\0" + sha256(content).digest())
    digest = h.hexdigest()[:length]

Files: every regular file or symlink below ``root/<package>`` whose base name matches an
``include`` pattern and whose root-relative, ``/``-separated relpath matches no ``exclude``
pattern (both ``fnmatch.fnmatchcase``; in ``exclude`` a ``*`` crosses ``/``). The walk does not
descend into symlinked folders nor into folders named ``__pycache__``. A regular file's content
is its bytes as stored; a symlink's content is its target string, never followed. A folder whose
name matches a pattern (``y.py/``) is walked, never hashed. No file matched: an error, never a
digest.

``manifest_of`` / ``host_key_of`` read a work tree; ``manifest_at_rev`` (module
``src_digest.git``, re-exported here and imported on first use) reads the same files from git
objects at a revision, without a checkout. Both halves build the model of ``src_digest._manifest``
(the manifest, the errors and the work-tree walk), which lies below them and imports neither.

May import: the standard library only; never a third-party package, never ``lawkit``.

Errors:

    DigestError          one line a person can act on (no file matched, unreadable file, ...)
    └── GitObjectsError  git is missing or failed, or a revision does not resolve
        └── SubmoduleError  a submodule in the hashed packages has no git objects here
"""

from __future__ import annotations

from ._manifest import (
    MAGIC,
    DigestError,
    FileEntry,
    GitObjectsError,
    Manifest,
    ManifestDiff,
    SubmoduleError,
    diff_manifests,
    host_key_of,
    manifest_of,
    normalize_packages,
)

# Not `from typing import TYPE_CHECKING`: typing and collections cost a vendoring engine's
# start-up several milliseconds for names that only annotations use (mypy knows this idiom).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .git import (
        TreeEntry,
        blob_sizes,
        git_toplevel,
        ls_tree,
        manifest_at_rev,
        manifest_from_blobs,
        read_blobs,
        run_git,
        select_tree,
        submodules_at_rev,
        with_submodules,
    )

__all__ = [
    "MAGIC",
    "DigestError",
    "FileEntry",
    "GitObjectsError",
    "Manifest",
    "ManifestDiff",
    "SubmoduleError",
    "TreeEntry",
    "blob_sizes",
    "diff_manifests",
    "git_toplevel",
    "host_key_of",
    "ls_tree",
    "manifest_at_rev",
    "manifest_from_blobs",
    "manifest_of",
    "normalize_packages",
    "read_blobs",
    "run_git",
    "select_tree",
    "submodules_at_rev",
    "with_submodules",
]


# Their public home: reprs, pickles and tracebacks name `src_digest.DigestError` (etc.), not
# the module below that defines them.
for _public in (DigestError, GitObjectsError, SubmoduleError, FileEntry, Manifest, ManifestDiff,
                diff_manifests, host_key_of, manifest_of, normalize_packages):
    _public.__module__ = __name__
del _public

_GIT_NAMES = frozenset(
    {
        "TreeEntry",
        "blob_sizes",
        "git_toplevel",
        "ls_tree",
        "manifest_at_rev",
        "manifest_from_blobs",
        "read_blobs",
        "run_git",
        "select_tree",
        "submodules_at_rev",
        "with_submodules",
    }
)


if not TYPE_CHECKING:  # for mypy the names come from the import at the top, typed

    def __getattr__(name: str) -> Any:
        # The git half imports subprocess; a work-tree digest (a pre-commit hook) never pays.
        if name in _GIT_NAMES:
            from . import git

            return getattr(git, name)
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
