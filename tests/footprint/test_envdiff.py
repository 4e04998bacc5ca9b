"""What differs between a recorded environment and a target: each distribution that ran, and
the Python; and the report line of each difference."""

from __future__ import annotations

import pytest

from lawkit.footprint.envdiff import EnvChange, change_line, compare
from lawkit.footprint.environment import (
    DistInfo,
    Environment,
    Pin,
    PythonBuild,
    Target,
    same_version,
)

PY = PythonBuild("3.12.3", "cpython", "", False)


def _recorded(*dists: DistInfo, python: PythonBuild = PY) -> Environment:
    return Environment(python, {d.name: d for d in dists})


def _lock(**pins: Pin) -> Target:
    return Target("uv.lock", None, pins)


def _kinds(changes: list[EnvChange]) -> list[tuple[str, str, str, str | None]]:
    return [(c.name, c.kind, c.old, c.new) for c in changes]


def test_a_version_bump_absence_and_ambiguity_are_changes_an_equal_pin_is_not() -> None:
    recorded = _recorded(DistInfo("torch", "2.11.0"), DistInfo("numpy", "2.1"),
                         DistInfo("triton", "3.5.0"), DistInfo("attrs", "24.2.0"),
                         DistInfo("regex", "2024.1"))
    target = _lock(torch=Pin(("2.12.0",)), numpy=Pin(("2.1.0",)),
                   attrs=Pin(("24.2.0", "24.3.0")), regex=Pin((), exact=False))
    assert _kinds(compare(recorded, target)) == [
        ("attrs", "ambiguous", "24.2.0", None), ("regex", "ambiguous", "2024.1", None),
        ("torch", "version", "2.11.0", "2.12.0"), ("triton", "absent", "3.5.0", None)]


def test_a_distribution_that_did_not_run_is_not_compared() -> None:
    """The recorded environment lists only what ran: a bumped beta it lacks is no change."""
    target = _lock(alpha=Pin(("1.0",)), beta=Pin(("2.0",)))
    assert compare(_recorded(DistInfo("alpha", "1.0")), target) == []


def test_an_editable_install_judged_by_version_counts_as_changed_at_the_same_version() -> None:
    recorded = _recorded(DistInfo("mylib", "0.3", install="editable", source="file:///src/mylib"))
    installed = DistInfo("mylib", "0.3", install="editable", source="file:///src/mylib")
    current = Target("current", PY, {"mylib": Pin(("0.3",), installed=installed,
                                                  source="editable")})
    [change] = compare(recorded, current)
    assert (change.kind, change.url) == ("install", "file:///src/mylib")
    assert change.describe() == ("mylib 0.3 (installed editable from file:///src/mylib: its "
                                 "code may differ at one version)")


@pytest.mark.parametrize("source", ["vcs", "directory", "archive", ""])
def test_a_lock_source_other_than_an_index_is_a_change_at_the_recorded_version(
        source: str) -> None:
    """Issue 39, case 2: a pylock vcs or directory source, a uv.lock git source."""
    [change] = compare(_recorded(DistInfo("six", "1.17.0")),
                       _lock(six=Pin(("1.17.0",), source=source)))
    assert (change.kind, change.url) == ("source", source or "unnamed")
    assert "its code may differ at one version" in change.describe()


def test_a_direct_url_install_is_unchanged_only_where_the_same_record_is_installed() -> None:
    wheel = "file:///wheels/mylib-0.3-py3-none-any.whl"
    recorded = _recorded(DistInfo("mylib", "0.3", record="aa", install="archive", source=wheel))
    same = Target("current", PY, {"mylib": Pin(("0.3",), installed=DistInfo(
        "mylib", "0.3", record="aa", install="archive", source=wheel), source="archive")})
    rebuilt = Target("current", PY, {"mylib": Pin(("0.3",), installed=DistInfo(
        "mylib", "0.3", record="bb", install="archive", source=wheel), source="archive")})
    assert compare(recorded, same) == []
    assert _kinds(compare(recorded, rebuilt)) == [("mylib", "install", "0.3", "0.3")]
    assert _kinds(compare(recorded, _lock(mylib=Pin(("0.3",))))) == \
        [("mylib", "install", "0.3", "0.3")]


@pytest.mark.parametrize("other", [
    PythonBuild("3.12.4", "cpython", "", False),
    PythonBuild("3.12.3", "pypy", "", False),
    PythonBuild("3.12.3", "cpython", "d", False),
    PythonBuild("3.12.3", "cpython", "t", True),
])
def test_a_python_that_differs_in_any_way_is_a_change(other: PythonBuild) -> None:
    current = Target("current", other, {})
    assert _kinds(compare(_recorded(), current)) == \
        [("python", "python", PY.describe(), other.describe())]


def test_a_lock_file_compares_no_python_unless_an_exact_one_is_given() -> None:
    assert compare(_recorded(), _lock()) == []
    assert _kinds(compare(_recorded(), _lock(), python="3.13.1")) == \
        [("python", "python", "3.12.3", "3.13.1")]
    assert compare(_recorded(), _lock(), python="3.12.3") == []
    assert compare(_recorded(), Target("current", PY, {})) == []


def test_versions_compare_as_pep_440_says() -> None:
    assert same_version("2.1", "2.1.0") and same_version("2.1", "v2.1.0")
    assert same_version("1.0rc1", "1.0c1") and same_version("1.0rc1", "1.0-rc.1")
    assert same_version("1.0-1", "1.0.post1")
    assert same_version("1.0.dev", "1.0.dev0")
    assert same_version("2.1+CU121", "2.1.0+cu121")
    assert not same_version("2.1+cu121", "2.1")
    assert not same_version("2.1rc1", "2.1")
    assert same_version("Not A Version", "not a version")


def test_the_report_line_names_the_distribution_versions_phases_and_regions() -> None:
    bump = EnvChange("torch", "version", "2.11.0", "2.12.0")
    assert change_line(bump, ("steps",), ("sample_s", "schedule_s")) == \
        "changed  dist torch 2.11.0 -> 2.12.0  ran in steps (regions sample_s, schedule_s)"
    assert change_line(bump, ("startup",)) == \
        "changed  dist torch 2.11.0 -> 2.12.0  ran at start-up"
    assert change_line(EnvChange("triton", "absent", "3.5.0", None), ("startup", "steps"),
                       ("*",)) == \
        "changed  dist triton 3.5.0 -> absent  ran at start-up and in steps (regions *)"
    ambiguous = EnvChange("attrs", "ambiguous", "24.2.0", None, ("24.2.0", "24.3.0"))
    assert change_line(ambiguous, ("steps",), ("sample_s",)) == (
        "changed  dist attrs 24.2.0 -> 24.2.0 or 24.3.0 (ambiguous: pin one version)  ran in "
        "steps (regions sample_s)")
    python = EnvChange("python", "python", "cpython 3.12.3", "cpython 3.13.1")
    assert change_line(python) == \
        "changed  python cpython 3.12.3 -> cpython 3.13.1  counts as steps for every law"
    assert bump.to_json() == {"name": "torch", "kind": "version", "old": "2.11.0",
                              "new": "2.12.0", "allowed": [], "url": None, "install": None}
