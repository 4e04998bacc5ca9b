"""The verdict rules, in one home: what a changed unit counts as, the verdict of a whole
footprint, and each law's (docs/footprints.md). `check`, `footprint diff`, `rekey` and `review`
all come here, through `law_verdict`.

A unit of the footprint that a change touches is ``changed``, ``absent`` or ``new``
(`UnitChange`). A changed unit whose code is the same once comments, blank lines, docstrings
and positions are left out counts as ``layout only`` and moves no verdict. Otherwise a changed
or absent unit counts as ``steps`` if it ran in steps, else ``startup`` if it ran at start-up,
else ``not run`` (a run only in shutdown is none); a new unit counts as ``steps`` when the
module body or class shell holding it ran.

The footprint's verdict (`verdict_of`) is ``steps`` if a unit counts as steps, else
``startup`` if one counts as startup, else ``untouched``. A law with a region R (its target,
when the footprint saw a region of that name in steps) is judged on the units that could move
R's time (`law_verdict`).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from lawkit.errors import printable
from lawkit.footprint import ANY_REGION
from lawkit.footprint.envdiff import EnvChange, change_line

VERDICTS = ("untouched", "startup", "steps", "unknown")
"""From best to worst."""
LAYOUT_ONLY = "layout only"
"""What a changed unit whose code did not change counts as."""


@dataclass(frozen=True)
class UnitChange:
    """One changed, absent or new unit, and what it counts as."""

    path: str
    unit: str
    change: str  # "changed" | "absent" | "new"
    phases: tuple[str, ...]
    counts_as: str  # "steps" | "startup" | "not run" | "layout only"
    layout_only: bool = False
    regions: tuple[str, ...] = ()
    """The regions the unit ran in during steps (``"*"``: no region open)."""
    startup_regions: tuple[str, ...] = ()
    """The regions it ran in at start-up (``"*"``: no region open)."""
    body: bool = False
    """A module body or class shell: it defines state for every region."""
    beside: str | None = None
    """For a new unit: the class shell or module body holding it that ran (why it counts)."""
    threads: tuple[str, ...] = ()
    """The threads the footprint saw run code in steps with no region open (the footprint's,
    not this unit's: which thread ran a unit is not recorded); empty: not recorded."""

    def to_json(self) -> dict[str, Any]:
        """The unit as in `footprint diff --json`."""
        return {"path": self.path, "unit": self.unit, "change": self.change,
                "phases": list(self.phases), "regions": list(self.regions),
                "counts_as": self.counts_as, "layout_only": self.layout_only,
                **({"why": why} if (why := self.reason()) else {})}

    def reason(self) -> str:
        """Why the unit counts for every region where that is not plain from how it ran, as a
        person says it: a new unit beside code that ran, a run with no region open (in steps,
        with the threads the footprint saw run code there) ("" for the rest: a module body or
        class shell, and code run only at start-up, count for every region by the rule
        itself)."""
        if self.change == "new":
            return f"beside {self.beside}, which ran" if self.beside is not None else ""
        if self.body:
            return ""
        if self.counts_as not in ("steps", "startup"):
            return ""
        if "steps" in self.phases and ANY_REGION in self.regions:
            threads = f" (threads: {', '.join(self.threads)})" if self.threads else ""
            return f"in steps with no region open{threads}"
        if {"startup", "steps"} <= set(self.phases) and ANY_REGION in self.startup_regions:
            return "at start-up with no region open"
        return ""

    def ran(self) -> str:
        """How the unit ran, as a person says it: ``ran in steps``, ``never ran``, ``new``."""
        if self.change == "new":
            return "new"
        if not self.phases:
            return "never ran"
        return "ran " + " and ".join("at start-up" if p == "startup" else "in steps"
                                     for p in self.phases)

    def line(self) -> str:
        """One line of `footprint diff`'s text output, with why the unit counts for every
        region where it does."""
        why = self.reason()
        return printable(f"{self.change:<8} {self.path}  {self.unit}  {self.ran()}: counts as "
                         f"{self.counts_as}" + (f" ({why})" if why else ""))


def counts_as(phases: Iterable[str], layout_only: bool = False) -> str:
    """What a changed or absent unit that ran in ``phases`` counts as."""
    if layout_only:
        return LAYOUT_ONLY
    ran = set(phases)
    if "steps" in ran:
        return "steps"
    return "startup" if "startup" in ran else "not run"


def verdict_of(changes: Iterable[UnitChange]) -> str:
    """The verdict of a whole footprint from its unit changes: steps, startup or untouched."""
    kinds = {c.counts_as for c in changes}
    if "steps" in kinds:
        return "steps"
    return "startup" if "startup" in kinds else "untouched"


def law_verdict(regions: Iterable[str], changes: Iterable[UnitChange],
                target: str, env: EnvComparison | None = None) -> tuple[str | None, str]:
    """A law's region (None: it has none) and its verdict, from the regions the footprint saw
    in steps and the unit changes: the one verdict of a law, wherever it is shown.

    A law whose target is no region the footprint saw takes the whole footprint's verdict.
    For a law with region R: ``steps`` if a changed or absent unit ran in steps in R or with
    no region open (``"*"``), or a new unit counts as steps; else ``startup`` if one ran at
    start-up in ``"*"`` or in R; else ``untouched``. Layout-only changes count for nothing.
    The environment's differences (``env``) count as changed units with the phases and regions
    their distribution ran in; with ``env.strict`` (every verdict a law is re-keyed on), code
    that ran from no distribution (outside the workspace: its own code is never listed) makes
    every law ``unknown``.
    """
    units = list(changes) + ([e.unit() for e in env.changes] if env is not None else [])
    if env is not None and env.strict and env.unpackaged:
        return (None if target == ANY_REGION or target not in set(regions) else target,
                "unknown")
    if target == ANY_REGION or target not in set(regions):
        return None, verdict_of(units)
    startup = False
    for u in units:
        if u.counts_as in (LAYOUT_ONLY, "not run"):
            continue
        if u.change == "new":
            return target, "steps"  # it could run anywhere: it counts for every region
        if {target, ANY_REGION} & steps_regions(u):
            return target, "steps"
        startup |= bool({target, ANY_REGION} & startup_regions(u))
    return target, "startup" if startup else "untouched"


def steps_regions(u: UnitChange) -> set[str]:
    """The regions a unit counts in during steps."""
    if "steps" not in u.phases:
        return set()
    # A module body or class shell defines state every region reads; a unit that ran in steps
    # with no region recorded (a footprint listing regions, but not this unit's) could have
    # run anywhere.
    if u.body or not u.regions:
        return {ANY_REGION}
    return set(u.regions)


def startup_regions(u: UnitChange) -> set[str]:
    """The regions a unit counts in at start-up."""
    if "startup" not in u.phases:
        return set()
    # Start-up regions narrow a unit only when it also ran in steps: code that ran only at
    # start-up (module constants, `__init__`, a warm-up's one-off set-up) may have left state
    # that every region reads. A footprint without start-up regions had none open.
    if u.body or "steps" not in u.phases or not u.startup_regions:
        return {ANY_REGION}
    return set(u.startup_regions)


def worst_verdict(verdicts: Iterable[str]) -> str:
    """The worst of some verdicts (``untouched`` < ``startup`` < ``steps`` < ``unknown``)."""
    return max(verdicts, key=VERDICTS.index)


# The environment (docs/footprints.md, "The environment"): a difference in a distribution that
# ran counts like a changed unit with its phases and regions; a Python that differs counts as
# steps for every law.

ENV_PATH = "<environment>"
"""Where an environment difference's `UnitChange` says it is."""
_NAMED_PATHS = 3
"""Up to this many paths of code from no distribution, a line names each of them."""
NOT_COMPARED = ("environment: not compared (set [tool.lawkit] environment, or pass --env "
                "current or --env FILE)")
"""The one line a report gives where a footprint has an environment and no target is set."""


def env_option(source: str | None) -> str:
    """``--env SOURCE `` for a fix line's command, so that it compares with the same target as
    the report that printed it ("" where only the config's Python was compared: the command
    reads the config too)."""
    if source is None or source.startswith("python "):
        return ""
    return f"--env {shlex.quote(source)} "


@dataclass(frozen=True)
class EnvUnit:
    """One difference of the environment (`envdiff.EnvChange`) and where its distribution ran
    (a Python difference: in steps, with no region open)."""

    change: EnvChange
    phases: tuple[str, ...] = ("steps",)
    regions: tuple[str, ...] = (ANY_REGION,)
    startup_regions: tuple[str, ...] = ()

    def unit(self) -> UnitChange:
        """The difference as the changed unit it counts as."""
        return UnitChange(ENV_PATH, self.change.name, "changed", self.phases,
                          counts_as(self.phases), regions=self.regions,
                          startup_regions=self.startup_regions)

    def line(self) -> str:
        """``changed  dist torch 2.11.0 -> 2.12.0  ran in steps (regions sample_s)``, and why
        it counts for every law where it does (``; at start-up with no region open: every
        law``: imported at module level, say, and called in one region)."""
        why = "" if self.change.kind == "python" else self.unit().reason()
        line = change_line(self.change, self.phases, self.regions)
        return f"{line}; {why}: every law" if why else line

    def to_json(self) -> dict[str, Any]:
        """The difference as in ``--json`` outputs."""
        return {**self.change.to_json(), "phases": list(self.phases),
                "regions": list(self.regions), "counts_as": counts_as(self.phases)}


@dataclass(frozen=True)
class EnvComparison:
    """A footprint's environment compared with a target: the target (None: not compared), the
    differences that count, the code that ran from no distribution, and whether that code
    makes a verdict unknown (``check``, ``rekey``, ``fit`` and ``review``)."""

    source: str | None
    changes: tuple[EnvUnit, ...] = ()
    unpackaged: tuple[str, ...] = ()
    strict: bool = False
    notes: tuple[str, ...] = ()
    """One line each for what the target could not show (a lock file: content, the
    configuration) or the footprint did not record (before schema 3)."""

    def lines(self) -> list[str]:
        """One line per difference, or one saying that no distribution that ran differs; the
        notes; then the line naming code from no distribution, when it makes laws unknown (or
        one line saying the environment was not compared)."""
        if self.source is None:
            return [NOT_COMPARED]
        out = [e.line() for e in self.changes]
        unknown = self.unpackaged_line()
        if not out and unknown is None:
            out = [printable(f"environment: no distribution that ran differs in {self.source}")]
        return out + list(self.notes) + ([unknown] if unknown is not None else [])

    def unpackaged_line(self) -> str | None:
        """Where strict, the one line saying which code from no distribution
        ran (it makes every law ``unknown``: no target pins it) and what to do; None when
        none ran or nothing is required."""
        reason = self._unpackaged_reason()
        return None if reason is None else f"unknown  {reason}"

    def _unpackaged_reason(self) -> str | None:
        if not (self.strict and self.unpackaged):
            return None
        named = ", ".join(self.unpackaged[:_NAMED_PATHS])
        more = len(self.unpackaged) - _NAMED_PATHS
        if more > 0:
            named += f" and {more} more"
        return printable(
            f"code from no distribution ran: {named}: no environment pins it, so every law "
            "counts as unknown; install it as a distribution, or "
            "move it into the workspace or the hashed files, then record the footprint again "
            "(one recorded by an older lawkit lists the workspace's own code too)")

    def reason(self, code_moves: bool) -> str | None:
        """Why the environment makes a verdict not untouched, and what to do, on one line:
        the code from no distribution that ran (where strict), else the
        differences where the engine's code moves no law (``code_moves`` False); None when
        the engine's code is the reason, or the environment moves nothing."""
        unpackaged = self._unpackaged_reason()
        if unpackaged is not None:
            return unpackaged
        if code_moves or not self.changes or self.source is None:
            return None
        return printable(f"the environment {self.source} differs from the footprint's: "
                         f"{'; '.join(e.line() for e in self.changes)}: refit from captures "
                         "taken there, or if the laws still hold accept it with lawkit rekey "
                         f"--accept-env {env_option(self.source)}--why TEXT")

    def to_json(self) -> dict[str, Any]:
        """The comparison as in ``--json`` outputs."""
        return {"target": self.source, "changes": [e.to_json() for e in self.changes],
                "unpackaged": list(self.unpackaged), "notes": list(self.notes)}
