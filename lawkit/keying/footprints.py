"""Law files' footprint verdicts, for `rekey` and `review` (DESIGN section 11).

A law file's footprint is the one its newest `fit` provenance entry names (`footprint: {path,
sha256}`, the path from the workspace root, as `fit --footprint` records it). Its verdict
against a target tree is the footprint's (`untouched`, `startup`, `steps`), or `unknown` when
the file names no footprint, or the footprint file is missing or is not the one the fit named.
Law files naming the same footprint share one comparison.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from lawkit.config import Workspace
from lawkit.errors import LawkitError
from lawkit.footprint.binding import ReadFile, bound_footprint
from lawkit.footprint.document import Footprint
from lawkit.footprint.trees import SourceTree
from lawkit.footprint.verdict import FootprintDiff, OldSource, diff_footprint
from lawkit.lawfiles import yamlsafe

REQUIRE = ("untouched",)
"""The values of `--require`: the verdict every law file must have."""


@dataclass(frozen=True)
class FileVerdict:
    """One law file's footprint verdict, the footprint it names, and the diff behind it."""

    path: str
    verdict: str
    footprint: str | None = None
    diff: FootprintDiff | None = None
    recorded: Footprint | None = field(default=None, compare=False, repr=False)
    """The footprint itself (None: unknown)."""

    @property
    def why_unknown(self) -> str:
        """Why the verdict is unknown ("" when it is not)."""
        if self.verdict != "unknown":
            return ""
        if self.footprint is None:
            return "its newest fit names no footprint (lawkit fit --footprint)"
        return (f"the footprint {self.footprint} is missing, or is not the file the fit named "
                "(its sha256 differs)")

    def summary(self) -> str:
        """The verdict with what it rests on, on one line."""
        if self.diff is None:
            return f"unknown: {self.why_unknown}"
        units = self.diff.units
        counts: dict[str, int] = {}
        for u in units:
            counts[u.counts_as] = counts.get(u.counts_as, 0) + 1
        parts = ", ".join(f"{n} {what}" for what, n in sorted(counts.items()))
        return (f"{self.verdict}: footprint {self.footprint}, {len(units)} unit"
                f"{'' if len(units) == 1 else 's'} changed, absent or new"
                + (f" ({parts})" if parts else ""))

    def to_json(self) -> dict[str, Any]:
        """The verdict as one JSON object; `units` as in `footprint diff --json`."""
        return {"path": self.path, "verdict": self.verdict, "footprint": self.footprint,
                "digest": None if self.diff is None else
                {"footprint": self.diff.footprint_digest, "target": self.diff.target_digest},
                "units": [] if self.diff is None else [u.to_json() for u in self.diff.units],
                "why_unknown": self.why_unknown or None}


def fit_binding(raw: bytes, shown: str) -> dict[str, Any] | None:
    """The `footprint` of a law file's newest `fit` entry; None when it names none (or the
    file does not parse: then it has no trustworthy fit entry either)."""
    if b"footprint" not in raw:
        return None
    try:
        data = yamlsafe.load(yamlsafe.decode(raw, shown), shown).data
    except LawkitError:
        return None
    host = data.get("host") if isinstance(data, dict) else None
    entries = host.get("provenance") if isinstance(host, dict) else None
    for entry in reversed(entries if isinstance(entries, list) else []):
        fit = entry.get("fit") if isinstance(entry, dict) else None
        if isinstance(fit, dict):
            bound = fit.get("footprint")
            return dict(bound) if isinstance(bound, Mapping) else None
    return None


def verdicts_of(ws: Workspace, files: Iterable[tuple[str, bytes]], target: SourceTree,
                read: ReadFile | None = None, old_source: OldSource | None = None,
                ) -> list[FileVerdict]:
    """The verdict of each (shown path, bytes) law file against ``target``.

    ``read`` reads a footprint by its workspace-relative path (default: the work tree).
    """
    seen: dict[tuple[str, str], tuple[Footprint | None, FootprintDiff | None]] = {}
    out = []
    for shown, raw in files:
        binding = fit_binding(raw, shown)
        path = binding.get("path") if binding else None
        if binding is None or not isinstance(path, str):
            out.append(FileVerdict(shown, "unknown"))
            continue
        key = (path, str(binding.get("sha256")))
        if key not in seen:
            footprint = bound_footprint(ws, binding, read)
            seen[key] = footprint, None if footprint is None else \
                diff_footprint(footprint, target, old_source)
        footprint, diff = seen[key]
        out.append(FileVerdict(shown, "unknown" if diff is None else diff.verdict, path, diff,
                               footprint))
    return out


def failing(verdicts: Iterable[FileVerdict], require: str | None) -> list[FileVerdict]:
    """The verdicts that fail ``--require`` (none without it)."""
    if require is None:
        return []
    return [v for v in verdicts if v.verdict != require]


def check_require(require: str | None) -> None:
    """Refuse a `--require` value other than those of ``REQUIRE``."""
    if require is not None and require not in REQUIRE:
        raise LawkitError(f"--require {require!r}: expected one of {', '.join(REQUIRE)}")
