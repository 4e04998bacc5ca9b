"""The outcome of a fit (`FitReport`, one `FittedLaw` each): what `lawkit fit` prints, its
`--json` document, and the `fit` provenance entry of the file it writes (naming the laws it
fitted), followed by a `rekey` entry for the laws it kept when it moves their key.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lawkit._version import __version__
from lawkit.fitting.breakpoints import Search
from lawkit.fitting.request import LawSpec

if TYPE_CHECKING:
    from lawkit.keying.footprints import LawVerdict


@dataclass
class FittedLaw:
    """A fitted law: the law-file mapping and what the report says about it."""

    spec: LawSpec
    law: dict[str, Any]
    n: int
    dropped: int
    replaced: bool = False
    search: Search | None = None
    """The breakpoint search, when the formula had `auto` factors."""


@dataclass
class FitReport:
    """The outcome of a fit: the laws, the digest, the captures, and the file (once written)."""

    out: Path
    out_shown: str
    laws: list[FittedLaw]
    digest: str
    digests: list[str]
    records: int
    captures: list[dict[str, str]]
    at: str
    labels: dict[str, Any]
    kept: list[str] = field(default_factory=list)
    footprint: dict[str, str] | None = None
    """The footprint the fit is bound to: `{path, sha256}`, the path from the workspace root."""
    dropped: int = 0
    """Rows dropped (--drop-invalid) for an empty or invalid selection or digest value; the
    rows each law dropped for its fitted columns are in its `fit.dropped`."""
    notes: list[str] = field(default_factory=list)
    """What the reader left out of the captures (a torn last line)."""
    written: bool = False
    outside: str | None = None
    """Where the file went outside the workspace's laws folder, the note saying that `lawkit
    check` will not read it (`lawkit fit` prints it on stderr)."""
    text: str = ""
    passes: dict[str, int] = field(default_factory=dict)
    """Reads of the rows: by the scan and per law (`Runner.passes`)."""
    rekey: dict[str, Any] | None = None
    """The `rekey` entry that follows the `fit` entry when the fit keeps laws of its file and
    moves their key (`fit --why`): `{from, to, at, why, refs, laws}`."""
    kept_verdicts: list[LawVerdict] = field(default_factory=list)
    """Each kept law's verdict when the fit re-keys them, on its own footprint."""
    host: dict[str, Any] | None = None
    """Where the captures were taken (`provenance.fit_host`); None: the entry has no `host`."""

    def provenance(self, body: str) -> dict[str, Any]:
        """The `fit` provenance entry for a file whose laws hash to `body`."""
        entry: dict[str, Any] = {"digest": self.digest, "at": self.at, "records": self.records,
                                 "body": body, "captures": self.captures,
                                 "laws": [f.spec.name for f in self.laws],
                                 "lawkit": __version__}
        if len(self.digests) > 1:
            entry["digests"] = self.digests
        if self.footprint is not None:
            entry["footprint"] = self.footprint
        if self.host is not None:
            entry["host"] = self.host
        return entry

    def to_json(self) -> dict[str, Any]:
        """The report as the JSON document `lawkit fit --json` prints."""
        return {
            "out": self.out_shown,
            "written": self.written,
            "digest": self.digest,
            "records": self.records,
            "captures": self.captures,
            "laws": [{**_json_safe(f.law), "replaced": f.replaced, "dropped": f.dropped}
                     for f in self.laws],
            "kept": self.kept,
            "rekey": self.rekey,
            "kept_laws": [law.to_json() for law in self.kept_verdicts],
            "dropped": self.dropped,
            "notes": self.notes,
            "passes": self.passes,
        }

    def lines(self) -> list[str]:
        """What `lawkit fit` prints: one line per law, then the file."""
        out = []
        for fitted in self.laws:
            stats = fitted.law.get("fit", {})
            parts = [f"n={fitted.n}"]
            for key in ("r2", "rmse", "mape"):
                if key in stats:
                    parts.append(f"{key}={stats[key]:.6g}")
            if fitted.dropped:
                parts.append(f"dropped={fitted.dropped}")
            if "holdout" in stats:
                hold = stats["holdout"]
                parts.append(f"holdout n={hold['n']}" + (f" mape={hold['mape']:.6g}"
                                                        if "mape" in hold else ""))
            out.append(f"{fitted.spec.name}: {' '.join(parts)}")
            if fitted.search is not None:
                out.extend(f"  {choice.describe(fitted.spec.method)}"
                           for choice in fitted.search.choices)
            if "cv" in stats:
                out.append(f"  {describe_cv(stats['cv'])}")
        replaced = sum(f.replaced for f in self.laws)
        added = len(self.laws) - replaced
        counts = [f"{added} added"] if added else []
        if replaced:
            counts.append(f"{replaced} replaced")
        if self.kept:
            counts.append(f"{len(self.kept)} kept")
        if self.dropped:
            out.append(f"dropped {self.dropped} row{'s' if self.dropped != 1 else ''} with an "
                       "invalid selection or digest value")
        out.extend(f"note: {note}" for note in self.notes)
        verb = "wrote" if self.written else "would write"
        out.append(f"{verb} {self.out_shown} ({', '.join(counts)}; digest {self.digest}, "
                   f"{self.records} records)")
        if self.rekey is not None:
            n = len(self.rekey["laws"])
            out.append(f"{'re-keyed' if self.written else 'would re-key'} {n} kept "
                       f"law{'s' if n != 1 else ''}: {self.rekey['from']} -> {self.rekey['to']}")
            out.extend(f"  {law.line()}" for law in self.kept_verdicts)
        return out


def describe_cv(cv: dict[str, Any]) -> str:
    """The line `fit` prints for a law's `fit.cv`."""
    how = f"leave one {cv['column']} out" if "column" in cv else \
        f"{cv.get('split', 'random')}, seed {cv.get('seed', 0)}"
    parts = [f"cv {cv['folds']} folds ({how})"]
    if "mape" in cv:
        parts.append(f"mape={cv['mape']:.6g} worst_mape={cv['worst_mape']:.6g}")
    extra = [f"{key}={cv[key]}" for key in ("failed", "empty") if cv.get(key)]
    return ": ".join(parts) + (f" {' '.join(extra)}" if extra else "")


def _json_safe(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_json_safe(v) for v in value]
    return value


__all__ = ["FitReport", "FittedLaw", "describe_cv"]
