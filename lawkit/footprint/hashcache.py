"""The sha256 of installed files, kept between runs where that is sound: what lets `footprint diff
--env current` judge a footprint of torch's environment (a gigabyte of native libraries that
ran) without hashing it all again each time.

An entry is found by the file's real path and used only while the file's device, inode, size,
mtime and ctime are all what they were when it was hashed. The mtime alone is not enough:
``cp -p`` and an image layer's extraction keep it while the bytes change. The ctime cannot be
set from user space: every write, ``utime`` and rename onto the path moves it, and a file
copied or extracted anew has another inode or device. A file whose ctime was within
`RACY_NS` of the moment it was hashed is hashed but not kept (a filesystem's coarse timestamps
could hide a write right after), and one whose stat changed while it was read is not kept.

One JSON file (never pickle) per user, in `fsio.cache_folder` (``$LAWKIT_CACHE_DIR``, else
``$XDG_CACHE_HOME/lawkit``, else ``~/.cache/lawkit``): ``file-hashes.json``, written whole to a
temp file then renamed, only when something was added. A cache that cannot be read or written
is ignored: a verdict never depends on it being there.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from lawkit.fsio import cache_folder

FORMAT = 1
NAME = "file-hashes.json"
RACY_NS = 2_000_000_000
"""A file changed this close to its hashing is not kept (FAT's mtime has 2 s steps)."""
KEEP = 400_000
"""At most this many entries are kept (the newest), about 60 MB of JSON."""


def _identity(st: os.stat_result) -> list[int]:
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


class FileHashes:
    """The sha256 of files by real path, from the cache where sound (see the module)."""

    def __init__(self, folder: Path | None = None) -> None:
        self._path = (folder if folder is not None else cache_folder()) / NAME
        self._entries: dict[str, list[Any]] = {}
        self._added = False
        with contextlib.suppress(OSError, ValueError, TypeError):
            with open(self._path, encoding="utf-8") as f:
                doc = json.load(f)
            if isinstance(doc, dict) and doc.get("format") == FORMAT and \
                    isinstance(doc.get("files"), dict):
                self._entries = doc["files"]

    def sha256(self, path: str) -> str | None:
        """The sha256 of the file at ``path`` as it is now; None when it cannot be read."""
        real = os.path.realpath(path)
        try:
            before = os.stat(real)
        except OSError:
            return None
        entry = self._entries.get(real)
        if isinstance(entry, list) and len(entry) == 6 and entry[:5] == _identity(before):
            return str(entry[5])
        digest = hashlib.sha256()
        try:
            with open(real, "rb") as f:
                while chunk := f.read(1 << 20):
                    digest.update(chunk)
            after = os.stat(real)
        except OSError:
            return None
        sha = digest.hexdigest()
        if _identity(after) == _identity(before) and \
                after.st_ctime_ns < time.time_ns() - RACY_NS:
            self._entries.pop(real, None)  # re-inserted last: the newest
            self._entries[real] = [*_identity(after), sha]
            self._added = True
        return sha

    def save(self) -> None:
        """Write the cache if anything was added (nothing happens when it cannot be)."""
        if not self._added:
            return
        entries = dict(list(self._entries.items())[-KEEP:])
        with contextlib.suppress(OSError):
            self._path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=self._path.parent, prefix=".file-hashes-",
                                        suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"format": FORMAT, "files": entries}, f)
                os.replace(temp, self._path)
            finally:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
            self._added = False
