"""The spill: a streamed fit's capture columns, parsed once, in a binary file every later pass
reads instead of the text (docs/fitting.md).

The first pass (the scan) parses the captures and appends each chunk to the spill: number
columns as float64 (NaN where a value was not a number, as the chunk holds them), label and
digest columns of text as int32 codes into a dictionary kept in this process, other label
columns in their own numeric dtype. Consecutive chunks of a file are written as one block of
up to `BLOCK_ROWS` rows (a CSV reader's chunks are its 1 MiB text blocks, some 25,000 rows:
a pass over blocks ten times larger pays its per-chunk costs ten times less, and a pass's
temporaries, a few design-sized arrays per block, stay near 10 MiB each), with a flag
per column when every value of the block is valid, so that no pass checks it again. Every
later pass reads the spill back block by block into one reused buffer with `readinto`: an
mmap's touched pages would count as the process's resident memory, a read into one buffer
holds one block.

The file lives in the temp folder (`temp_folder`: the one TMPDIR names, never another in its
place, else the system's), never beside the laws, named `lawkit-spill-<pid>-*.bin`; it is
removed when the fit ends, on error too, and a spill left by a killed fit (its process gone)
is removed by the next fit's start (`remove_stale`, any fit's, in memory too). SIGTERM during
a fit removes it before the process ends (`removed_on_sigterm`). A folder that cannot take the
spill (missing, read-only, full) is a FitError naming it and TMPDIR.

A law's own passes read less still: its first pass spills the design it builds (`DesignSpill`:
X in column order, y and the weights, piece by piece as the first pass cut them), and every
later pass of its method reads those pieces back, with no row selection, validation or design
to build again, on worker threads: each reads its pieces into one buffer of its own.

A spilled chunk's arrays are views of the buffer, valid until the next block is read; a
spilled piece's, of its thread's buffer, valid until the function given them returns.
"""

from __future__ import annotations

import collections
import contextlib
import errno
import io
import os
import signal
import tempfile
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TypeVar

import numpy as np

from lawkit.errors import CaptureError, FitError
from lawkit.fitting.captures.chunks import Chunk, ColumnSpec
from lawkit.fitting.captures.files import Capture
from lawkit.fitting.captures.read import read_chunks

PREFIX = "lawkit-spill-"
BLOCK_ROWS = 1 << 18
"""At most this many rows a block (fewer when the fit's chunks are smaller)."""
_CODES = np.dtype(np.int32)
_EMPTY = "\x00empty:"
"""The prefix of a block's column holding another column's empty cells (a region the step did
not enter, docs/captures.md), stored only where a chunk has such cells."""
_T = TypeVar("_T")
_open: set[Path] = set()
"""This process's spill files, until removed."""


@dataclass(frozen=True)
class _Column:
    """Where one column of a block lies in the block: its dtype, whether it is coded, and
    whether every value of the block is valid."""

    name: str
    dtype: str
    offset: int
    coded: bool
    valid: bool


@dataclass(frozen=True)
class _Block:
    """One chunk as the scan read it: which rows of which file, and where its bytes are."""

    file_index: int
    start: int
    size: int
    digest: str | None
    offset: int
    nbytes: int
    columns: tuple[_Column, ...]


@dataclass
class SpilledChunk(Chunk):
    """A chunk read back from the spill. Its error for an invalid value re-reads those rows of
    the capture, so that the message quotes the value as the file holds it ("'abc' is not a
    number"), as the text pass would have."""

    chunk_rows: int = 0

    def error(self, column: str, row: int) -> CaptureError:
        at = self.start + row
        for chunk in read_chunks(self.capture, self.spec, chunk_rows=self.chunk_rows,
                                 file_index=self.file_index):
            if chunk.start <= at < chunk.start + chunk.size:
                return chunk.error(column, at - chunk.start)
        return super().error(column, row)


