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
which costs nothing when no footprint is being recorded.
"""

from __future__ import annotations

import os
import sys

PHASES = ("startup", "steps")
"""The phases of a recording: the main process starts in the first."""

_RECORDING_ENV = "LAWKIT_FOOTPRINT_DIR"


def phase(name: str) -> None:
    """Enter a phase (``"startup"`` or ``"steps"``) of a recording; a no-op when not recording."""
    if name not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {name!r}")
    if not os.environ.get(_RECORDING_ENV):
        return
    coverage = sys.modules.get("coverage")
    if coverage is None:
        return
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(name)
