"""What differs between a recorded environment and a target (docs/footprints.md).

Each distribution that ran is compared with the target's pin of it:

    version     the target pins one other version
    absent      the target does not list it
    ambiguous   the target allows several versions, or pins none exactly (``torch>=2``)
    editable    it was recorded installed editable: its code may differ at one version
    direct url  it was recorded installed from a direct URL (a local wheel, a VCS checkout),
                unless the current environment holds it at that version with the same RECORD

and the Python build is compared with the target's (``current``) or with an exact version
given instead (the config's ``python``): a lock file names no Python, so without one the Python
is not compared. What the caller does with a change (the regions a distribution ran in, the
laws it counts for) is not this module's: `compare` is pure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lawkit.errors import printable
from lawkit.footprint.environment import (
    STDLIB,
    DistInfo,
    Environment,
    Pin,
    PythonBuild,
    Target,
    version_key,
)

KINDS = ("python", "version", "absent", "ambiguous", "editable", "direct url")


@dataclass(frozen=True)
class EnvChange:
    """One difference: a distribution's (by canonical name) or the Python's (``python``)."""

    name: str
    kind: str
    old: str
    """The recorded version (the Python's, described, for ``python``)."""
    new: str | None
    """The target's version (the Python's, described); None when absent or ambiguous."""
    allowed: tuple[str, ...] = ()
    """For ``ambiguous``: the exact versions the target lists (it may allow others)."""
    url: str | None = None
    """For ``direct url`` and ``editable``: where the recorded install came from."""

    def describe(self) -> str:
        """The change as a person says it: ``torch 2.11.0 -> 2.12.0``."""
        if self.kind == "python":
            return f"python {self.old} -> {self.new}"
        if self.kind == "absent":
            return f"{self.name} {self.old} -> absent"
        if self.kind == "ambiguous":
            listed = " or ".join(self.allowed) if self.allowed else "no exact version"
            return f"{self.name} {self.old} -> {listed} (ambiguous: pin one version)"
        if self.kind in ("editable", "direct url"):
            where = f" from {self.url}" if self.url else ""
            return (f"{self.name} {self.old} ({self.kind}{where}: its code may differ at one "
                    "version)")
        return f"{self.name} {self.old} -> {self.new}"

    def to_json(self) -> dict[str, Any]:
        """The change as in ``--json`` outputs."""
        return {"name": self.name, "kind": self.kind, "old": self.old, "new": self.new,
                "allowed": list(self.allowed), "url": self.url}


def compare(recorded: Environment, target: Target, *,
            python: PythonBuild | str | None = None) -> list[EnvChange]:
    """The differences between a recorded environment (the distributions that ran) and a
    target, the Python's first, then by name; ``python`` (a build, or an exact version such
    as ``"3.12.3"``) is compared instead of the target's Python."""
    changes: list[EnvChange] = []
    python_change = _python_change(recorded.python,
                                   python if python is not None else target.python)
    if python_change is not None:
        changes.append(python_change)
    for name, dist in sorted(recorded.distributions.items()):
        if name == STDLIB:
            continue  # the standard library is the Python, compared above
        change = _dist_change(dist, target.distributions.get(name))
        if change is not None:
            changes.append(change)
    return changes


def _python_change(old: PythonBuild, new: PythonBuild | str | None) -> EnvChange | None:
    if new is None:
        return None
    if isinstance(new, str):  # an exact version from the config: the rest of the build unknown
        if version_key(new) == version_key(old.version):
            return None
        return EnvChange(STDLIB, "python", old.version, new)
    if (version_key(old.version), old.implementation, old.abiflags, old.gil_disabled) == \
            (version_key(new.version), new.implementation, new.abiflags, new.gil_disabled):
        return None
    return EnvChange(STDLIB, "python", old.describe(), new.describe())


def _dist_change(dist: DistInfo, pin: Pin | None) -> EnvChange | None:
    if pin is None:
        return EnvChange(dist.name, "absent", dist.version, None)
    only = pin.only()
    if only is None:
        return EnvChange(dist.name, "ambiguous", dist.version, None, pin.versions)
    if version_key(only) != version_key(dist.version):
        return EnvChange(dist.name, "version", dist.version, only)
    if dist.editable:
        return EnvChange(dist.name, "editable", dist.version, only, url=dist.url)
    if dist.url is not None:
        # a direct-URL install is the same code when the same RECORD (every installed file's
        # hash) is installed now; a lock file cannot say, so it counts as changed there
        same = pin.installed is not None and bool(dist.record) and \
            pin.installed.record == dist.record
        return None if same else EnvChange(dist.name, "direct url", dist.version, only,
                                           url=dist.url or None)
    return None


def change_line(change: EnvChange, phases: Iterable[str] = (),
                regions: Iterable[str] = ()) -> str:
    """One report line: ``changed  dist torch 2.11.0 -> 2.12.0  ran in steps (regions
    sample_s)``; a Python change counts for every law."""
    if change.kind == "python":
        return printable(f"changed  {change.describe()}  counts as steps for every law")
    phases = tuple(phases)
    ran = "ran " + " and ".join("at start-up" if p == "startup" else "in steps"
                                for p in phases) if phases else "never ran"
    names = tuple(regions)
    where = f" (regions {', '.join(names)})" if names and "steps" in phases else ""
    return printable(f"changed  dist {change.describe()}  {ran}{where}")

