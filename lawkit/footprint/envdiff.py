"""What differs between a recorded environment and a target, by version and source
(docs/footprints.md): what a lock file can show, and what a footprint recorded before schema 3
can be judged by. Each distribution that ran is compared with the target's pin of it:

    version     the target pins one other version
    absent      the target does not list it
    ambiguous   the target allows several versions, pins none exactly (``torch>=2``), or admits
                a local build of the one it names (``==1.0`` admits ``1.0+local``)
    source      the target takes it from elsewhere than an index (a VCS, a folder, a URL): its
                code may differ at one version
    install     it was recorded installed from elsewhere than an index (editable, a local
                wheel, a VCS checkout, a folder, egg-info): a version cannot say its code is
                the same, unless the current environment holds it with the same RECORD

and the Python build is compared with the target's (``current``, a manifest) or with an exact
version given instead (the config's ``python``): a lock file names no Python, so without one
the Python is not compared. A target that shows content (`content`) compares files instead of
versions. What the caller does with a change (the regions a distribution ran in, the laws it
counts for) is not this module's: `compare` is pure.
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
    same_version,
)

KINDS = ("python", "version", "absent", "stays absent", "ambiguous", "source", "install",
         "content", "environ", "setting")


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
    """For ``install``: where the recorded install came from; for ``source``: the target's
    source kind; for ``content``: the file that differs."""
    how: str = ""
    """For ``install`` and ``content``: the recorded install kind (``editable``, ``archive``...)."""
    accepted: Any = None
    """What ``rekey --accept-env`` records of the target for this difference (`envverdict`:
    a version, an identity, None for absent)."""

    def describe(self) -> str:
        """The change as a person says it: ``torch 2.11.0 -> 2.12.0``."""
        if self.kind == "python":
            return f"python {self.old} -> {self.new}"
        if self.kind == "absent":
            return f"{self.name} {self.old} -> absent"
        if self.kind == "stays absent":
            return f"{self.name} accepted as absent -> {self.new} (it must stay absent)"
        if self.kind == "environ":
            return f"environ {self.name} {self.new}"
        if self.kind == "setting":
            return f"setting {self.name} {self.old} -> {self.new}"
        if self.kind == "ambiguous":
            listed = " or ".join(self.allowed) if self.allowed else "no exact version"
            return f"{self.name} {self.old} -> {listed} (ambiguous: pin one version)"
        if self.kind == "install":
            where = f" from {self.url}" if self.url else ""
            return (f"{self.name} {self.old} (installed {self.how}{where}: its code may differ "
                    "at one version)")
        if self.kind == "source":
            return (f"{self.name} {self.old} (the target takes it from a {self.url} source: "
                    "its code may differ at one version)")
        if self.kind == "content":
            return f"{self.name} {self.old} ({self.how}): {self.url} {self.new}"
        return f"{self.name} {self.old} -> {self.new}"

    def to_json(self) -> dict[str, Any]:
        """The change as in ``--json`` outputs."""
        return {"name": self.name, "kind": self.kind, "old": self.old, "new": self.new,
                "allowed": list(self.allowed), "url": self.url, "install": self.how or None}


def compare(recorded: Environment, target: Target, *,
            python: PythonBuild | str | None = None) -> list[EnvChange]:
    """The differences between a recorded environment (the distributions that ran) and a
    target, the Python's first, then by name; ``python`` (a build, or an exact version such
    as ``"3.12.3"``) is compared instead of the target's Python."""
    changes: list[EnvChange] = []
    python_change = compare_python(recorded.python,
                                   python if python is not None else target.python)
    if python_change is not None:
        changes.append(python_change)
    for name, dist in sorted(recorded.distributions.items()):
        if name == STDLIB:
            continue  # the standard library is the Python, compared above
        change = compare_dist(dist, target.distributions.get(name))
        if change is not None:
            changes.append(change)
    return changes


def compare_python(old: PythonBuild, new: PythonBuild | str | None) -> EnvChange | None:
    """The Python's difference: with a build, or an exact version (the config's ``python``:
    then only the version is compared); None when they are one, or nothing is given."""
    if new is None:
        return None
    if isinstance(new, str):  # an exact version from the config: the rest of the build unknown
        if same_version(new, old.version):
            return None
        return EnvChange(STDLIB, "python", old.version, new)
    if same_version(old.version, new.version) and (old.implementation, old.abiflags,
                                                   old.gil_disabled) == \
            (new.implementation, new.abiflags, new.gil_disabled):
        return None
    return EnvChange(STDLIB, "python", old.describe(), new.describe())


def compare_dist(dist: DistInfo, pin: Pin | None) -> EnvChange | None:
    """A distribution's difference with the target's pin of it (None: the target lists it
    not); None when the pin says its code is the one recorded."""
    if pin is None:
        return EnvChange(dist.name, "absent", dist.version, None)
    only = pin.only()
    if only is None:
        return EnvChange(dist.name, "ambiguous", dist.version, None, pin.versions)
    if not same_version(only, dist.version):
        return EnvChange(dist.name, "version", dist.version, only)
    if pin.source == "index" and dist.install == "index":
        return None
    # the same RECORD (every installed file's hash) installed now is the same code; a lock file
    # cannot say, nor can an editable install's RECORD (its code is elsewhere)
    installed = pin.installed
    if installed is not None and dist.record and installed.record == dist.record and \
            not dist.editable and not installed.editable:
        return None
    if dist.install != "index":
        return EnvChange(dist.name, "install", dist.version, only, url=dist.source,
                         how=dist.install)
    return EnvChange(dist.name, "source", dist.version, only, url=pin.source or "unnamed")


def change_line(change: EnvChange, phases: Iterable[str] = (),
                regions: Iterable[str] = ()) -> str:
    """One report line: ``changed  dist torch 2.11.0 -> 2.12.0  ran in steps (regions
    sample_s)``; a Python change counts for every law."""
    if change.kind in ("python", "setting"):
        return printable(f"changed  {change.describe()}  counts as steps for every law")
    phases = tuple(phases)
    verb = "read" if change.kind == "environ" else "ran"
    ran = f"{verb} " + " and ".join("at start-up" if p == "startup" else "in steps"
                                    for p in phases) if phases else "never ran"
    names = tuple(regions)
    where = f" (regions {', '.join(names)})" if names and "steps" in phases else ""
    what = "" if change.kind == "environ" else "dist "
    return printable(f"changed  {what}{change.describe()}  {ran}{where}")

