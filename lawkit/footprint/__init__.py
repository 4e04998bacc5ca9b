"""Footprints: which engine code ran while captures were taken, and what a change to the engine
touches.

Two programs. `lawkit.footprint.measured` runs inside the engine's own processes while
`record` measures them (the markers, the start-up hook, the recorders: the standard library
only, its rules in its docstring); it records, and the rest of this wing, in lawkit's own
process, reads what it wrote, hashes, attributes and judges. `lawkit.capture`, the engine-side
capture writer, belongs to this wing too (docs/development.md).

This wing is light. May import: the standard library, ``packaging`` and pydantic (with its
``typing_extensions``: versions and lock files, the footprint document), coverage.py (only to
record on 3.11), ``src_digest``, ``lawkit.errors``, ``lawkit.config`` and ``lawkit.fsio``;
never numpy, pandas or scipy, and never another wing.

Entry points, with who calls them (every other module is the wing's own):

    record.record_footprint(ws, command, out, *, cwd=None) -> RecordReport       cli
    cost.record_cost(events, armed_threads, seconds) -> RecordCost               cli
    runcaptures.RunCaptures.before(folder) / region_seconds(times)               cli
    overhead.measure_overhead(ws, command, runs) -> OverheadReport               cli
    manifest.export_manifest(search_path) / write_manifest(manifest, out)        cli (env)
    document.read_footprint(path) / decode_footprint(raw, shown=) -> Footprint   cli, keying
    filemodel.footprint_schema() -> the footprint file's JSON Schema             keying
    units.units_of(source) / codes_of(source) / layout_only(old, new)            keying
    trees.work_tree_sources(config) -> SourceTree                                keying
    verdict.diff_footprint(footprint, target, old_source=None) -> FootprintDiff  keying
    verdict.diff_work_tree(ws, footprint) / diff_rev(ws, footprint, rev)         cli
    regions.region_verdicts(footprint, diff) -> each region's verdict            cli
    history.git_old_source(config) -> old_source   the recorded bytes, in git    keying
    binding.bind_footprint(ws, path, captures_digest) -> (Footprint, Binding)    fitting
    binding.bound_footprint(ws, binding, read=None) -> Footprint | None          keying
    lawverdict.law_verdict(regions, changes, target, env=None) / worst_verdict /
        verdict_of / env_option: the one verdict rule check, diff, rekey and
        review show                                                              keying
    envverdict.env_spec(ws, option) -> EnvSpec                  cli, keying, fitting, api
    envverdict.compare_env(record, spec, clauses) / env_clauses(host) / clause_of /
        accepted_label / not_recorded_line: the target environment, what differs
        from the recorded one, and its acceptance                                cli, keying
    require.Require: the one re-key policy of rekey, review and fit              keying, fitting
    errors.FootprintError                                                        keying

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
