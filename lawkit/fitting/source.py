"""Where a fit's rows come from: kept in memory when the captures are small, else streamed in
chunks, the text parsed once by the first pass (the scan) and every later pass read from the
spill (`lawkit.fitting.spill`).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence

from lawkit.errors import FitError
from lawkit.fitting.captures.chunks import Chunk, ColumnSpec
from lawkit.fitting.captures.files import Capture, sha256_all
from lawkit.fitting.captures.read import read_captures
from lawkit.fitting.progress import PassBar
from lawkit.fitting.request import FitRequest
from lawkit.fitting.spill import Spill

STREAM_ROWS = 1 << 20
"""Rows per chunk when a fit streams."""
IN_MEMORY_BYTES = 64 << 20
"""The budget of parsed columns a fit may hold in memory: above this estimated size of the
columns read (8 bytes a value; a text file's size as the estimate for its values), captures
stream (environment variable LAWKIT_IN_MEMORY_BYTES overrides it; 0 always streams). Reading
in memory holds the columns several times over (parsing, the cached chunks, each law's design),
so the budget keeps the peak of either path alike (bench/fit.py measures both)."""



def chunk_rows_for(request: FitRequest, found: Sequence[Capture],
                   spec: ColumnSpec) -> int | None:
    """The rows per streamed chunk, or None to read the captures in memory (`IN_MEMORY_BYTES`)."""
    if request.chunk_rows is not None:
        return request.chunk_rows
    estimate = 0
    columns = max(len(spec.names()), 1)
    for capture in found:
        try:
            size = capture.path.stat().st_size
        except OSError:
            continue  # the read names the problem
        if capture.format == "parquet" and not capture.compressed:
            estimate += _parquet_rows(capture) * columns * 8
        else:
            estimate += size * (5 if capture.compressed else 1)
    limit = IN_MEMORY_BYTES
    override = os.environ.get("LAWKIT_IN_MEMORY_BYTES", "").strip()
    if override:
        try:
            limit = int(override)
        except ValueError:
            raise FitError(f"LAWKIT_IN_MEMORY_BYTES={override!r}: expected a number of "
                           "bytes") from None
    return STREAM_ROWS if estimate > limit else None


def _parquet_rows(capture: Capture) -> int:
    import pyarrow.parquet as pq

    try:
        return int(pq.ParquetFile(str(capture.path)).metadata.num_rows)
    except Exception:  # unreadable: the read names the problem
        return 0


def start_hashing(found: Sequence[Capture]) -> Callable[[], list[str]]:
    """Hash the capture files on a thread while they are read (hashlib releases the GIL)."""
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1)
    future = pool.submit(sha256_all, found)
    pool.shutdown(wait=False)
    return future.result
class Source:
    """The capture rows: chunks kept in memory, or streamed: parsed from the files by the
    first pass (`first_pass`), which spills them, and read from the spill by every later one.
    A context manager: the spill is removed on leaving it."""

    def __init__(self, found: Sequence[Capture], spec: ColumnSpec,
                 chunk_rows: int | None, bar: PassBar | None = None) -> None:
        self.found = list(found)
        self.bar = bar or PassBar(quiet=True)
        """Where each pass shows (a streamed fit's)."""
        self.spec = spec
        self.chunk_rows = chunk_rows
        self._cached: list[Chunk] | None = None
        self._spill: Spill | None = None
        self.passes = 0
        """Passes over the rows so far (the first included)."""

    @property
    def streaming(self) -> bool:
        """Whether the rows are streamed (else kept in memory)."""
        return self.chunk_rows is not None

    def first_pass(self) -> Iterator[Chunk]:
        """The rows, parsed from the files; streamed, each chunk is spilled as it is read (a
        pass after the spill is written reads the spill)."""
        if not self.streaming or self._spill is not None:
            yield from self.chunks()
            return
        assert self.chunk_rows is not None
        self.record_pass(None)
        spill = Spill.create(self.found, self.spec, self.chunk_rows)
        try:
            for chunk in read_captures(self.found, self.spec,
                                                chunk_rows=self.chunk_rows):
                spill.write(chunk)
                yield chunk
                self.bar.advance(chunk.size)
            spill.flush()
        except BaseException:
            spill.remove()
            raise
        self._spill = spill

    def chunks(self) -> Iterator[Chunk]:
        """The rows, once more: from memory, the spill, or (before the first pass) the files."""
        if self.streaming:
            self.record_pass(self._spill.rows if self._spill is not None else None)
            read = self._spill.chunks() if self._spill is not None else \
                read_captures(self.found, self.spec, chunk_rows=self.chunk_rows)
            for chunk in read:
                yield chunk
                self.bar.advance(chunk.size)
            return
        self.passes += 1
        if self._cached is None:
            self._cached = list(read_captures(self.found, self.spec))
        yield from self._cached

    def record_pass(self, rows: int | None) -> None:
        """Count (and show) a pass over `rows` rows, None when not known yet; a law's design
        spill records its own passes here."""
        self.passes += 1
        self.bar.start(rows)

    def close(self) -> None:
        """Remove the spill."""
        if self._spill is not None:
            self._spill.remove()
            self._spill = None

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["IN_MEMORY_BYTES", "STREAM_ROWS", "Source", "chunk_rows_for", "start_hashing"]
