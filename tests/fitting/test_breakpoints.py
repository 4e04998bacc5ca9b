"""`K = auto`: the breakpoint search recovers a known step and hinge, never
puts K where fewer than two distinct values lie on one side, is searched again on a refit; and
a `--where` on a factor column bounds the domain instead of selecting the law's rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lawkit
from lawkit.errors import FitError
from lawkit.fitting.breakpoints import MAX_CANDIDATES, candidates
from testing.workspaces import make_fit_folder

BS = np.arange(8, 129, 8).astype(float)  # the step sits between 56 and 64: K = 60
TOKENS = np.arange(1024, 8193, 512).astype(float)  # the hinge between 4096 and 4608: K = 4352


def _workspace(root: Path, *, jump_after: float = 60.0, noise: float = 1e-7) -> Path:
    make_fit_folder(root, {"atom/__init__.py": b"x = 1\n"})
    bs, tokens = (a.ravel() for a in np.meshgrid(BS, TOKENS))
    rng = np.random.default_rng(1)
    host = (0.002 + 1e-5 * bs + 4e-4 * (bs > jump_after) + 2e-7 * np.maximum(0, tokens - 4352)
            + rng.normal(0, noise, bs.size))
    pd.DataFrame({"batch_size": bs, "num_tokens": tokens, "sampler_s": host}).to_csv(
        root / "caps.csv", index=False)
    return root


def _fit(root: Path, formula: str | None, **options: object) -> lawkit.Law:
    lawkit.fit(root / "caps.csv", out=root / "laws" / "s.yaml", captured_on="current",
               formula=formula or (), workspace=root, **options)  # type: ignore[arg-type]
    return lawkit.load(root / "laws" / "s.yaml").host.laws[0]


@pytest.mark.parametrize("method", ["ols", "huber", "robust", "nnls"])
def test_auto_recovers_a_known_step_and_hinge_and_their_coefficients(tmp_path: Path,
                                                                     method: str) -> None:
    root = _workspace(tmp_path)
    law = _fit(root, "sampler_s ~ 1 + batch_size + step(batch_size,auto) + "
                     "hinge(num_tokens,auto)", method=method)
    assert list(law.terms) == ["1", "batch_size", "step(batch_size,60)",
                               "hinge(num_tokens,4352)"]
    assert law.terms["step(batch_size,60)"] == pytest.approx(4e-4, rel=1e-3)
    assert law.terms["hinge(num_tokens,4352)"] == pytest.approx(2e-7, rel=1e-3)
    assert law.terms["batch_size"] == pytest.approx(1e-5, rel=1e-2)
    assert law.fit is not None
    assert law.fit["breakpoints"] == {"step(batch_size,60)": "step(batch_size,auto)",
                                      "hinge(num_tokens,4352)": "hinge(num_tokens,auto)"}


def test_fit_reports_each_chosen_k_and_the_objective_with_and_without_it(
        tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    report = lawkit.fit(root / "caps.csv", out=root / "laws" / "s.yaml", captured_on="current",
                        formula="sampler_s ~ 1 + batch_size + step(batch_size,auto) + "
                                "hinge(num_tokens,4352)", workspace=root, write=False)
    lines = report.lines()
    (line,) = [x for x in lines if "->" in x]
    assert line.startswith("  step(batch_size,auto) -> step(batch_size,60) (sum of squares ")
    (choice,) = report.laws[0].search.choices  # type: ignore[union-attr]
    assert choice.knot == 60.0 and choice.candidates == len(BS) - 3
    assert choice.objective < choice.without / 10


def test_a_product_with_an_auto_factor_is_searched_and_stored_under_its_product(
        tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    law = _fit(root, "sampler_s ~ 1 + batch_size + num_tokens:step(batch_size,auto)")
    assert "num_tokens:step(batch_size,60)" not in law.terms or law.fit is not None
    assert law.fit is not None
    (stored,) = law.fit["breakpoints"]
    assert stored.startswith("num_tokens:step(batch_size,")
    assert law.fit["breakpoints"][stored] == "num_tokens:step(batch_size,auto)"


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(allow_nan=False, allow_infinity=False), max_size=600, unique=True))
def test_auto_never_puts_k_where_fewer_than_two_distinct_values_lie_on_one_side(
        values: list[float]) -> None:
    distinct = np.unique(np.asarray(values, dtype=np.float64))
    found = candidates(distinct)
    assert len(found) <= MAX_CANDIDATES
    for k in found:
        assert np.count_nonzero(distinct <= k) >= 2  # step(COL,K) is 0 where COL <= K
        assert np.count_nonzero(distinct > k) >= 2
    if len(distinct) >= 4:
        assert len(found) == min(len(distinct) - 3, MAX_CANDIDATES)


def test_a_jump_after_the_first_value_is_placed_no_lower_than_the_second_midpoint(
        tmp_path: Path) -> None:
    root = _workspace(tmp_path, jump_after=12.0)  # between 8 and 16: too close to the edge
    law = _fit(root, "sampler_s ~ 1 + batch_size + step(batch_size,auto)")
    (term,) = [t for t in law.terms if t.startswith("step(")]
    assert term == "step(batch_size,20)"  # the lowest K with 8 and 16 below it


def test_auto_with_fewer_than_four_distinct_values_names_the_fix(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    with pytest.raises(FitError, match=r"3 distinct values of batch_size .* at least 4"):
        _fit(root, "sampler_s ~ 1 + batch_size + step(batch_size,auto)",
             where="batch_size <= 24")


def test_more_than_two_auto_factors_are_refused(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    with pytest.raises(FitError, match="at most 2 per formula"):
        _fit(root, "sampler_s ~ 1 + step(batch_size,auto) + hinge(batch_size,auto) + "
                   "hinge(num_tokens,auto)")


def test_a_refit_without_formula_searches_k_again(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    law = _fit(root, "sampler_s ~ 1 + batch_size + step(batch_size,auto)", method="robust")
    assert "step(batch_size,60)" in law.terms
    _workspace(tmp_path, jump_after=92.0)  # new captures: the jump moved to 88..96
    law = _fit(root, None)
    assert list(law.terms) == ["1", "batch_size", "step(batch_size,92)"]
    assert law.fit is not None and law.fit["method"] == "robust"
    assert law.fit["breakpoints"] == {"step(batch_size,92)": "step(batch_size,auto)"}


def test_a_where_on_a_factor_column_bounds_the_domain_and_scores_rows_beyond_as_outside(
        tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    report = lawkit.fit(root / "caps.csv", out=root / "laws" / "s.yaml", captured_on="current",
                        formula="sampler_s ~ 1 + batch_size", where="batch_size <= 64",
                        workspace=root)
    law = lawkit.load(root / "laws" / "s.yaml").host.laws[0]
    assert law.where is None and law.filter is None
    assert law.fit is not None and law.fit["bounds"] == "batch_size <= 64"
    fitted = int(np.count_nonzero(BS <= 64)) * len(TOKENS)
    assert law.fit["n"] == fitted and report.records == fitted
    assert law.domain == {"batch_size": [8.0, 64.0]}
    scored = lawkit.score(root / "laws" / "s.yaml", root / "caps.csv", workspace=root)
    (entry,) = scored.to_json()["laws"]
    assert entry["n"] == len(BS) * len(TOKENS)  # the law applies to every row...
    assert entry["outside_domain"] == pytest.approx(np.mean(BS > 64))  # ...beyond: outside
    # The bound is not part of what the law predicts: a refit selects the same rows again.
    lawkit.fit(root / "caps.csv", out=root / "laws" / "s.yaml", captured_on="current",
               workspace=root)
    again = lawkit.load(root / "laws" / "s.yaml").host.laws[0]
    assert again.fit is not None and again.fit["n"] == fitted
    assert again.fit["bounds"] == "batch_size <= 64"


def test_a_where_keeps_its_selection_and_bounds_only_the_factor_conditions(
        tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    law = _fit(root, "sampler_s ~ 1 + batch_size",
               where="num_tokens >= 2048 and batch_size > 16 and batch_size < 100")
    assert law.filter == "num_tokens >= 2048"
    assert law.fit is not None and law.fit["bounds"] == "batch_size > 16 and batch_size < 100"
