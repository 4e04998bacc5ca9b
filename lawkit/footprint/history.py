"""A file's bytes as a footprint saw them, found in git history by their sha256.

A footprint stores digests, not source; to say whether a changed unit moved only layout,
comments or docstrings, `footprint diff` looks for the recorded version of the file among the
blobs git history holds for its path (the newest first, at most ``MAX_VERSIONS`` of them).
Outside a git repository, or when no version matches, ``layout_only`` stays false.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable

import src_digest
from lawkit.config import DigestConfig

MAX_VERSIONS = 200


def git_old_source(config: DigestConfig) -> Callable[[str, str], bytes | None]:
    """A lookup of (relpath, sha256) -> bytes in the git history of the engine's repository."""
    found: dict[tuple[str, str], bytes | None] = {}

    def lookup(relpath: str, sha256: str) -> bytes | None:
        if (relpath, sha256) not in found:
            found[relpath, sha256] = _search(config, relpath, sha256)
        return found[relpath, sha256]

    return lookup


def _search(config: DigestConfig, relpath: str, sha256: str) -> bytes | None:
    try:
        top, prefix = src_digest.git_toplevel(config.root)
    except src_digest.DigestError:
        return None
    path = "/".join(p for p in (prefix, relpath) if p)
    try:
        code, out, _ = src_digest.run_git(top, [
            "--literal-pathspecs", "log", "--all", "--format=", "--raw", "--no-abbrev",
            "--no-renames", "-n", str(MAX_VERSIONS), "--", path])
    except src_digest.DigestError:
        return None
    if code != 0:
        return None
    oids: list[str] = []
    for line in out.decode("ascii", "replace").splitlines():
        fields = line.split("\t", 1)[0].split()
        if len(fields) >= 4:
            oids += [o for o in fields[2:4] if o.strip("0")]
    oids = list(dict.fromkeys(oids))
    try:
        blobs = src_digest.read_blobs(top, oids)
    except src_digest.DigestError:
        return None
    for data in blobs.values():
        if hashlib.sha256(data).hexdigest() == sha256:
            return data
    work = os.path.join(os.fsencode(config.root), os.fsencode(relpath))
    try:
        with open(work, "rb") as f:
            data = f.read()
    except OSError:
        return None
    return data if hashlib.sha256(data).hexdigest() == sha256 else None
