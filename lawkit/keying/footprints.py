"""Law files' footprint verdicts, for `rekey` and `review` (docs/footprints.md).

Each law keeps its own evidence: its footprint is the one named (`footprint: {path, sha256}`,
the path from the workspace root, as `fit --footprint` records it) by the newest `fit`
provenance entry that fitted it (`laws: [names]`); a later fit of other laws in the same file
does not change it. Fit entries written before they named their laws may each have fitted any
law: a law no entry names takes the worst verdict over theirs. A law's verdict against a
target tree comes from its footprint's region named after its target, or from the whole
footprint where it has no such region (docs/footprints.md, `lawkit.footprint.regions`); a
file's verdict is the worst of its laws' (`untouched`, `startup`, `steps`). A law's verdict is
`unknown` when a fit it rests on names no footprint, or the footprint file is missing or is
not the one the fit named. Law files naming the same footprint share one comparison.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lawkit.config import Workspace
from lawkit.errors import LawkitError, RefusalError, printable
from lawkit.lawfiles import yamlsafe

if TYPE_CHECKING:
    from lawkit.footprint.binding import ReadFile
    from lawkit.footprint.document import Footprint
    from lawkit.footprint.envverdict import EnvSpec
    from lawkit.footprint.require import Require
    from lawkit.footprint.trees import SourceTree
    from lawkit.footprint.verdict import FootprintDiff, OldSource

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
    footprints: tuple[str, ...] = ()
    """The footprints the verdict rests on (those of the fits that fitted the law)."""
    shows_footprints: bool = field(default=False, compare=False)
    """Whether `line` names them: the file's laws rest on different footprints."""

    def line(self) -> str:
        """`laws/a100.yaml  sample (sample_s)  steps`, then `  (footprint fp/a.json)` when the
        file's laws rest on different footprints."""
        tail = f"  (footprint {', '.join(self.footprints)})" \
            if self.shows_footprints and self.footprints else ""
        return printable(f"{self.file}  {self.name} ({self.target})  {self.verdict}{tail}")

    def to_json(self) -> dict[str, Any]:
        """The law's verdict as one JSON object."""
        return {"file": self.file, "name": self.name, "target": self.target,
                "region": self.region, "verdict": self.verdict,
                "footprints": list(self.footprints)}


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
    bases: tuple[Basis, ...] = ()
    """Every footprint the laws' verdicts rest on and was compared, the one above first."""

    @property
    def why_unknown(self) -> str:
        """Why the verdict is unknown ("" when it is not)."""
        if self.verdict != "unknown":
            return ""
        if self.diff is not None:
            env = self.diff.env
            unpackaged = env.unpackaged_line() if env is not None else None
            if unpackaged is not None:
                return unpackaged.removeprefix("unknown  ")
            laws = ", ".join(law.name for law in self.laws if law.verdict == "unknown")
            return (f"{laws or 'a law'}: a fit of theirs names no footprint, or one missing or "
                    "not the file it named")
        if self.footprint is None:
            return "its newest fit names no footprint (lawkit fit --footprint)"
        return (f"the footprint {self.footprint} is missing, or is not the file the fit named "
                "(its sha256 differs)")

    def summary(self) -> str:
        """The verdict with what it rests on, on one line."""
        if self.diff is None:
            return f"unknown: {self.why_unknown}"
        others = "".join(f"; footprint {b.path}, {b.diff.summary()}" for b in self.bases
                         if b.path != self.footprint)
        why = f"; {self.why_unknown}" if self.verdict == "unknown" else ""
        return f"{self.verdict}: footprint {self.footprint}, {self.diff.summary()}{others}{why}"

    def to_json(self) -> dict[str, Any]:
        """The verdict as one JSON object; `units` as in `footprint diff --json`."""
        return {"path": self.path, "verdict": self.verdict, "footprint": self.footprint,
                "digest": None if self.diff is None else
                {"footprint": self.diff.footprint_digest, "target": self.diff.target_digest},
                "units": [] if self.diff is None else [u.to_json() for u in self.diff.units],
                "why_unknown": self.why_unknown or None}


