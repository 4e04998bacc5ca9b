"""Where a fit comes from: the engine digest its laws are keyed to (from the captures and
`--captured-on`), the capture paths as the `fit` provenance entry names them, and its time.

The file gets one provenance entry: `{fit: {digest, at, records, body, captures: [{path,
sha256}], lawkit}}` (`records`: the rows fitted, selected by at least one law and not held
out), with `digests` listing every digest seen when `--allow-mixed-digests` let several
through, and `footprint: {path, sha256}` naming the footprint of the capture runs given with
`--footprint` (`FitReport.provenance`).
"""

from __future__ import annotations

import datetime

from lawkit.config import Workspace, digest_problem
from lawkit.errors import CaptureError, printable
from lawkit.fitting.captures.files import METADATA_PREFIX, Capture
from lawkit.fitting.request import CURRENT, FitRequest
from lawkit.fitting.scan import Scan


def resolve_digest(scan: Scan, request: FitRequest, ws: Workspace) -> tuple[str, list[str]]:
    """The digest the laws are keyed to, and every digest the captures named."""
    seen = list(scan.digests)
    key = ws.digest.key
    for value in seen:
        problem = digest_problem(value, ws.digest.length)
        if problem is not None:
            files = ", ".join(scan.digests[value])
            raise CaptureError(f"{files}: the digest {printable(repr(value))} (column {key} or "
                               f"metadata {METADATA_PREFIX}{key}): {problem}")
    if len(seen) > 1 and not request.allow_mixed_digests:
        listing = "; ".join(f"{d} ({', '.join(files)})" for d, files in scan.digests.items())
        raise CaptureError(f"the captures ran on {len(seen)} engine digests: {listing}. Fit "
                           f"each digest's captures on its own (--where '{key} == \"...\"'), or "
                           "pass --allow-mixed-digests with --captured-on naming the key")
    given = request.captured_on
    if given == CURRENT:
        from lawkit.keying.digest import current_digest

        given = current_digest(ws)
        shown = f"--captured-on current ({given})"
    else:
        shown = f"--captured-on {given}"
    if given is not None:
        if seen and given not in seen:
            raise CaptureError(f"{shown} conflicts with the captures, which name "
                               f"{', '.join(seen)} (column {key} or metadata "
                               f"{METADATA_PREFIX}{key}): drop --captured-on or fix "
                               "the captures")
        return given, sorted(seen) if seen else [given]
    if len(seen) == 1:
        if scan.undigested:
            raise CaptureError(f"{', '.join(scan.undigested)}: no digest ({key} column or "
                               f"{METADATA_PREFIX}{key} metadata) while other captures "
                               f"name {seen[0]}: pass --captured-on {seen[0]} if they ran on it")
        return seen[0], seen
    if len(seen) > 1:
        raise CaptureError("with --allow-mixed-digests, pass --captured-on DIGEST to say which "
                           f"digest the laws are keyed to (the captures name {', '.join(seen)})")
    if ws.config_path is None:
        raise CaptureError(f"the captures do not say which engine digest they ran on (no {key!r} "
                           f"column, no Parquet metadata {METADATA_PREFIX}{key}): pass "
                           f"--captured-on DIGEST ({ws.digest.length} lowercase hex characters), "
                           "or run lawkit init to start a workspace, whose lawkit digest (and "
                           "--captured-on current) names the engine's")
    raise CaptureError(f"the captures do not say which engine digest they ran on (no {key!r} "
                       f"column, no Parquet metadata {METADATA_PREFIX}{key}): pass "
                       "--captured-on DIGEST, or --captured-on current for the workspace's "
                       "current digest")


def provenance_path(capture: Capture, ws: Workspace) -> str:
    """Relative to the workspace root, or the bare file name outside it: never absolute."""
    try:
        return capture.path.relative_to(ws.root).as_posix()
    except ValueError:
        return capture.path.name


def timestamp(now: datetime.datetime | None) -> str:
    """`now` (default: this moment) as the UTC time a provenance entry records."""
    moment = now or datetime.datetime.now(datetime.UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = ["provenance_path", "resolve_digest", "timestamp"]
