"""Reading a law file's bytes safely: a regular file, never a symlink followed, a FIFO waited
on or a huge file read whole. Kept apart from `lawfile` so that `check` can read and
hash files without importing pydantic or PyYAML when its cache already knows them."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from lawkit.errors import LawFileError

MAX_BYTES = 1 << 20
"""The largest law file lawkit reads (1 MiB). Law files are small (the bundled ones are about
3 KB, a law about 750 bytes): a bigger file is refused before it is read, so that a runaway or
hostile one cannot cost CI minutes or gigabytes. `yamlsafe.MAX_NODES` bounds what
fits in it."""


def read_bytes(path: str | Path, shown: str) -> bytes:
    """The bytes of a law file: a regular file (never a symlink followed, a folder or a FIFO)
    of at most `MAX_BYTES`; a LawFileError otherwise."""
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ELOOP and os.path.islink(path):
            raise _not_regular("a symlink", shown) from None
        what = "no such file" if exc.errno == errno.ENOENT else exc.strerror
        raise LawFileError(f"cannot read: {what}", path=shown) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_regular("a folder" if stat.S_ISDIR(st.st_mode) else "a FIFO"
                               if stat.S_ISFIFO(st.st_mode) else "a special file", shown)
        check_size(st.st_size, shown)
        parts, size = [], 0
        while size <= MAX_BYTES and (part := os.read(fd, MAX_BYTES + 1 - size)):
            parts.append(part)
            size += len(part)
    except OSError as exc:
        raise LawFileError(f"cannot read: {exc.strerror}", path=shown) from None
    finally:
        os.close(fd)
    raw = b"".join(parts)
    check_size(len(raw), shown)
    return raw


# O_NOFOLLOW: a symlink is refused, not followed; O_NONBLOCK: a FIFO cannot hang the read.
_READ_FLAGS = os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW | os.O_NONBLOCK


def _not_regular(what: str, shown: str) -> LawFileError:
    return LawFileError(f"not a regular file ({what}): law files are plain files", path=shown)


def check_size(size: int, shown: str) -> None:
    """A LawFileError when `size` bytes is more than a law file may be."""
    if size > MAX_BYTES:
        raise LawFileError(f"larger than {MAX_BYTES >> 20} MiB, the most a law file may be: law "
                           "files are small; split the laws over several files", path=shown)
