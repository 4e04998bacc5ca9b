"""Finding capture files: paths, folders and globs expanded into `Capture`s, each named by
its format and compression (`capture_format`) and hashed as stored (`sha256_all`).
"""

from __future__ import annotations

import glob
import hashlib
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from lawkit.capture.host import SUFFIX as HOST_SUFFIX  # a capture's host file, not a trace
from lawkit.errors import CaptureError

Format = Literal["csv", "jsonl", "parquet", "trace"]

SUFFIXES: dict[str, Format] = {".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl",
                               ".parquet": "parquet", ".pq": "parquet", ".json": "trace"}
KNOWN = "*.csv, *.jsonl, *.ndjson, *.parquet, *.pq, a *.json trace, each optionally .gz"
METADATA_PREFIX = "lawkit."
"""Parquet file metadata `lawkit.<key>` names the digest a file without a key column ran on."""
_GLOB_CHARS = set("*?[")
FOLDER_TRACE_SUFFIX = ".trace.json"
"""A folder's traces are its `*.trace.json` files (kineto's `tensorboard_trace_handler`
writes `<worker>.<time>.pt.trace.json`): other JSON files beside captures are not taken for
traces; name a trace file, or a glob, to read any other."""


@dataclass(frozen=True)
class Capture:
    """One capture file: where it is, how messages name it, and how it is stored."""

    path: Path
    shown: str
    format: Format
    compressed: bool

    def sha256(self) -> str:
        """The sha256 of the file's bytes as stored."""
        try:
            with self.path.open("rb") as f:
                return hashlib.file_digest(f, "sha256").hexdigest()
        except OSError as exc:
            raise CaptureError(f"cannot read: {exc.strerror}", path=self.shown) from None



def capture_format(path: Path | str) -> tuple[Format, bool] | None:
    """The format and compression a file name says, or None for an unknown extension (and for
    `*.host.json`: the host of a capture beside it, never a trace)."""
    name = Path(path).name.lower()
    compressed = name.endswith(".gz")
    if compressed:
        name = name[:-3]
    if name.endswith(HOST_SUFFIX):
        return None
    for suffix, fmt in SUFFIXES.items():
        if name.endswith(suffix):
            return fmt, compressed
    return None


def find_captures(paths: Sequence[str | Path], *, cwd: Path | None = None,
                  shown: Any = None) -> list[Capture]:
    """Capture files from paths, folders (every capture file below) and globs, each once.

    `shown(path) -> str` names a file in messages (default: the path as found).
    """
    here = (cwd or Path.cwd()).absolute()
    name = shown or (lambda p: str(p))
    out: dict[Path, Capture] = {}
    if not paths:
        raise CaptureError("no capture files given: name CSV, JSON Lines, Parquet or trace "
                           "files, folders or globs")
    for given in paths:
        text = str(given)
        if _GLOB_CHARS & set(text):
            hits = sorted(glob.glob(text if os.path.isabs(text) else str(here / text),
                                    recursive=True))
            files = [Path(h) for h in hits if Path(h).is_file()]
            if not files:
                raise CaptureError(f"no capture file matches {text!r}")
            for file in files:
                if capture_format(file) is None:
                    continue  # a glob may match other files; a named file may not
                _add(out, file, name)
            if not any(capture_format(f) for f in files):
                raise CaptureError(f"{text!r} matches no capture file ({KNOWN})")
            continue
        path = Path(text) if os.path.isabs(text) else here / text
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _in_folder(p))
            if not found:
                raise CaptureError(f"no capture file ({KNOWN}) in the folder", path=name(path))
            for file in found:
                _add(out, file, name)
            continue
        if not path.exists():
            raise CaptureError("cannot read: no such file", path=name(path))
        if capture_format(path) is None:
            raise CaptureError(f"unknown capture format: expected {KNOWN}", path=name(path))
        _add(out, path, name)
    return list(out.values())


def _in_folder(path: Path) -> bool:
    """Whether a file below a folder given is a capture (see `FOLDER_TRACE_SUFFIX`)."""
    found = capture_format(path)
    return found is not None and (found[0] != "trace" or path.name.lower().removesuffix(
        ".gz").endswith(FOLDER_TRACE_SUFFIX))


def _add(out: dict[Path, Capture], path: Path, name: Any) -> None:
    absolute = Path(os.path.abspath(path))
    key = absolute.resolve()
    if key in out:
        return
    found = capture_format(absolute)
    assert found is not None
    out[key] = Capture(path=absolute, shown=name(absolute), format=found[0],
                       compressed=found[1])


def sha256_all(captures: Sequence[Capture], *, threads: int = 4) -> list[str]:
    """The sha256 of every capture file, hashed in parallel (hashlib releases the GIL)."""
    if len(captures) <= 1:
        return [c.sha256() for c in captures]
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(Capture.sha256, captures))


__all__ = ["KNOWN", "METADATA_PREFIX", "SUFFIXES", "Capture", "Format", "capture_format",
           "find_captures", "sha256_all"]
