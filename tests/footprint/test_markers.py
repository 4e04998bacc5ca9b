"""The phase and region markers of `lawkit.footprint`, when no footprint is being recorded."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import lawkit.footprint as footprint
from lawkit.footprint.measured.markers import MARKERS


@pytest.fixture(autouse=True)
def _startup() -> Iterator[None]:
    before = footprint.current_phase()
    MARKERS.phase = "startup"
    yield
    MARKERS.phase = before


def test_the_phases_are_startup_steps_and_shutdown() -> None:
    assert footprint.PHASES == ("startup", "steps", "shutdown")
    footprint.phase("steps")
    footprint.phase("shutdown")
    assert footprint.current_phase() == "shutdown"
    footprint.phase("steps")  # a sweep of captures in one process enters steps again
    assert footprint.current_phase() == "steps"


def test_a_region_may_be_entered_at_start_up_and_in_shutdown() -> None:
    with footprint.region("warm"):  # a warm-up through the step code
        assert footprint.open_regions() == ("warm",)
    footprint.phase("steps")
    footprint.enter_region("sample_s")
    footprint.phase("shutdown")  # a region closed after the steps end exits cleanly
    footprint.exit_region("sample_s")
    with footprint.region("drain"):
        assert footprint.open_regions() == ("drain",)
    assert footprint.open_regions() == ()


def test_a_region_exited_out_of_order_is_an_error() -> None:
    footprint.enter_region("a")
    with pytest.raises(footprint.RegionError, match="innermost open region is a"):
        footprint.exit_region("b")
    footprint.exit_region("a")


def test_recording_is_false_when_no_footprint_is_recorded() -> None:
    assert footprint.recording() is False
