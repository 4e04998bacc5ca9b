"""Opening a text capture to append to it: its header and digest checked, its last row kept
whole.

A last line without a final line break is a row when it parses whole, as lawkit's reader
decides (a CSV line with every column and a whole digest in the key column, which is last; a
JSON line that parses): it is kept, and ended with a line break before the next row. Only a
last line that does not parse whole is torn (a run killed mid-row) and cut off.
"""

from __future__ import annotations

import builtins
import csv
import json
import os
from dataclasses import dataclass
from pathlib import Path

from lawkit.config import digest_problem
from lawkit.errors import CaptureError

_MAX_HEAD = 1 << 20  # the longest header (or first JSON Lines row) read back when appending


@dataclass
class Existing:
    """A capture file opened for appending, checked, and what it needs before rows follow."""

    fd: int
    next_step: int
    """The first step's number: 0, or the step after the file's last row."""
    rows_exist: bool
    ending: bytes = b""
    """Written before the first row: the header of a new file, or the line break a whole last
    row lacks."""
    cut_at: int | None = None
    """Where a torn last line begins, cut off before the first row."""

    def prepare(self) -> None:
        """Make the file ready for rows (once every check has passed: until then, the file is
        as it was)."""
        if self.cut_at is not None:
            os.ftruncate(self.fd, self.cut_at)
        if self.ending:
            os.write(self.fd, self.ending)


def open_for_append(path: Path, shown: str, columns: tuple[str, ...], header: bytes,
                    digest: str, jsonl: bool) -> Existing:
    """`path` open for appending (created with its folders when missing): an existing file must
    hold this capture's header and digest."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        raise CaptureError(f"cannot open for writing: {exc.strerror}", path=shown) from None
    try:
        return _checked(fd, shown, columns, header, digest, jsonl)
    except BaseException:
        os.close(fd)
        raise


def _checked(fd: int, shown: str, columns: tuple[str, ...], header: bytes, digest: str,
             jsonl: bool) -> Existing:
    size = os.fstat(fd).st_size
    if size == 0:
        return Existing(fd, 0, rows_exist=False, ending=header)
    with builtins.open(os.dup(fd), "rb") as f:
        head = f.readline(_MAX_HEAD)
        start = max(0, size - _MAX_HEAD)
        f.seek(start)
        tail = f.read()
    rows_start = 0
    if jsonl:
        only = not head.endswith(b"\n") and len(head) == size
        if only and not _whole(head, columns, digest, jsonl):
            raise CaptureError("exists and holds no whole row: name a new file", path=shown)
        if not head.endswith(b"\n") and not only:
            raise CaptureError("exists and its first row is longer than "
                               f"{_MAX_HEAD >> 20} MiB: name a new file", path=shown)
        _check_jsonl_row(head, columns, shown)
    elif head != header:
        if head + b"\n" == header and len(head) == size:  # the header, its line break lost
            return Existing(fd, 0, rows_exist=False, ending=b"\n")
        raise CaptureError(f"exists with another header ({_clip(head)}): append only "
                           f"captures with the columns {', '.join(columns)}; name a new "
                           "file", path=shown)
    else:
        rows_start = len(header)
    existing = Existing(fd, 0, rows_exist=False)
    cut = tail.rfind(b"\n") + 1  # the end of the last line that has a line break
    last: tuple[int, int] | None = None  # where the last whole row is in `tail`
    if cut < len(tail) and start + cut >= rows_start:  # a last line with no line break
        if _whole(tail[cut:], columns, digest, jsonl):
            existing.ending, last = b"\n", (cut, len(tail))
        else:
            existing.cut_at = start + cut
    if last is None and cut:
        begins = tail.rfind(b"\n", 0, cut - 1) + 1
        if start + begins >= rows_start:
            last = (begins, cut)
    if last is not None:
        row = tail[last[0]:last[1]]
        existing.next_step = _step_of(row, columns, digest, shown, jsonl) + 1
        existing.rows_exist = True
    return existing


def _whole(line: bytes, columns: tuple[str, ...], digest: str, jsonl: bool) -> bool:
    """Whether a last line with no line break is a whole row, by the reader's rule."""
    if jsonl:
        try:
            json.loads(line)
        except ValueError:
            return False
        return True
    try:
        fields = next(csv.reader([line.decode("utf-8", "replace")], strict=True))
    except (csv.Error, StopIteration):
        return False
    return len(fields) >= len(columns) and \
        digest_problem(fields[len(columns) - 1], len(digest)) is None


def _check_jsonl_row(line: bytes, columns: tuple[str, ...], shown: str) -> None:
    row = _jsonl_row(line, shown)
    if tuple(row) != columns:
        raise CaptureError(f"exists with other columns ({', '.join(map(str, row))}): append "
                           f"only captures with the columns {', '.join(columns)}; name a new "
                           "file", path=shown)


def _jsonl_row(line: bytes, shown: str) -> dict[str, object]:
    # A row this writer made holds one object of scalars: anything nested is not one, and is
    # not handed to json (whose recursion a deep line would exhaust).
    if line.count(b"{") + line.count(b"[") > 1:
        raise CaptureError("exists and its rows are not this writer's (nested JSON): name a "
                           "new file", path=shown)
    try:
        row = json.loads(line)
    except ValueError:
        raise CaptureError("exists and its first row is not JSON: name a new file",
                           path=shown) from None
    if not isinstance(row, dict):
        raise CaptureError("exists and its rows are not JSON objects: name a new file",
                           path=shown)
    return row


def _step_of(line: bytes, columns: tuple[str, ...], digest: str, shown: str,
             jsonl: bool) -> int:
    """The step number of a whole row of an existing capture, whose digest must be `digest`."""
    if jsonl:
        row = _jsonl_row(line, shown)
        step, named = row.get("step"), row.get(columns[-1])
    else:
        cells = line.decode("utf-8", "replace").rstrip("\r\n").split(",")
        step, named = (cells[0], cells[-1]) if len(cells) == len(columns) else (None, None)
    if named != digest:
        raise CaptureError(f"exists with rows on {columns[-1]}={named!r}: appending rows on "
                           f"{digest} would mix two engine digests in one file; name a new "
                           "file", path=shown)
    try:
        return int(str(step))
    except ValueError:
        raise CaptureError(f"exists and its last row's step is {step!r}, not a number: name a "
                           "new file", path=shown) from None


def _clip(data: bytes) -> str:
    text = data.decode("utf-8", "replace").rstrip("\r\n")
    return repr(text if len(text) <= 60 else text[:57] + "...")
