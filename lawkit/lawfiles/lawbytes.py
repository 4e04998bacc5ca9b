"""Reading a law file's bytes safely: a regular file, never a symlink followed, a FIFO waited
on or a huge file read whole. Kept apart from `lawfile` so that `check` can read and
hash files without importing pydantic or PyYAML when its cache already knows them."""

from __future__ import annotations

from pathlib import Path

from lawkit.errors import LawFileError
from lawkit.fsio import ReadRefused, read_regular_file

MAX_BYTES = 1 << 20
"""The largest law file lawkit reads (1 MiB). Law files are small (the bundled ones are about
3 KB, a law about 750 bytes): a bigger file is refused before it is read, so that a runaway or
hostile one cannot cost CI minutes or gigabytes. `yamlsafe.MAX_NODES` bounds what
fits in it."""


def read_bytes(path: str | Path, shown: str) -> bytes:
    """The bytes of a law file: a regular file (never a symlink followed, a folder or a FIFO)
    of at most `MAX_BYTES`; a LawFileError otherwise."""
    try:
        return read_regular_file(path, MAX_BYTES, follow_symlinks=False)
    except ReadRefused as exc:
        if exc.problem == "size":
            check_size(MAX_BYTES + 1, shown)
        if exc.problem in ("symlink", "kind"):
            kind = exc.detail if exc.detail in ("a symlink", "a folder", "a FIFO") \
                else "a special file"
            raise _not_regular(kind, shown) from None
        what = "no such file" if exc.problem == "missing" else exc.detail
        raise LawFileError(f"cannot read: {what}", path=shown) from None


def _not_regular(what: str, shown: str) -> LawFileError:
    return LawFileError(f"not a regular file ({what}): law files are plain files", path=shown)


def check_size(size: int, shown: str) -> None:
    """A LawFileError when `size` bytes is more than a law file may be."""
    if size > MAX_BYTES:
        raise LawFileError(f"larger than {MAX_BYTES >> 20} MiB, the most a law file may be: law "
                           "files are small; split the laws over several files", path=shown)
