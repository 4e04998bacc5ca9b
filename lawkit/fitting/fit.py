"""`lawkit fit`: laws from capture records, with statistics, domain and provenance.

A fit reads top-down, each step a module of its own:

1. plan (`lawkit.fitting.plan`): the request checked, the laws to fit, the columns they read;
2. scan (`lawkit.fitting.scan`): the first pass over the captures: groups, digests, the rows
   each law selects; streamed, it spills the columns that every later pass reads
   (`lawkit.fitting.source`, `lawkit.fitting.spill`); then the digest the laws are keyed to
   (`lawkit.fitting.provenance`) and one law per `--by` group;
3. fit each law (`lawkit.fitting.local`, or on a Dask cluster `lawkit.fitting.distributed`:
   the same passes of `lawkit.fitting.methods`), scored by `--holdout` or `--cv`
   (`lawkit.fitting.crossval`), its law-file mapping from `lawkit.fitting.stats`;
4. write (`lawkit.fitting.lawmerge`): the law file, or the laws merged into an existing one.

`fit_laws(request, ws)` does 1-3 and writes nothing; `write_fit(report, ws)` does 4; `run_fit`
does both. Nothing is written unless every law fitted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lawkit.config import Workspace
from lawkit.errors import FitError
from lawkit.fitting.captures.files import Capture, find_captures
from lawkit.fitting.local import LocalRunner
from lawkit.fitting.plan import (
    check_names,
    check_out,
    check_request,
    column_spec,
    expand,
    load_existing,
    plan_specs,
)
from lawkit.fitting.provenance import (
    capture_host,
    check_rekey_options,
    fit_host,
    kept_laws_rekey,
    provenance_path,
    resolve_digest,
    timestamp,
)
from lawkit.fitting.report import FitReport, FittedLaw
from lawkit.fitting.request import FitRequest, LawSpec
from lawkit.fitting.rows import Split
from lawkit.fitting.spill import remove_stale, removed_on_sigterm, temp_folder
from lawkit.fitting.types import Runner
from lawkit.lawfiles import lawfile


def run_fit(request: FitRequest, ws: Workspace) -> FitReport:
    """Fit the laws and write the file; nothing is written when anything fails."""
    check_out(Path(request.out), ws)  # before the fit: a name check would not read is refused
    report = fit_laws(request, ws)
    write_fit(report, ws)
    return report


def write_fit(report: FitReport, ws: Workspace) -> None:
    """Write (or merge into) the law file atomically, under the laws' lock: `*.yaml` or
    `*.yml`, where asked; outside the laws folder of a workspace, `report.outside` says that
    `lawkit check` will not read it."""
    from lawkit.fitting import lawmerge

    report.outside = check_out(report.out, ws)
    lawmerge.write(report, ws)


def fit_laws(request: FitRequest, ws: Workspace) -> FitReport:
    """Read the captures and fit every law of the request; writes nothing. SIGTERM during the
    fit removes its spill before the process ends."""
    # every fit's start, in memory too: a streamed one only would leave a killed fit's spill
    # for as long as the captures fit in memory (one listing of the folder)
    remove_stale(temp_folder())
    with removed_on_sigterm():
        return _fit_laws(request, ws)


def _fit_laws(request: FitRequest, ws: Workspace) -> FitReport:
    check_request(request, ws)
    check_rekey_options(request)
    out = Path(request.out)
    out_shown = ws.rel(out)
    existing = load_existing(out, out_shown, ws)
    specs = plan_specs(request, existing)
    found = find_captures(request.captures, shown=ws.rel)
    spec = column_spec(specs, request, ws, found)
    if request.dask is None:
        with LocalRunner(found, spec, request) as local:
            return _fit_with(local, request, ws, existing, specs, found)
    if any(c.format == "trace" for c in found):
        # a trace's ranks are matched across its files, which a task a file cannot do
        raise FitError("a trace is read in this process, not on a Dask cluster: drop --dask "
                       "(a trace's rows are few: one a step)")
    from lawkit.fitting import distributed

    with distributed.connect(request.dask) as client:
        runner = distributed.DaskRunner(client, found, spec)
        return _fit_with(runner, request, ws, existing, specs, found)


def _fit_with(runner: Runner, request: FitRequest, ws: Workspace,
              existing: lawfile.LawFile | None, specs: Sequence[LawSpec],
              found: Sequence[Capture]) -> FitReport:
    out = Path(request.out)
    scan = runner.scan(specs, request)
    digest, digests = resolve_digest(scan, request, ws)  # before the fits: it fails fast
    bound = None
    if request.footprint is not None:
        from lawkit.footprint.binding import bind_footprint

        bound = bind_footprint(ws, Path(request.footprint), digest)[1].to_json()
    laws = expand(specs, scan, request)
    check_names([law.name for law in laws])
    split = Split.of(request, len(found))
    fitted = runner.fit(laws, request, split)
    if request.cv is not None:
        from lawkit.fitting.crossval import cross_validate

        scores = cross_validate(runner, laws, request, len(found))
        for f in fitted:
            if f.spec.name in scores:
                f.law["fit"]["cv"] = scores[f.spec.name]
    names = {f.spec.name for f in fitted}
    at = timestamp(request.now)
    rekey, kept_verdicts = kept_laws_rekey(existing, names, digest, request, ws, at,
                                           ws.rel(out))
    if existing is not None:
        for f in fitted:
            f.replaced = any(law.name == f.spec.name for law in existing.host.laws)
    kept = [law.name for law in existing.host.laws if law.name not in names] if existing else []
    records = [{"path": provenance_path(c, ws), "sha256": h}
               for c, h in zip(found, runner.hashes(), strict=True)]
    labels: dict[str, Any] = dict(existing.labels or {}) if existing is not None else {}
    labels.update(request.labels)
    return FitReport(out=out, out_shown=ws.rel(out), laws=fitted, digest=digest, digests=digests,
                     records=scan.fitted, captures=records, at=at,
                     labels=labels, kept=kept, dropped=scan.dropped, footprint=bound,
                     notes=scan.notes, passes=dict(runner.passes), rekey=rekey,
                     kept_verdicts=kept_verdicts,
                     host=fit_host([capture_host(c) for c in found]))


__all__ = ["FitReport", "FitRequest", "FittedLaw", "LawSpec", "fit_laws", "run_fit",
           "write_fit"]