@dataclass(frozen=True)
class Basis:
    """One footprint a law file's verdicts rest on: its path, the footprint, and its diff
    against the target."""

    path: str
    recorded: Footprint = field(compare=False, repr=False)
    diff: FootprintDiff = field(compare=False, repr=False)


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


def fit_footprints(raw: bytes, shown: str) -> list[str]:
    """The path of every footprint the `fit` entries of a law file name, newest first."""
    if b"footprint" not in raw:
        return []
    return [str(b["path"]) for b in _fits(_host(raw, shown)) if b and "path" in b]


def _fits(host: Mapping[str, Any]) -> list[dict[str, Any] | None]:
    """The footprint binding of each `fit` entry, newest first (None: it names none)."""
    entries = host.get("provenance")
    out = []
    for entry in reversed(entries if isinstance(entries, list) else []):
        fit = entry.get("fit") if isinstance(entry, dict) else None
        if isinstance(fit, dict):
            bound = fit.get("footprint")
            out.append(dict(bound) if isinstance(bound, Mapping) else None)
    return out


def _evidence(host: Mapping[str, Any], names: Iterable[str],
              ) -> dict[str, list[dict[str, Any] | None]]:
    """Each law's evidence: the footprint binding of the newest `fit` entry naming it in its
    `laws`; where none does, those of every `fit` entry that names no laws (any of which may
    have fitted it), newest first. None: a fit that names no footprint."""
    entries = host.get("provenance")
    own: dict[str, dict[str, Any] | None] = {}
    legacy: list[dict[str, Any] | None] = []
    for entry in reversed(entries if isinstance(entries, list) else []):
        fit = entry.get("fit") if isinstance(entry, dict) else None
        if not isinstance(fit, dict):
            continue
        bound = fit.get("footprint")
        binding = dict(bound) if isinstance(bound, Mapping) else None
        fitted = fit.get("laws")
        if not isinstance(fitted, list):
            legacy.append(binding)
            continue
        for name in fitted:
            own.setdefault(str(name), binding)
    return {name: [own[name]] if name in own else legacy for name in names}


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
    (`lawkit.footprint.envverdict`). Code that ran from no distribution makes a law compared
    with a target ``unknown`` (no target pins it), whatever the policy: `check`, `rekey`,
    `fit` and `review` give one law one verdict.
    """
    from functools import cache

    from lawkit.footprint.binding import bound_footprint
    from lawkit.footprint.envverdict import compare_env, env_clauses
    from lawkit.footprint.lawverdict import worst_verdict
    from lawkit.footprint.verdict import diff_footprint

    if env is not None:
        env = dataclasses.replace(env, strict=True)

    tree = cache(target)
    seen: dict[tuple[str, str], tuple[Footprint | None, FootprintDiff | None]] = {}

    def compared(binding: Mapping[str, Any]) -> tuple[Footprint | None, FootprintDiff | None]:
        key = (str(binding.get("path")), str(binding.get("sha256")))
        if key not in seen:
            footprint = bound_footprint(ws, binding, read)
            seen[key] = footprint, None if footprint is None else \
                diff_footprint(footprint, tree(), old_source)
        return seen[key]

    out = []
    for shown, raw in files:
        host = _host(raw, shown)
        laws = _laws(host)
        newest = _binding(host)
        bases: dict[str, Basis] = {}
        with_env: dict[tuple[str, str], FootprintDiff] = {}  # one comparison per footprint
        judged = []
        for name, law_target, bindings in _judged_on(host, laws):
            verdicts, paths, region = [], [], None
            for binding in bindings:
                path = binding.get("path") if binding else None
                if binding is None or not isinstance(path, str):
                    verdicts.append("unknown")
                    continue
                paths.append(path)
                footprint, diff = compared(binding)
                if footprint is None or diff is None:
                    verdicts.append("unknown")
                    continue
                key = (path, str(binding.get("sha256")))
                if key not in with_env:
                    with_env[key] = diff.with_env(compare_env(
                        footprint.environment, env, env_clauses(host),
                        configuration=footprint.configuration,
                        file_schema=footprint.file_schema))
                diff = with_env[key]
                bases.setdefault(path, Basis(path, footprint, diff))
                law_region, verdict = diff.law(law_target)
                region = law_region if region is None else region
                verdicts.append(verdict)
            judged.append(LawVerdict(shown, name, law_target, region,
                                     worst_verdict(verdicts or ["unknown"]),
                                     tuple(dict.fromkeys(paths))))
        several = len({law.footprints for law in judged}) > 1
        judged = [dataclasses.replace(law, shows_footprints=several) for law in judged]
        first = next(iter(bases.values()), None)
        path = first.path if first else newest.get("path") if newest else None
        if first is None:
            out.append(FileVerdict(shown, "unknown", path if isinstance(path, str) else None,
                                   laws=tuple(judged)))
            continue
        verdict = worst_verdict(v.verdict for v in judged) if judged else first.diff.verdict
        out.append(FileVerdict(shown, verdict, first.path, first.diff, first.recorded,
                               tuple(judged), tuple(bases.values())))
    return out


def _judged_on(host: Mapping[str, Any], laws: Sequence[tuple[str, str]],
               ) -> list[tuple[str, str, list[dict[str, Any] | None]]]:
    """Each law's (name, target, footprint bindings it rests on), in file order: a file
    whose fits name no footprint at all rests every law on none."""
    evidence = _evidence(host, (name for name, _target in laws))
    return [(name, target, evidence[name] or [None]) for name, target in laws]


def judged_on_work_tree(ws: Workspace, files: list[tuple[str, bytes]], env: EnvSpec | None,
                        require: Require | None, *, kept: Collection[str] | None = None,
                        ) -> list[FileVerdict]:
    """Each (shown path, bytes) law file's verdict and its laws' against the engine's work
    tree and ``env`` (what runs now, whatever the re-key's target digest): how `rekey` and
    `fit`'s kept laws judge, by one rule. Under ``require`` the environment is strict and a law
    it refuses (of ``kept`` only, when given) is a `RefusalError` naming each, nothing
    written."""
    from lawkit.footprint.history import git_old_source
    from lawkit.footprint.trees import work_tree_sources

    verdicts = verdicts_of(ws, files, lambda: work_tree_sources(ws.digest),
                           old_source=git_old_source(ws.digest), env=env)
    refuse_under(require, verdicts, kept=kept)
    return verdicts


def refuse_under(require: Require | None, verdicts: Sequence[FileVerdict], *,
                 kept: Collection[str] | None = None) -> None:
    """A `RefusalError` naming each law of ``verdicts`` (of ``kept`` only, when given) that
    ``require`` refuses, with the first such file's verdict and what to do; nothing without a
    policy."""
    if require is None:
        return
    bad = require.failing(law for v in verdicts for law in v.laws
                          if kept is None or law.name in kept)
    if bad:
        first = next(v for v in verdicts if v.path == bad[0].file)
        raise RefusalError(require.refusal(bad, f"footprint verdict {first.summary()}",
                                           env_reason(first), kept=kept is not None),
                           path=first.path)


def env_reason(verdict: FileVerdict) -> str | None:
    """Why the environment, not the engine's code, makes a file's laws move, and what to do;
    None where the engine's code is the reason (or nothing was compared)."""
    from lawkit.footprint.lawverdict import verdict_of

    diff = verdict.diff
    if diff is None or diff.env is None:
        return None
    return diff.env.reason(verdict_of(diff.units) != "untouched")
