"""Law files' footprint verdicts, for `rekey` and `review` (docs/footprints.md).

A law file's footprint is the one its newest `fit` provenance entry names (`footprint: {path,
sha256}`, the path from the workspace root, as `fit --footprint` records it). Each law's verdict
against a target tree comes from the footprint's region named after its target, or from the
whole footprint where it has no such region (docs/footprints.md, `lawkit.footprint.regions`); a
file's verdict is the worst of its laws' (`untouched`, `startup`, `steps`). Every verdict is
`unknown` when the file names no footprint, or the footprint file is missing or is not the one
the fit named. Law files naming the same footprint share one comparison.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lawkit.config import Workspace
from lawkit.errors import LawkitError, printable
from lawkit.footprint.binding import ReadFile, bound_footprint
from lawkit.footprint.document import Footprint
from lawkit.footprint.lawverdict import worst_verdict
from lawkit.footprint.trees import SourceTree
from lawkit.footprint.verdict import FootprintDiff, OldSource, diff_footprint
from lawkit.lawfiles import yamlsafe

if TYPE_CHECKING:
    from lawkit.footprint.envverdict import EnvSpec

REQUIRE = ("untouched",)
"""The values of `--require`: the verdict every law file must have."""


@dataclass(frozen=True)
class LawVerdict:
    """One law's verdict (docs/footprints.md): its file, name and target, the region of the
    footprint it takes its verdict from (None: the footprint has no region named after its
    target, and the law takes the file's footprint verdict), and the verdict."""

    file: str
    name: str
    target: str
    region: str | None
    verdict: str

    def line(self) -> str:
        """`laws/a100.yaml  sample (sample_s)  steps`."""
        return printable(f"{self.file}  {self.name} ({self.target})  {self.verdict}")

    def to_json(self) -> dict[str, Any]:
        """The law's verdict as one JSON object."""
        return {"file": self.file, "name": self.name, "target": self.target,
                "region": self.region, "verdict": self.verdict}


@dataclass(frozen=True)
class FileVerdict:
    """One law file's verdict (the worst of its laws'), the footprint it names, the diff
    behind it, and each law's verdict."""

    path: str
    verdict: str
    footprint: str | None = None
    diff: FootprintDiff | None = None
    recorded: Footprint | None = field(default=None, compare=False, repr=False)
    """The footprint itself (None: unknown)."""
    laws: tuple[LawVerdict, ...] = ()

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
        return f"{self.verdict}: footprint {self.footprint}, {self.diff.summary()}"

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
    return _binding(_host(raw, shown))


def _host(raw: bytes, shown: str) -> dict[str, Any]:
    """The `host` section of a law file, as plain data ({} when it does not parse)."""
    try:
        data = yamlsafe.load(yamlsafe.decode(raw, shown), shown).data
    except LawkitError:
        return {}
    host = data.get("host") if isinstance(data, dict) else None
    return host if isinstance(host, dict) else {}


def _binding(host: Mapping[str, Any]) -> dict[str, Any] | None:
    entries = host.get("provenance")
    for entry in reversed(entries if isinstance(entries, list) else []):
        fit = entry.get("fit") if isinstance(entry, dict) else None
        if isinstance(fit, dict):
            bound = fit.get("footprint")
            return dict(bound) if isinstance(bound, Mapping) else None
    return None


def _laws(host: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Each law's (name, target), in file order."""
    laws = host.get("laws")
    return [(str(law.get("name")), str(law.get("target")))
            for law in (laws if isinstance(laws, list) else []) if isinstance(law, dict)]


def verdicts_of(ws: Workspace, files: Iterable[tuple[str, bytes]],
                target: Callable[[], SourceTree], read: ReadFile | None = None,
                old_source: OldSource | None = None, env: EnvSpec | None = None,
                ) -> list[FileVerdict]:
    """The verdict of each (shown path, bytes) law file against the tree ``target()`` gives
    (read once, and only when a file names a footprint), and of each of its laws
    (`lawkit.footprint.regions`): a file's is the worst of its laws'.

    ``read`` reads a footprint by its workspace-relative path (default: the work tree);
    ``env``, the target environment a footprint's is compared with, from the file's baseline
    (`lawkit.footprint.envverdict`).
    """
    from functools import cache

    from lawkit.footprint.envverdict import compare_env, env_clauses

    tree = cache(target)
    seen: dict[tuple[str, str], tuple[Footprint | None, FootprintDiff | None]] = {}
    out = []
    for shown, raw in files:
        host = _host(raw, shown)
        binding = _binding(host)
        path = binding.get("path") if binding else None
        laws = _laws(host)
        if binding is None or not isinstance(path, str):
            out.append(FileVerdict(shown, "unknown", laws=_unknown(shown, laws)))
            continue
        key = (path, str(binding.get("sha256")))
        if key not in seen:
            footprint = bound_footprint(ws, binding, read)
            seen[key] = footprint, None if footprint is None else \
                diff_footprint(footprint, tree(), old_source)
        footprint, diff = seen[key]
        if footprint is None or diff is None:
            out.append(FileVerdict(shown, "unknown", path, laws=_unknown(shown, laws)))
            continue
        diff = diff.with_env(compare_env(footprint.environment, env, env_clauses(host)))
        judged = tuple(LawVerdict(shown, name, law_target, *diff.law(law_target))
                       for name, law_target in laws)
        verdict = worst_verdict(v.verdict for v in judged) if judged else diff.verdict
        out.append(FileVerdict(shown, verdict, path, diff, footprint, judged))
    return out


def _unknown(shown: str, laws: Iterable[tuple[str, str]]) -> tuple[LawVerdict, ...]:
    return tuple(LawVerdict(shown, name, target, None, "unknown") for name, target in laws)


def failing_laws(verdicts: Iterable[FileVerdict], require: str | None) -> list[LawVerdict]:
    """The laws whose verdict fails ``--require`` (none without it)."""
    if require is None:
        return []
    return [law for v in verdicts for law in v.laws if law.verdict != require]


def check_require(require: str | None) -> None:
    """Refuse a `--require` value other than those of ``REQUIRE``."""
    if require is not None and require not in REQUIRE:
        raise LawkitError(f"--require {require!r}: expected one of {', '.join(REQUIRE)}")
