"""Footprints: which engine code ran while captures were taken, and what a change to the engine
touches.

Two programs. `lawkit.footprint.measured` runs inside the engine's own processes while
`record` measures them (the markers, the start-up hook, the recorders: the standard library
only, its rules in its docstring); it records, and the rest of this wing, in lawkit's own
process, reads what it wrote, hashes, attributes and judges. This wing is light. May import:
the standard library, ``packaging`` and pydantic (versions and lock files, the footprint
document), coverage.py (only to record), ``src_digest``, ``lawkit.errors``, ``lawkit.config``
and ``lawkit.fsio``; never numpy, pandas or scipy, and never another wing. ``keying`` (review,
rekey) and ``fitting`` (``fit --footprint``) use it through:

    units.units_of(source) / codes_of(source) / layout_only(old, new)    a file's units
    record.record_footprint(ws, command, out, *, cwd=None) -> RecordReport   footprint record
    document.read_footprint(path) / decode_footprint(raw, shown=) -> Footprint
    trees.work_tree_sources(config) / trees.rev_sources(config, rev) -> SourceTree
    verdict.diff_footprint(footprint, target, old_source=None) -> FootprintDiff
    verdict.diff_work_tree(ws, footprint) / verdict.diff_rev(ws, footprint, rev)
    history.git_old_source(config) -> old_source     the recorded bytes, found in git history
    binding.bind_footprint(ws, path, captures_digest) -> (Footprint, Binding)   for fit
    binding.bound_footprint(ws, binding, read=None) -> Footprint | None   a law's evidence
    lawverdict.law_verdict(regions, changes, target, env=None) / worst_verdict(verdicts)
        -> one law's verdict, the one rule check, diff, rekey and review show
    envverdict.env_spec(ws, option) / compare_env(record, spec, clauses) / env_clauses(host)
        -> the target environment and what differs from the recorded one

The markers (`phase`, `region`, `enter_region`, `exit_region`, `recording`, ...) are
re-exported here from `lawkit.footprint.measured.markers`, which says what they do.
"""

from lawkit.footprint.measured.markers import (
    ANY_REGION,
    ENGINE_FREE,
    OWN_THREAD,
    PHASES,
    Context,
    RegionError,
    current_phase,
    enter_region,
    exit_region,
    open_regions,
    phase,
    recording,
    region,
)

__all__ = ["ANY_REGION", "ENGINE_FREE", "OWN_THREAD", "PHASES", "Context", "RegionError",
           "current_phase", "enter_region", "exit_region", "open_regions", "phase", "recording",
           "region"]
