"""The phase and region markers an engine or harness calls, and the vocabulary of a recording.

An engine or harness marks where its steps begin with ``lawkit.footprint.phase("steps")``,
where they end with ``phase("shutdown")``, and the timed regions of a step with ``with
lawkit.footprint.region("sample_s"):`` (``lawkit.capture`` calls the same markers). Phases are
process-wide, regions per thread. A region may be entered in any phase: in start-up (a warm-up
through the step code) the recorder attributes what runs to its regions as in steps; in
shutdown a region is kept on the thread (so that one closed after ``phase("shutdown")`` exits
cleanly) but what runs there counts as shutdown whatever the regions. When no footprint is
being recorded a marker only keeps that state (no event, no I/O; `recording` says which); a
recorder that runs in the process is told of every switch.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

PHASES = ("startup", "steps", "shutdown")
"""The phases of a recording: the main process starts in the first. What runs only in
``shutdown`` counts as not run, unless the process enters ``steps`` again."""
ANY_REGION = "*"
"""The region of a run in a phase with no region open on its thread."""
Context = tuple[str, tuple[str, ...]]
"""Where a run happened: a phase and the regions open on its thread, outermost first."""
OWN_THREAD = "lawkit-"
"""The name prefix of lawkit's own threads (the SIGTERM watch, a capture's flusher)."""
ENGINE_FREE = "lawkit_runs_no_engine_code"
"""A thread with this attribute true runs only lawkit's own code, never a hashed file: its
context does not count."""


class PhaseSwitches(Protocol):
    """What the markers tell of each phase (`configuration.ConfigurationReads`)."""

    def switched_phase(self, name: str) -> None:
        """The process entered phase ``name``."""


class Switches(PhaseSwitches, Protocol):
    """What the markers tell a recorder (`recorder.Recorder` is told more)."""

    def switched_regions(self, regions: tuple[str, ...]) -> None:
        """This thread's open regions are now ``regions``."""


class RegionError(ValueError):
    """A region marker used out of place: exited without being entered, or not innermost."""


class Markers:
    """What the markers keep for the process: its phase, each thread's open regions, and the
    recorder told of every switch (None when the process is not recorded: the measured
    process sets it at install)."""

    __slots__ = ("configuration", "local", "phase", "recorder")

    def __init__(self) -> None:
        self.phase = "startup"
        self.recorder: Switches | None = None
        self.configuration: PhaseSwitches | None = None
        """The environment variables read and the settings, told of each phase (None when
        not recording)."""
        self.local = threading.local()


MARKERS = Markers()
"""This process's markers: one object, never rebound (tests set its fields and put them back)."""


def recording() -> bool:
    """Whether this process is being recorded by `lawkit footprint record`."""
    return MARKERS.recorder is not None


def phase(name: str) -> None:
    """Enter a phase (``"startup"``, ``"steps"`` or ``"shutdown"``) of the process; costs
    nothing when not recording."""
    if name not in PHASES:
        raise ValueError(f"phase must be one of {PHASES}, got {name!r}")
    MARKERS.phase = name
    recorder = MARKERS.recorder
    if recorder is not None:
        recorder.switched_phase(name)
    configuration = MARKERS.configuration
    if configuration is not None:
        configuration.switched_phase(name)


def current_phase() -> str:
    """The process's phase: ``"startup"`` until ``phase("steps")`` (a measured child process
    starts in ``steps``)."""
    return MARKERS.phase


def open_regions() -> tuple[str, ...]:
    """The regions open on this thread, outermost first."""
    regions: tuple[str, ...] = getattr(MARKERS.local, "regions", ())
    return regions


def enter_region(name: str) -> None:
    """Open a region on this thread (in any phase)."""
    markers = MARKERS
    regions = (*getattr(markers.local, "regions", ()), name)
    markers.local.regions = regions
    recorder = markers.recorder
    if recorder is not None:
        recorder.switched_regions(regions)


def exit_region(name: str) -> None:
    """Close the innermost region of this thread, which must be ``name``."""
    markers = MARKERS
    regions: tuple[str, ...] = getattr(markers.local, "regions", ())
    if not regions or regions[-1] != name:
        open_ = regions[-1] if regions else "none"
        raise RegionError(f"region {name!r} exited, but the innermost open region is {open_}")
    regions = regions[:-1]
    markers.local.regions = regions
    recorder = markers.recorder
    if recorder is not None:
        recorder.switched_regions(regions)


@contextmanager
def region(name: str) -> Iterator[None]:
    """Mark a region of a step on this thread, in steps or in a warm-up at start-up (no timing:
    ``lawkit.capture`` times them)."""
    enter_region(name)
    try:
        yield
    finally:
        exit_region(name)
