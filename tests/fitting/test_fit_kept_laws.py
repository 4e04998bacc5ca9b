"""A fit that keeps laws of its file and moves the file's key re-keys them explicitly, through
`lawkit.fit` as through `lawkit fit` (docs/commands.md, `--why`, `--require`)."""

from __future__ import annotations

from pathlib import Path

import pytest

import lawkit
from lawkit.errors import LawkitError, RefusalError
from lawkit.lawfiles import lawfile

DATA = Path(__file__).resolve().parents[1] / "data" / "sarathi-a100" / "cpu_overheads.csv"
OLD, NEW = "59e9ff5a", "68ad8fc6"


@pytest.fixture
def fitted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A law file of one law, fitted on OLD with no footprint."""
    (tmp_path / "lawkit.toml").write_text('laws = "."\n')
    monkeypatch.chdir(tmp_path)
    lawkit.fit(DATA, out="a.yaml", formula="schedule_median ~ 1 + batch_size", captured_on=OLD)
    return tmp_path / "a.yaml"


def refit(**options: str) -> lawkit.FitReport:
    return lawkit.fit(DATA, out="a.yaml", formula="sampler_e2e_median ~ batch_size",
                      captured_on=NEW, **options)  # type: ignore[arg-type]


def test_without_why_it_is_refused_naming_the_kept_law_and_the_digests(fitted: Path) -> None:
    before = fitted.read_bytes()
    with pytest.raises(RefusalError, match=f"keeps 1 law of the file \\(schedule_median\\), "
                       f"keyed to atom={OLD}, and moves its key to atom={NEW}"):
        refit()
    assert fitted.read_bytes() == before


def test_a_fit_that_keeps_the_key_needs_no_why(fitted: Path) -> None:
    report = lawkit.fit(DATA, out="a.yaml", formula="sampler_e2e_median ~ batch_size",
                        captured_on=OLD)
    assert report.rekey is None
    entries = lawfile.load(fitted).host.provenance
    assert [e.kind for e in entries] == ["fit", "fit"]
    assert entries[1].fit is not None and entries[1].fit.laws == ["sampler_e2e_median"]


def test_with_why_a_rekey_entry_names_the_kept_laws_with_their_verdicts(fitted: Path) -> None:
    report = refit(why="the sampler law is new")
    assert report.rekey is not None and report.rekey["laws"] == ["schedule_median"]
    assert [(v.name, v.verdict) for v in report.kept_verdicts] == [("schedule_median",
                                                                    "unknown")]
    assert report.lines()[-2:] == [f"re-keyed 1 kept law: {OLD} -> {NEW}",
                                   "  a.yaml  schedule_median (schedule_median)  unknown"]
    law_file = lawfile.load(fitted)
    assert [e.kind for e in law_file.host.provenance] == ["fit", "fit", "rekey"]
    rekey = law_file.host.provenance[2].rekey
    assert rekey is not None
    assert (rekey.from_, rekey.to, rekey.why, rekey.laws) == (OLD, NEW, "the sampler law is new",
                                                             ["schedule_median"])


def test_require_untouched_refuses_a_kept_law_without_a_footprint(fitted: Path) -> None:
    before = fitted.read_bytes()
    with pytest.raises(RefusalError, match="--require untouched: 1 kept law not untouched: "
                       "schedule_median \\(schedule_median\\) unknown"):
        refit(why="w", require="untouched")
    assert fitted.read_bytes() == before


@pytest.mark.parametrize(("options", "message"), [
    ({"why": " "}, "--why: must not be empty"),
    ({"why": "two\nlines"}, "--why: one line of printable text"),
    ({"why": "w", "require": "steps"}, "--require 'steps': expected one of untouched")])
def test_a_bad_why_or_require_is_an_error(fitted: Path, options: dict[str, str],
                                          message: str) -> None:
    with pytest.raises(LawkitError, match=message):
        refit(**options)


def test_a_capture_outside_the_workspace_is_recorded_by_its_absolute_path(
        fitted: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """It was recorded as its bare file name, which names nothing anyone can find again."""
    outside = tmp_path_factory.mktemp("elsewhere") / "cpu_overheads.csv"
    outside.write_bytes(DATA.read_bytes())
    lawkit.fit(outside, out="a.yaml", formula="sampler_e2e_median ~ batch_size",
               captured_on=OLD)
    entry = lawfile.load(fitted).host.provenance[-1].fit
    assert entry is not None
    assert [c["path"] for c in entry.captures] == [outside.as_posix()]
