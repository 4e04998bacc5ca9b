"""The one re-key policy of `rekey`, `review` and `fit`'s kept laws (docs/footprints.md, "What a
verdict lets you do"): which law verdicts a re-key may rest on, and the words of a refusal.
Code that ran from no distribution counts as unknown under every policy and without one (no
target pins it: `keying.footprints.verdicts_of`), so that `check` and `rekey` give one law
one verdict.

Two levels. ``untouched``: only code the capture runs never ran changed. ``startup``: that, or
code that ran only at start-up changed, which a person judges (a re-key with ``--why`` says
why it cannot move the steps' time; a refit is the alternative). ``unknown`` and ``steps`` fail
both: a refit is the way on. The level is ``--require``, else the workspace's ``[rekey]
require`` (``lawkit init`` writes ``startup``); with neither, nothing is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from lawkit.config import REQUIRE_LEVELS, Workspace
from lawkit.errors import LawkitError, printable

PASSING = {"untouched": ("untouched",), "startup": ("untouched", "startup")}
"""The law verdicts each level lets a re-key rest on."""


class Judged(Protocol):
    """A law's verdict, as `keying.footprints.LawVerdict` gives it."""

    @property
    def file(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def verdict(self) -> str: ...


J = TypeVar("J", bound=Judged)


@dataclass(frozen=True)
class Require:
    """A re-key policy: its level and where it was set (``--require``, or the config key)."""

    level: str
    source: str = "--require"

    @classmethod
    def of(cls, option: str | None, ws: Workspace | None = None) -> Require | None:
        """``--require`` (``option``) when given, else the workspace's ``[rekey] require``;
        None when neither is set. A value that is no level is a `LawkitError`."""
        if option is not None:
            if option not in REQUIRE_LEVELS:
                raise LawkitError(f"--require {printable(repr(option))}: expected one of "
                                  f"{', '.join(REQUIRE_LEVELS)}")
            return cls(option)
        if ws is None or ws.require is None:
            return None
        return cls(ws.require, config_key(ws))

    def said(self) -> str:
        """The policy as messages name it: ``--require startup``, or the config key."""
        return f"--require {self.level}" if self.source == "--require" else self.source

    def passes(self, verdict: str) -> bool:
        """Whether a law with this verdict may be re-keyed."""
        return verdict in PASSING[self.level]

    def failing(self, laws: Iterable[J]) -> list[J]:
        """The laws whose verdict the policy refuses."""
        return [law for law in laws if not self.passes(law.verdict)]

    def expected(self) -> str:
        """The verdicts that pass, as a person says them: ``untouched or startup``."""
        return " or ".join(PASSING[self.level])

    def refusal(self, bad: Sequence[Judged], detail: str, reason: str | None = None, *,
                kept: bool = False) -> str:
        """The words of a refusal of ``bad`` (the laws that fail, the first file's first):
        each named with its verdict, then ``detail`` (the footprint verdict behind them),
        then what to do (``reason`` where the environment is the cause, else `way_on`), then
        that nothing was written."""
        by_file: dict[str, list[str]] = {}
        for law in bad:
            by_file.setdefault(law.file, []).append(f"{law.name} ({law.target}) {law.verdict}")
        laws = "; ".join((f"in {file}: " if i else "") + ", ".join(named)
                         for i, (file, named) in enumerate(by_file.items()))
        n = len(bad)
        what = f"{n}{' kept' if kept else ''} law{'s' if n != 1 else ''}"
        reason = reason or self.way_on(law.verdict for law in bad)
        return printable(f"{self.said()}: {what} not {self.expected()}: {laws}; {detail}; "
                         f"{reason}; nothing was written")

    def way_on(self, verdicts: Iterable[str]) -> str:
        """What to do about laws this policy refuses, by the worst of their verdicts."""
        seen = set(verdicts)
        if seen <= {"startup"}:
            return ("code that ran at start-up changed: if it cannot move the steps' time, "
                    "re-key with --require startup --why TEXT (you judge), else refit from "
                    "fresh captures")
        if "steps" in seen:
            return "code the capture runs executed in steps changed: refit from fresh captures"
        return "refit from fresh captures with lawkit fit --footprint, so that a verdict is known"


def config_key(ws: Workspace) -> str:
    """The workspace's policy as its config spells it: ``[rekey] require = "startup"
    (lawkit.toml)``."""
    name = ws.config_path.name if ws.config_path is not None else "lawkit.toml"
    key = "[tool.lawkit.rekey] require" if name == "pyproject.toml" else "[rekey] require"
    return f'{key} = "{ws.require}" ({name})'
