"""The recorder's cost, estimated from its event counts against the regions' captured time."""

from __future__ import annotations

from lawkit.footprint.cost import CALLBACK_NS, record_cost


def test_a_region_past_five_percent_gets_one_warning_naming_the_polling_thread_and_the_remedy(
) -> None:
    # 40,000 callbacks in sample_s against 0.2 s captured; schedule_s fired almost nothing
    cost = record_cost({"sample_s": {"PY_START": 39_000, "PY_RESUME": 1_000},
                        "schedule_s": {"PY_START": 12}},
                       {"sample_s": ["MainThread"]}, {"sample_s": 0.2, "schedule_s": 0.5})
    sample = cost.regions[0]
    assert (sample.region, sample.callbacks, sample.threads) == ("sample_s", 40_000,
                                                                  ("MainThread",))
    assert sample.share == 40_000 * CALLBACK_NS / 1e9 / 0.2 < 1
    warning = cost.warning()
    assert warning is not None and "\n" not in warning
    assert f"recording took about {sample.share:.0%} of sample_s's time in the captures " \
        "(estimated from its callbacks)" in warning
    assert "thread MainThread kept region sample_s's code armed: it polls instead of blocking" \
        in warning
    assert "blocking; make it wait in one of threading's waits (queue.Queue.get" in warning
    assert "schedule_s" not in warning
    assert cost.lines()[0].startswith("recorder cost: sample_s: 40,000 callbacks in steps "
                                      "(code kept armed by MainThread), about ")


def test_a_cheap_recording_and_one_without_captures_warn_of_nothing() -> None:
    cheap = record_cost({"sample_s": {"PY_START": 10}}, {}, {"sample_s": 0.2})
    assert cheap.warning() is None and cheap.regions[0].share is not None
    uncaptured = record_cost({"sample_s": {"PY_START": 10**7}}, {"sample_s": ["poller"]}, {})
    assert uncaptured.warning() is None
    assert uncaptured.lines() == [
        "recorder cost: sample_s: 10,000,000 callbacks in steps (code kept armed by poller), "
        f"about {10**7 * CALLBACK_NS / 1e6:.3g} ms (no capture of the run timed it)"]


def test_a_costly_region_no_thread_kept_armed_names_the_callbacks_instead() -> None:
    warning = record_cost({"update_s": {"PY_START": 10**6}}, {}, {"update_s": 0.1}).warning()
    assert warning is not None and "1,000,000 callbacks in steps" in warning
    assert "polls" not in warning


def test_an_estimate_past_the_regions_whole_time_says_all_of_it() -> None:
    cost = record_cost({"sample_s": {"PY_START": 10**7}}, {"sample_s": ["poller"]},
                       {"sample_s": 0.01})
    warning = cost.warning()
    assert warning is not None and "recording took about all of sample_s's time" in warning
    assert cost.lines()[0].endswith(" of its 10 ms in the captures (all)")


def test_a_few_first_callbacks_in_a_short_run_warn_of_nothing_and_threads_read_as_a_list(
) -> None:
    # 8 callbacks (16 us) against 40 us of captured time: a share, but nothing a capture feels
    few = record_cost({"schedule_s": {"PY_START": 8}}, {"schedule_s": ["a", "b", "c"]},
                      {"schedule_s": 40e-6})
    assert (few.regions[0].share or 0) > 0.05 and few.warning() is None
    many = record_cost({"schedule_s": {"PY_START": 10**5}}, {"schedule_s": ["a", "b", "c"]},
                       {"schedule_s": 1.0})
    warning = many.warning()
    assert warning is not None
    assert "threads a, b and c kept region schedule_s's code armed: they poll" in warning