@dataclass
class Spill:
    """A spill file being written (`write`) and then read (`chunks`); `remove` deletes it."""

    path: Path
    found: list[Capture]
    spec: ColumnSpec
    chunk_rows: int
    _file: io.BufferedRandom | None = None
    _blocks: list[_Block] = field(default_factory=list)
    _codes: dict[str, dict[Any, int]] = field(default_factory=dict)
    _values: dict[str, list[Any]] = field(default_factory=dict)
    _size: int = 0
    _pending: list[tuple[Chunk, dict[str, tuple[Any, bool]]]] = field(
        default_factory=list)

    @classmethod
    def create(cls, found: list[Capture], spec: ColumnSpec,
               chunk_rows: int) -> Spill:
        """A new, empty spill in the temp folder."""
        path, file = _temp_file()
        return cls(path, found, spec, chunk_rows, file)

    @property
    def blocks(self) -> int:
        """Blocks written so far."""
        return len(self._blocks)

    @property
    def rows(self) -> int:
        """Rows written so far."""
        return sum(b.size for b in self._blocks)

    def write(self, chunk: Chunk) -> None:
        """Append a chunk: to the pending block when it continues it, else a block of its own
        (the pending one written first)."""
        encoded = {name: self._encode(name, values) for name, values in chunk.columns.items()}
        for name in chunk.columns:
            empty = chunk.empty(name)
            if empty.any():
                encoded[_EMPTY + name] = (np.ascontiguousarray(empty), False)
        if self._pending:
            last, before = self._pending[-1]
            held = sum(c.size for c, _ in self._pending)
            if (last.file_index != chunk.file_index or last.start + last.size != chunk.start
                    or last.digest != chunk.digest
                    or held + chunk.size > min(self.chunk_rows, BLOCK_ROWS)
                    or [(n, v.dtype, c) for n, (v, c) in before.items()]
                    != [(n, v.dtype, c) for n, (v, c) in encoded.items()]):
                self.flush()
        self._pending.append((chunk, encoded))

    def flush(self) -> None:
        """Write the pending chunks as one block."""
        if not self._pending:
            return
        assert self._file is not None
        first = self._pending[0][0]
        size = sum(c.size for c, _ in self._pending)
        columns = []
        at = 0
        try:
            for name, (data, coded) in self._pending[0][1].items():
                valid = not name.startswith(_EMPTY) and all(
                    bool(c.valid([name]).all()) for c, _ in self._pending)
                columns.append(_Column(name, data.dtype.str, at, coded, valid))
                for _chunk, encoded in self._pending:
                    self._file.write(memoryview(encoded[name][0]).cast("B"))
                    at += encoded[name][0].nbytes
        except OSError as exc:
            raise _no_room(exc, str(self.path.parent)) from None
        self._blocks.append(_Block(first.file_index, first.start, size, first.digest,
                                   self._size, at, tuple(columns)))
        self._size += at
        self._pending.clear()

    def _encode(self, name: str, values: Any) -> tuple[Any, bool]:
        """(the column's bytes as an array, whether they are codes)."""
        if values.dtype.kind != "O":
            return np.ascontiguousarray(values), False
        # Text (and anything else held as objects) as codes: a label column holds a handful
        # of distinct values over millions of rows.
        index = self._codes.setdefault(name, {})
        known = self._values.setdefault(name, [])
        before = len(index)
        codes = np.fromiter((index.setdefault(_key(v), len(index)) for v in values.tolist()),
                            dtype=_CODES, count=len(values))
        if len(index) > before:
            new = sorted((code, key) for key, code in index.items() if code >= before)
            known.extend(_value(key) for _code, key in new)
        return codes, True

    def chunks(self) -> Iterator[SpilledChunk]:
        """Every block in order, each read into the one buffer (a chunk's arrays are valid
        until the next one is asked for)."""
        assert self._file is not None
        self.flush()
        _flush(self._file, self.path)
        biggest = max((b.nbytes for b in self._blocks), default=0)
        buffer = bytearray(biggest)
        view = memoryview(buffer)
        decoded = {name: np.array([*values, None], dtype=object)[:-1]
                   for name, values in self._values.items()}
        for block in self._blocks:
            self._file.seek(block.offset)
            got = self._file.readinto(view[:block.nbytes])
            if got != block.nbytes:
                raise FitError(f"the spill {self.path} was cut short ({got} of {block.nbytes} "
                               "bytes of a block): was the temp folder cleaned during the fit?")
            columns: dict[str, Any] = {}
            empty: dict[str, Any] = {}
            everywhere = np.ones(block.size, dtype=bool)
            for column in block.columns:
                dtype = np.dtype(column.dtype)
                values = np.frombuffer(buffer, dtype=dtype, count=block.size,
                                       offset=column.offset)
                if column.name.startswith(_EMPTY):
                    empty[column.name.removeprefix(_EMPTY)] = values
                else:
                    columns[column.name] = decoded[column.name][values] if column.coded \
                        else values
            yield SpilledChunk(capture=self.found[block.file_index],
                               file_index=block.file_index, start=block.start, size=block.size,
                               columns=columns, digest=block.digest, spec=self.spec,
                               _empty=empty,
                               _valid={c.name: everywhere for c in block.columns if c.valid},
                               chunk_rows=self.chunk_rows)

    def remove(self) -> None:
        """Close and delete the file (nothing happens the second time)."""
        _remove(self.path, self._file)
        self._file = None


