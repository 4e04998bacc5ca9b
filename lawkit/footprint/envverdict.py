"""A footprint's environment compared with the target a command names (docs/footprints.md,
"The environment"): ``--env current|FILE``, else the config's ``environment``; the config's
``python`` is the exact Python compared against. The differences count through
`lawverdict.law_verdict`, like changed units.

A law file's baseline is its footprint's environment with the ``env`` clauses of the ``rekey``
entries after its newest fit applied (``lawkit rekey --env``): ``{"torch": ["2.11.0",
"2.12.0"]}`` moves torch to 2.12.0; a new version of null drops the distribution; ``python``
names the Python's version.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from lawkit.config import Workspace
from lawkit.errors import printable
from lawkit.footprint.document import EnvironmentRecord
from lawkit.footprint.envdiff import compare
from lawkit.footprint.environment import STDLIB, Environment, Target
from lawkit.footprint.lawverdict import EnvComparison, EnvUnit

EnvClause = Mapping[str, tuple[str, str | None]]
"""One accepted change of the environment: each name's (old, new) version."""


@dataclass(frozen=True)
class EnvSpec:
    """What a command compares environments with: a target (None: no distribution compared),
    an exact Python version (None: the target's, if any), and whether code from no
    distribution makes a verdict unknown (``--require untouched``)."""

    target: Target | None = None
    python: str | None = None
    strict: bool = False

    @property
    def source(self) -> str | None:
        """The target as reports name it; None when nothing is compared."""
        if self.target is not None:
            return self.target.source
        return None if self.python is None else f"python {self.python}"


def not_recorded_line(spec: EnvSpec, footprint: str) -> str | None:
    """The one line a report gives where a target is named but the footprint recorded no
    environment (recorded before footprints did); None when no target is named."""
    if spec.source is None:
        return None
    return printable(f"environment: not compared with {spec.source}: {footprint} was recorded "
                     "without its environment; record it again with lawkit footprint record")


def env_spec(ws: Workspace, option: str | None = None, *, strict: bool = False) -> EnvSpec:
    """The target of ``--env`` (``option``), else of the config's ``environment``, with the
    config's ``python``; a lock file is read relative to the workspace root. A malformed lock
    file is a `LockFileError` naming it."""
    from lawkit.footprint.lockfiles import read_target

    given = option or ws.environment
    return EnvSpec(read_target(given, ws.root, python=ws.python) if given else None, ws.python,
                   strict)


def env_clauses(host: Mapping[str, Any]) -> list[EnvClause]:
    """The ``env`` clauses of a law file's ``rekey`` entries after its newest fit, in order."""
    entries = host.get("provenance")
    out: list[EnvClause] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        if isinstance(entry.get("fit"), dict):
            out = []
        rekey = entry.get("rekey")
        env = rekey.get("env") if isinstance(rekey, dict) else None
        if isinstance(env, dict):
            out.append({str(name): (str(pair[0]), None if pair[1] is None else str(pair[1]))
                        for name, pair in env.items()
                        if isinstance(pair, list) and len(pair) == 2})
    return out


def applied(record: EnvironmentRecord, clauses: Iterable[EnvClause]) -> EnvironmentRecord:
    """The recorded environment with accepted changes applied: the baseline to compare."""
    python, dists = record.python, dict(record.distributions)
    for clause in clauses:
        for name, (_old, new) in clause.items():
            if name == STDLIB:
                if new is not None:
                    python = dataclasses.replace(python, version=new)
            elif name in dists:
                if new is None:
                    del dists[name]
                else:  # accepted as installed now: no longer an editable or direct-URL install
                    dists[name] = dataclasses.replace(dists[name], version=new, direct_url=None)
    return dataclasses.replace(record, python=python, distributions=dists)


def compare_env(record: EnvironmentRecord | None, spec: EnvSpec | None,
                clauses: Iterable[EnvClause] = ()) -> EnvComparison | None:
    """A footprint's environment (after ``clauses``) compared with ``spec``: None when the
    footprint has no environment; not compared (``source`` None) when ``spec`` names nothing.
    A distribution that did not run is ignored."""
    if record is None:
        return None
    if spec is None or spec.source is None:
        return EnvComparison(None, unpackaged=record.unpackaged)
    base = applied(record, clauses)
    env = base.environment()
    if spec.target is None:  # only the Python: no distribution compared
        env, target = Environment(env.python, {}), Target(spec.source, None, {})
    else:
        target = spec.target
    units = []
    for change in compare(env, target, python=spec.python):
        if change.kind == "python":
            units.append(EnvUnit(change))
            continue
        dist = base.distributions[change.name]
        if dist.phases:
            units.append(EnvUnit(change, dist.phases, dist.regions, dist.startup_regions))
    return EnvComparison(spec.source, tuple(units), record.unpackaged, spec.strict)


def clause_of(comparison: EnvComparison) -> dict[str, list[str | None]]:
    """The ``env`` clause that accepts a comparison's differences as the new baseline."""
    out: dict[str, list[str | None]] = {}
    for unit in comparison.changes:
        change = unit.change
        if change.kind == "python":
            out[STDLIB] = [_version(change.old), _version(change.new or "")]
        else:
            out[change.name] = [change.old, change.new]
    return out


def _version(described: str) -> str:
    """The version in ``3.12.3`` or ``cpython 3.12.3`` (a build, described)."""
    words = described.split()
    return words[1] if len(words) > 1 else described
