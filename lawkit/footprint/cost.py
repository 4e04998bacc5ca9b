"""What recording cost the regions it recorded, estimated from the recorder's own event counts:
per region, the callbacks fired in steps, times what one callback costs, against the region's
time in the captures the run wrote; and one warning, naming the cause and the remedy, when the
estimate passes `WARN_SHARE` of a region's time.

A code object the recorder has turned off costs nothing; one kept armed fires a callback on
every call. The usual cause is a thread that sits in another context while it waits outside
threading's waits (a ``time.sleep`` poll, a socket): the code another thread runs in a region
must then run in both contexts before it is turned off (docs/footprints.md, Threads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from lawkit.footprint.document import ANY_REGION

CALLBACK_NS = 2500
"""What one callback of the recorder costs the code it fires in, in nanoseconds: the threaded
bench's polling shape (bench/footprint_threads.py), its recorded minus bare region time over
the callbacks fired there, in its quietest run on a shared 2-CPU machine (2,524 ns; 1,542 and
3,524 ns in two runs under load: docs/performance.md), rounded. A faster machine pays less, so
the estimate errs toward warning."""
WARN_SHARE = 0.05
"""The estimated share of a region's time past which `record` warns (the recorder's target is
1.05x)..."""
WARN_SECONDS = 0.001
"""...when the estimate is also at least this, in all: each code object a region runs fires
once there before it is turned off, which in a run of a few short steps is a share of their
time, and nothing a capture's figures feel."""
REMEDY = ("make it wait in one of threading's waits (queue.Queue.get, "
          "threading.Event.wait, Condition.wait, with a timeout if the loop must wake), "
          "or take the captures in a run without the recorder")


@dataclass(frozen=True)
class RegionCost:
    """One region's callbacks in steps, the threads that kept its code armed, and its time in
    the captures (None: no capture of the run had it)."""

    region: str
    callbacks: int
    threads: tuple[str, ...]
    seconds: float | None

    @property
    def estimate(self) -> float:
        """The seconds the callbacks cost, by `CALLBACK_NS`."""
        return self.callbacks * CALLBACK_NS / 1e9

    @property
    def share(self) -> float | None:
        """The estimate as a share of the region's time in the captures."""
        return self.estimate / self.seconds if self.seconds else None

    def line(self) -> str:
        """``sample_s: 48,218 callbacks in steps (code kept armed by MainThread), about 96.4 ms
        of its 112 ms in the captures (86%)``."""
        name = "steps with no region open (*)" if self.region == ANY_REGION else self.region
        armed = f" (code kept armed by {', '.join(self.threads)})" if self.threads else ""
        against = (f" of its {_ms(self.seconds)} in the captures ({_part(self.share)})"
                   if self.share is not None and self.seconds is not None else
                   " (no capture of the run timed it)")
        return (f"{name}: {self.callbacks:,} callbacks in steps{armed}, about "
                f"{_ms(self.estimate)}{against}")

    def to_json(self) -> dict[str, object]:
        """The region's cost as JSON."""
        return {"region": self.region, "callbacks": self.callbacks,
                "threads": list(self.threads), "estimate_s": self.estimate,
                "captured_s": self.seconds, "share": self.share}


@dataclass(frozen=True)
class RecordCost:
    """The recorder's cost in each region of a recorded run."""

    regions: tuple[RegionCost, ...]

    def lines(self) -> list[str]:
        """One line per region that fired a callback in steps."""
        return [f"recorder cost: {r.line()}" for r in self.regions if r.callbacks]

    def warning(self) -> str | None:
        """One line when a region's estimate passes `WARN_SHARE` of its time: the worst region,
        the others past it, the cause and the remedy; None when none does."""
        over = sorted((r for r in self.regions
                       if (r.share or 0) > WARN_SHARE and r.estimate >= WARN_SECONDS),
                      key=lambda r: -(r.share or 0))
        if not over:
            return None
        worst = over[0]
        also = "".join(f", {r.region} {_part(r.share)}" for r in over[1:])
        head = (f"warning: recording took about {_part(worst.share)} of {worst.region}'s time in "
                f"the captures{also} (estimated from its callbacks), so times captured while "
                "recording are inflated: ")
        if worst.threads:
            *others, last = worst.threads
            who = (f"threads {', '.join(others)} and {last} kept region {worst.region}'s code "
                   "armed: they poll instead of blocking" if others else
                   f"thread {last} kept region {worst.region}'s code armed: it polls instead "
                   "of blocking")
            return f"{head}{who}; {REMEDY}"
        return (f"{head}its code fired {worst.callbacks:,} callbacks in steps; take the "
                "captures in a run without the recorder")

    def to_json(self) -> list[dict[str, object]]:
        """Each region's cost as JSON."""
        return [r.to_json() for r in self.regions]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.3g} ms"


def _part(share: float | None) -> str:
    """A share of a region's time; past all of it (the per-callback cost is a round figure,
    measured on another machine), "all"."""
    return "all" if share is not None and share >= 1 else f"{share or 0:.0%}"


def record_cost(events: Mapping[str, Mapping[str, int]],
                armed_threads: Mapping[str, Sequence[str]],
                seconds: Mapping[str, float]) -> RecordCost:
    """The cost of each region from the recorder's counts (region -> event kind -> callbacks
    in steps; region -> threads that kept its code armed) and each region's seconds in the
    captures (a region missing there has no share)."""
    names = sorted(set(events) | set(armed_threads))
    return RecordCost(tuple(
        RegionCost(name, sum(events.get(name, {}).values()),
                   tuple(sorted(armed_threads.get(name, ()))), seconds.get(name))
        for name in names))