@dataclass
class DesignSpill:
    """One law's design pieces `(x, y, w)`, written by its first pass and read back by every
    later one; a context manager that removes the file."""

    path: Path
    _file: io.BufferedRandom | None
    _pieces: list[tuple[int, int, int, int, bool]] = field(default_factory=list)
    """(offset, bytes, rows, columns, weighted) of each piece."""
    _size: int = 0

    @classmethod
    def create(cls) -> DesignSpill:
        """A new, empty design spill in the temp folder."""
        return cls(*_temp_file())

    @property
    def rows(self) -> int:
        """Rows written so far."""
        return sum(rows for _, _, rows, _, _ in self._pieces)

    def write(self, x: Any, y: Any, w: Any) -> None:
        """Append a piece: x (rows by columns, stored column after column), y, w or None."""
        assert self._file is not None
        rows, cols = x.shape
        parts: list[Any] = [np.asfortranarray(x, dtype=np.float64).T, np.ascontiguousarray(y)]
        if w is not None:
            parts.append(np.ascontiguousarray(w))
        start = self._size
        try:
            for part in parts:
                self._file.write(memoryview(part).cast("B"))
                self._size += part.nbytes
        except OSError as exc:
            raise _no_room(exc, str(self.path.parent)) from None
        self._pieces.append((start, self._size - start, rows, cols, w is not None))

    def each(self, fn: Callable[[Any, Any, Any], _T], workers: int) -> Iterator[_T]:
        """``fn(x, y, w)`` of every piece, in the pieces' order, run on `workers` threads: each
        thread reads its pieces into one buffer of its own (``os.preadv``, at the piece's
        offset), so a piece is read while another is answered. The arrays ``fn`` gets are views
        of that buffer, valid until ``fn`` returns; one piece more than the threads is in flight."""
        assert self._file is not None
        _flush(self._file, self.path)
        fd = self._file.fileno()
        largest = max((size for _, size, _, _, _ in self._pieces), default=0)
        buffers = threading.local()

        def one(piece: tuple[int, int, int, int, bool]) -> _T:
            offset, size, rows, cols, weighted = piece
            buffer = getattr(buffers, "buffer", None)
            if buffer is None:
                buffer = buffers.buffer = bytearray(largest)
            if os.preadv(fd, [memoryview(buffer)[:size]], offset) != size:
                raise FitError(f"the spill {self.path} was cut short: was the temp folder "
                               "cleaned during the fit?")
            x = np.frombuffer(buffer, dtype=np.float64, count=rows * cols).reshape(cols, rows).T
            y = np.frombuffer(buffer, dtype=np.float64, count=rows, offset=rows * cols * 8)
            w = np.frombuffer(buffer, dtype=np.float64, count=rows,
                              offset=rows * (cols + 1) * 8) if weighted else None
            return fn(x, y, w)

        with ThreadPoolExecutor(max_workers=max(workers, 1)) as pool:
            pending: collections.deque[Future[_T]] = collections.deque()
            for piece in self._pieces:
                pending.append(pool.submit(one, piece))
                if len(pending) > workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()

    def __enter__(self) -> DesignSpill:
        return self

    def __exit__(self, *exc: object) -> None:
        _remove(self.path, self._file)
        self._file = None


