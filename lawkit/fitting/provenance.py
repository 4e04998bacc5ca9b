"""Where a fit comes from: the engine digest its laws are keyed to (from the captures and
`--captured-on`), the capture paths as the `fit` provenance entry names them, and its time.

The file gets one provenance entry: `{fit: {digest, at, records, body, laws, captures: [{path,
sha256}], lawkit}}` (`records`: the rows fitted, selected by at least one law and not held
out; `laws`: the names of the laws fitted), with `digests` listing every digest seen when
`--allow-mixed-digests` let several through, and `footprint: {path, sha256}` naming the
footprint of the capture runs given with `--footprint` (`FitReport.provenance`).

A fit that keeps laws of its file (`--out` holds laws it does not fit) and moves the file's key
re-keys them: refused without `--why`; with it, a `rekey` entry naming them follows the `fit`
entry, and each gets its verdict on the footprint of its own fit (`kept_laws_rekey`).
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lawkit.config import Workspace, digest_problem
from lawkit.errors import CaptureError, RefusalError, printable
from lawkit.fitting.captures.files import METADATA_PREFIX, Capture
from lawkit.fitting.request import CURRENT, FitRequest
from lawkit.fitting.scan import Scan
from lawkit.lawfiles.lawfile import LawFile

if TYPE_CHECKING:
    from lawkit.keying.footprints import LawVerdict


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


def check_rekey_options(request: FitRequest) -> None:
    """Refuse a `--why` that is not one line of text, or a `--require` value `rekey` refuses."""
    from lawkit.footprint.require import Require
    from lawkit.keying.rekey import one_line

    if request.why is not None:
        one_line(request.why, "--why")
    Require.of(request.require)


def kept_laws_rekey(existing: LawFile | None, fitted: Collection[str], digest: str,
                    request: FitRequest, ws: Workspace, at: str, shown: str,
                    ) -> tuple[dict[str, Any] | None, list[LawVerdict]]:
    """The `rekey` entry for the laws of ``existing`` (the file at `--out`) that the fit keeps
    while moving its key to ``digest``, and each kept law's verdict against the work tree, on
    the footprint of its own fit; (None, []) when the fit keeps none or the key stays.

    Refused (nothing written) without `--why`, naming each kept law and the two digests; and
    where the policy (`--require`, else the config's `[rekey] require`) refuses a kept law's
    verdict, judged as `rekey` judges it (the config's environment included).
    """
    if existing is None:
        return None, []
    named = existing.host.key.get(ws.digest.key)
    kept = [law.name for law in existing.host.laws if law.name not in fitted]
    if not kept or named is None or named == digest:
        return None, []
    key = ws.digest.key
    if request.why is None:
        raise RefusalError(
            f"the fit keeps {len(kept)} law{'s' if len(kept) != 1 else ''} of the file "
            f"({', '.join(kept)}), keyed to {key}={named}, and moves its key to {key}={digest}: "
            "they would name a digest they were not fitted on; refit them too, or pass --why "
            "TEXT saying why the change cannot move their host time (a rekey entry records it, "
            "with each kept law's verdict); nothing was written", path=shown)
    from lawkit.footprint.require import Require
    from lawkit.keying import footprints
    from lawkit.keying.rekey import one_line

    spec = None
    if ws.environment or ws.python:  # the environment exactly as rekey compares it
        from lawkit.footprint.envverdict import env_spec

        spec = env_spec(ws)
    verdicts = footprints.judged_on_work_tree(ws, [(shown, existing.text.encode("utf-8"))],
                                              spec, Require.of(request.require, ws), kept=kept)
    judged = [law for v in verdicts for law in v.laws if law.name in kept]
    fields = {"from": named, "to": digest, "at": at, "why": one_line(request.why, "--why"),
              "refs": [], "laws": kept}
    return fields, judged


def provenance_path(capture: Capture, ws: Workspace) -> str:
    """Relative to the workspace root inside it; outside it, absolute (a bare file name would
    name a file nobody can find again)."""
    absolute = Path(os.path.abspath(capture.path))
    try:
        return absolute.relative_to(ws.root).as_posix()
    except ValueError:
        return absolute.as_posix()


def timestamp(now: datetime.datetime | None) -> str:
    """`now` (default: this moment) as the UTC time a provenance entry records."""
    moment = now or datetime.datetime.now(datetime.UTC)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


HOST_FIELDS = ("cpu_model", "logical_cpus", "platform", "python")
"""The fields of a capture's host (`lawkit.capture.host`) that a fit entry's `host` keeps."""


def capture_host(capture: Capture) -> dict[str, Any] | None:
    """Where a capture was taken, as `lawkit.capture` recorded it: a Parquet file's
    `lawkit.host` metadata, or the `<name>.host.json` file beside a text capture; None when it
    has none (written before lawkit recorded hosts, or by another writer). A host that is not a
    JSON object is a `CaptureError` naming it."""
    import json

    from lawkit.capture.host import METADATA_KEY, SUFFIX, host_path

    where = capture.shown
    try:
        if capture.format == "parquet":
            if capture.compressed:
                # lawkit.capture writes no .parquet.gz; a footer read would gunzip it all again
                return None
            import pyarrow.parquet as pq

            raw = (pq.read_metadata(capture.path).metadata or {}).get(METADATA_KEY)
        else:
            where = capture.shown + SUFFIX
            raw = host_path(capture.path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CaptureError(f"cannot read its host: {exc.strerror}", path=where) from None
    if raw is None:
        return None
    try:
        host = json.loads(raw)
    except ValueError:
        host = None
    if not isinstance(host, dict):
        raise CaptureError("the host is not a JSON object of " + ", ".join(HOST_FIELDS)
                           + ": remove it (the capture is then read as one without a host)",
                           path=where)
    return {name: host.get(name) for name in HOST_FIELDS}


def fit_host(hosts: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """The `host` a fit entry keeps for captures with these hosts: None (no `host` key) unless
    every capture has one; a field the captures disagree on is null (a law fitted on rows of
    two CPU models prices neither, and `score` then names no CPU model)."""
    if not hosts or any(h is None for h in hosts):
        return None
    known = [h for h in hosts if h is not None]
    return {name: known[0][name] if all(h[name] == known[0][name] for h in known) else None
            for name in HOST_FIELDS}


def other_cpu(fitted: dict[str, Any] | None, scored: Sequence[dict[str, Any] | None],
              ) -> str | None:
    """The one line `score` prints when captures it scores come from another CPU model than
    the fit's (None: the same, or either is not known)."""
    model = fitted.get("cpu_model") if isinstance(fitted, dict) else None
    if not isinstance(model, str):
        return None
    others = sorted({str(h["cpu_model"]) for h in scored
                     if h is not None and h.get("cpu_model") not in (None, model)})
    if not others:
        return None
    return printable(f"the captures scored come from another CPU model ({', '.join(others)}) "
                     f"than the law file's fit ({model}): its laws price the fit's host")


__all__ = ["HOST_FIELDS", "capture_host", "check_rekey_options", "fit_host", "kept_laws_rekey",
           "other_cpu", "provenance_path", "resolve_digest", "timestamp"]
