"""Footprints (DESIGN section 11): which engine code ran while captures were taken, and what a
change to the engine touches.

This wing is light. May import: only the standard library, coverage.py (only to record),
``src_digest``, ``lawkit.errors`` and ``lawkit.config``; never numpy, pandas or scipy, and never
another wing. ``keying`` (review, rekey) and ``fitting`` (``fit --footprint``) use it through:

    units.units_of(source: bytes) -> list[Unit]           a file's units and their digests
    units.layout_only(old: bytes, new: bytes) -> bool     only comments, blank lines, docstrings
    record.record_footprint(ws, command, out, *, cwd=None) -> RecordReport
    document.read_footprint(path) / decode_footprint(raw, shown=) -> Footprint
    trees.work_tree_sources(config) / trees.rev_sources(config, rev) -> SourceTree
    verdict.diff_footprint(footprint, target, old_source=None) -> FootprintDiff
    verdict.diff_work_tree(ws, footprint) / verdict.diff_rev(ws, footprint, rev)
    history.git_old_source(config) -> old_source     the recorded bytes, found in git history
    binding.bind_footprint(ws, path, captures_digest) -> (Footprint, Binding)   for fit
    binding.law_file_verdict(ws, binding, target, read=None, old_source=None)
        -> (verdict, FootprintDiff | None)           for rekey and review; "unknown" unbound

An engine or harness marks where its steps begin with ``lawkit.footprint.phase("steps")``,
and the timed regions of a step with ``with lawkit.footprint.region("sample_s"):`` (DESIGN
section 12; ``lawkit.capture`` calls the same markers). Phases are process-wide, regions per
thread; a region entered outside ``steps`` is an error, recording or not. When no footprint is
being recorded a marker only keeps that state (no event, no I/O); a recorder that runs in the
process sets ``_recorder`` and is told of every switch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

PHASES = ("startup", "steps")
"""The phases of a recording: the main process starts in the first."""


class RegionError(ValueError):
    """A region marker used out of place: outside ``steps``, or exited without being entered."""


class Recorder(Protocol):
    """What a recorder running in this process is told (it may re-arm its events)."""

    def switched_phase(self, name: str) -> None: ...
    def switched_regions(self, regions: tuple[str, ...]) -> None: ...


_recorder: Recorder | None = None
"""Set by the recorder of `lawkit footprint record` when it runs in this process."""
_phase = "startup"
_local = threading.local()


def phase(name: str) -> None:
    """Enter a phase (``"startup"`` or ``"steps"``) of the process; costs nothing when not
    recording."""
    global _phase
    if name not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {name!r}")
    _phase = name
    if _recorder is not None:
        _recorder.switched_phase(name)


def current_phase() -> str:
    """The process's phase: ``"startup"`` until ``phase("steps")`` (a measured child process
    starts in ``steps``)."""
    return _phase


def open_regions() -> tuple[str, ...]:
    """The regions open on this thread, outermost first."""
    regions: tuple[str, ...] = getattr(_local, "regions", ())
    return regions


def enter_region(name: str) -> None:
    """Open a region on this thread; a ``RegionError`` outside ``steps``."""
    if _phase != "steps":
        raise RegionError(f"region {name!r} entered in the {_phase} phase: regions are "
                          "parts of a step; call lawkit.footprint.phase(\"steps\") first")
    regions = (*getattr(_local, "regions", ()), name)
    _local.regions = regions
    if _recorder is not None:
        _recorder.switched_regions(regions)


def exit_region(name: str) -> None:
    """Close the innermost region of this thread, which must be ``name``."""
    regions: tuple[str, ...] = getattr(_local, "regions", ())
    if not regions or regions[-1] != name:
        open_ = regions[-1] if regions else "none"
        raise RegionError(f"region {name!r} exited, but the innermost open region is {open_}")
    regions = regions[:-1]
    _local.regions = regions
    if _recorder is not None:
        _recorder.switched_regions(regions)


@contextmanager
def region(name: str) -> Iterator[None]:
    """Mark a region of a step on this thread (no timing: ``lawkit.capture`` times them)."""
    enter_region(name)
    try:
        yield
    finally:
        exit_region(name)