def temp_folder() -> Path:
    """The folder spills go to: the one TMPDIR (else TEMP, else TMP) names when set, whether
    or not it can take a file, else the system's (`tempfile.gettempdir()`).

    `tempfile.gettempdir()` tries the folder TMPDIR names and, when it cannot write a file
    there (missing, read-only, full), falls back in silence to /tmp: a spill there would miss
    the disk the user chose, fill another, and leave its leftovers where no next fit looks. A
    folder the user named that cannot take the spill is an error naming it instead."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = os.environ.get(name)
        if value:
            return Path(os.path.abspath(value))
    return Path(tempfile.gettempdir())


def _temp_file() -> tuple[Path, io.BufferedRandom]:
    """A new spill file in the temp folder, open for writing and reading."""
    folder = str(temp_folder())
    try:
        handle, name = tempfile.mkstemp(prefix=f"{PREFIX}{os.getpid()}-", suffix=".bin",
                                        dir=folder)
    except OSError as exc:
        raise _no_room(exc, folder) from None
    _open.add(Path(name))
    return Path(name), open(handle, "w+b")  # closed by its owner's remove


def _flush(file: io.BufferedRandom, path: Path) -> None:
    """Write the file's buffered bytes before it is read: the last of the spill, where a disk
    that fills may fill."""
    try:
        file.flush()
    except OSError as exc:
        raise _no_room(exc, str(path.parent)) from None


def _remove(path: Path, file: io.BufferedRandom | None) -> None:
    """Close and delete a spill file; a close that fails (its buffered bytes meeting a full
    disk) still closes the descriptor, and those bytes were going to be deleted anyway."""
    try:
        if file is not None:
            with contextlib.suppress(OSError):
                file.close()
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        _open.discard(path)


def _key(value: Any) -> Any:
    """A dictionary key that keeps the type: 1, 1.0 and True are one key to a dict."""
    return value if type(value) is str else (type(value), value)


def _value(key: Any) -> Any:
    return key if type(key) is str else key[1]


def remove_stale(folder: Path) -> list[Path]:
    """Delete the spills in `folder` whose fit is gone (killed before it could remove its
    own), this user's only; returns them."""
    removed: list[Path] = []
    try:
        names = [p for p in folder.iterdir() if p.name.startswith(PREFIX)]
    except OSError:
        return removed
    for path in names:
        pid = path.name[len(PREFIX):].partition("-")[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        try:
            if path.stat().st_uid != os.getuid():
                continue
            path.unlink()
        except OSError:
            continue
        removed.append(path)
    return removed


class _Terminated(BaseException):
    """SIGTERM during a fit: unwinds it, so that every `with` closes (the spill, the progress
    bar, a Dask cluster), before the process ends as SIGTERM would have ended it."""


@contextlib.contextmanager
def removed_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM first removes this process's spills, then does what it did
    before: ends the process (status 143 in a shell: killed by SIGTERM), or calls the handler
    the program had installed. Only in the main thread, where Python runs signal handlers; the
    handler found is back after the block."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous is None or previous == signal.SIG_IGN:
        yield  # set outside Python (it could not be put back) or ignored: left alone
        return
    caught: list[int] = []

    def on_sigterm(signum: int, frame: FrameType | None) -> None:
        _remove_own()  # first: whatever the unwinding meets, the files are gone
        if callable(previous):
            previous(signum, frame)  # the program's own: it decides (the open files still work)
            return
        if not caught:
            caught.append(signum)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
            raise _Terminated

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        # whatever ends the block once SIGTERM came (_Terminated, or another error raised while
        # unwinding, or nothing when a library swallowed it), the process ends now
        signal.signal(signal.SIGTERM, previous)
        if caught:
            _remove_own()
            signal.raise_signal(signal.SIGTERM)  # the default action: the process ends here
            raise SystemExit(128 + signal.SIGTERM)  # not reached


def _remove_own() -> None:
    """Delete this process's spill files (their open descriptors keep working)."""
    for path in list(_open):
        with contextlib.suppress(OSError):
            path.unlink()


def _spilled() -> int:
    """The bytes this process's spill files hold on disk (the columns and a law's design)."""
    total = 0
    for path in list(_open):
        with contextlib.suppress(OSError):
            total += path.stat().st_size
    return total


def _amount(size: int) -> str:
    return f"{size / 2**20:.1f} MiB" if size >= 2**20 else f"{max(size // 1024, 1)} KiB"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _no_room(exc: OSError, folder: str) -> FitError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        spilled = _spilled()
        what = "the disk filled" + (
            f"; this fit had spilled {_amount(spilled)} there" if spilled else "")
        fix = "free space there, or set TMPDIR to a folder with room"
    else:
        what = exc.strerror or str(exc)
        fix = "create it, or set TMPDIR to a folder you can write to"
    return FitError(f"cannot spill the parsed captures to {folder} ({what}): a streamed fit "
                    f"keeps its columns there between passes (about 8 bytes a value); {fix}")


__all__ = ["BLOCK_ROWS", "PREFIX", "DesignSpill", "Spill", "SpilledChunk", "remove_stale",
           "removed_on_sigterm", "temp_folder"]
