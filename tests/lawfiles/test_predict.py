"""Law.predict: vectorised evaluation, scalars without numpy, and the domain warning or mask."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lawkit.errors import CaptureError, LawkitError
from lawkit.lawfiles.lawfile import Law, load
from lawkit.lawfiles.predict import LawDomainError, LawDomainWarning
from testing.samples import GOOD

TERMS = {"1": 2.1e-3, "num_seqs": 1.2e-4, "num_tokens": 3.1e-8, "num_seqs:max_context": 1.0e-12}
DOMAIN = {"num_seqs": [1.0, 256.0], "num_tokens": [1.0, 16384.0], "max_context": [128.0, 131072.0]}


def _law(**extra: object) -> Law:
    return Law.model_validate({"name": "prefill", "target": "host_s", "terms": TERMS,
                               "domain": DOMAIN, **extra})


def _by_hand(num_seqs: float, num_tokens: float, max_context: float) -> float:
    return (2.1e-3 + 1.2e-4 * num_seqs + 3.1e-8 * num_tokens
            + 1.0e-12 * num_seqs * max_context)


def _columns(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {"num_seqs": rng.integers(1, 257, n).astype(np.float64),
            "num_tokens": rng.integers(1, 16385, n).astype(np.float64),
            "max_context": rng.integers(128, 131073, n).astype(np.float64)}


def test_a_mapping_of_scalars_gives_one_float_computed_as_the_terms_say() -> None:
    got = _law().predict({"num_seqs": 4, "num_tokens": 900, "max_context": 4096.0})
    assert isinstance(got, float)
    assert got == pytest.approx(_by_hand(4, 900, 4096), rel=1e-15)


def test_a_dataframe_and_a_mapping_of_arrays_agree_with_the_design_matrix_product() -> None:
    columns = _columns(200_003)  # not a multiple of the block size: the last block is short
    design = np.column_stack([np.ones(200_003), columns["num_seqs"], columns["num_tokens"],
                              columns["num_seqs"] * columns["max_context"]])
    expected = design @ np.array(list(TERMS.values()))
    law = _law()
    for data in (pd.DataFrame(columns), columns):
        got = law.predict(data)
        assert got.dtype == np.float64 and got.shape == (200_003,)
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 256), st.integers(1, 16384), st.integers(128, 131072)),
                min_size=1, max_size=40))
def test_each_row_of_an_array_prediction_is_the_scalar_prediction_of_that_row(
        rows: list[tuple[int, int, int]]) -> None:
    law = _law()
    frame = pd.DataFrame(rows, columns=["num_seqs", "num_tokens", "max_context"])
    got = law.predict(frame)
    for i, (s, t, c) in enumerate(rows):
        one = law.predict({"num_seqs": s, "num_tokens": t, "max_context": c})
        assert got[i] == pytest.approx(one, rel=1e-14)


_TERMS = ["1", "a", "b", "a:b", "step(a,0.5)", "hinge(b,-1)", "a:step(a,0.5)",
          "b:hinge(b,-1):a"]


@settings(max_examples=20, deadline=None)
@given(st.permutations(_TERMS).flatmap(lambda order: st.tuples(
    st.integers(1, len(order)).map(lambda k: order[:k]),
    st.lists(st.sampled_from([-0.0, 0.0, 1.5, -2.25, 3.1e-8]), min_size=len(order),
             max_size=len(order)))), st.booleans())
def test_every_row_across_a_block_boundary_is_the_compiled_forms_value_to_the_last_bit(
        law_terms: tuple[list[str], list[float]], b_is_one_value: bool) -> None:
    # Terms in any order (the intercept anywhere or nowhere), a step or hinge factor read by
    # several terms, signed zeros, and a column given as one value for every row.
    from lawkit.lawfiles.predict import _BLOCK

    names, coefs = law_terms
    law = Law(name="x", target="t", terms=dict(zip(names, coefs, strict=False)))
    n = _BLOCK + 3
    rng = np.random.default_rng(len(names))
    data = {"a": rng.normal(size=n), "b": np.float64(-0.25) if b_is_one_value else
            rng.normal(size=n)}
    got = law.predict(data)
    row_law = law.compile()
    for i in [0, 1, _BLOCK - 1, _BLOCK, _BLOCK + 1, n - 1, *rng.integers(0, n, 30)]:
        row = {"a": float(data["a"][i]), "b": float(np.broadcast_to(data["b"], n)[i])}
        want = row_law(row)
        assert (got[i], math.copysign(1, got[i])) == (want, math.copysign(1, want)), i


def test_scalars_broadcast_against_arrays() -> None:
    got = _law().predict({"num_seqs": np.array([1, 2, 3]), "num_tokens": 100,
                          "max_context": 1024.0})
    assert got == pytest.approx([_by_hand(s, 100, 1024) for s in (1, 2, 3)])


def test_integer_columns_are_priced_as_floats() -> None:
    law = Law(name="x", target="t", terms={"a:b": 0.5})
    big = np.array([2**40, 3], dtype=np.int64)
    np.testing.assert_array_equal(law.predict({"a": big, "b": big}), 0.5 * big.astype(float) ** 2)


def test_an_intercept_only_law_gives_one_value_per_row() -> None:
    law = Law(name="x", target="t", terms={"1": 0.25})
    np.testing.assert_array_equal(law.predict(pd.DataFrame({"a": [1, 2, 3]})), [0.25] * 3)
    assert law.predict({}) == 0.25


def test_an_empty_frame_gives_an_empty_array_and_no_warning() -> None:
    got = _law().predict(pd.DataFrame({k: pd.Series([], dtype=float) for k in DOMAIN}))
    assert got.shape == (0,)


def test_a_missing_column_raises_a_key_error_naming_it_and_the_law() -> None:
    with pytest.raises(KeyError) as info:
        _law().predict({"num_seqs": 4, "num_tokens": 9})
    assert str(info.value) == ("law 'prefill' needs column 'max_context', which the data does "
                               "not hold")
    assert isinstance(info.value, LawkitError)
    with pytest.raises(KeyError, match="max_context"):
        _law().predict(pd.DataFrame({"num_seqs": [4], "num_tokens": [9]}))


def test_a_text_column_is_refused_with_its_name() -> None:
    with pytest.raises(CaptureError, match="column 'num_seqs' holds object values, not numbers"):
        _law().predict(pd.DataFrame({"num_seqs": ["4"], "num_tokens": [9], "max_context": [1]}))


def test_rows_outside_the_domain_are_predicted_and_warned_about_at_the_callers_line() -> None:
    frame = pd.DataFrame({"num_seqs": [4, 300, 512], "num_tokens": [9, 9, 0],
                          "max_context": [4096] * 3})
    with pytest.warns(LawDomainWarning) as caught:
        got = _law().predict(frame)
    assert str(caught[0].message) == ("law 'prefill': 2 of 3 rows are outside its domain "
                                      "(num_seqs 512 > 256; num_tokens 0 < 1)")
    assert caught[0].filename == __file__
    assert got[1] == pytest.approx(_by_hand(300, 9, 4096))


def test_one_scalar_row_outside_the_domain_warns_in_the_singular() -> None:
    with pytest.warns(LawDomainWarning, match=r"the row is outside its domain \(num_seqs 0 < 1\)"):
        _law().predict({"num_seqs": 0, "num_tokens": 9, "max_context": 4096})


def test_on_domain_mask_returns_the_rows_outside_instead_of_warning() -> None:
    data = {"num_seqs": np.array([4.0, 300.0, np.nan]), "num_tokens": np.array([9, 9, 9]),
            "max_context": np.array([4096, 4096, 4096])}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values, outside = _law().predict(data, on_domain="mask")
        assert outside.tolist() == [False, True, True]  # NaN is outside every range
        assert values.shape == (3,)
        value, one = _law().predict({"num_seqs": 300, "num_tokens": 9, "max_context": 1},
                                    on_domain="mask")
        assert one is True and isinstance(value, float)
        _law().predict(data, on_domain="ignore")


def test_on_domain_raise_raises_with_the_same_message() -> None:
    with pytest.raises(LawDomainError, match="num_seqs 300 > 256"):
        _law().predict({"num_seqs": 300, "num_tokens": 9, "max_context": 4096}, on_domain="raise")


def test_an_unknown_on_domain_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="on_domain must be one of"):
        _law().predict({"num_seqs": 3}, on_domain="loud")  # type: ignore[call-overload]


def test_rows_the_laws_where_does_not_select_are_outside_it_when_the_data_says_so() -> None:
    law = _law(where={"phase": "prefill"}, filter="num_seqs <= 128")
    frame = pd.DataFrame({"phase": ["prefill", "decode", "prefill"], "num_seqs": [4, 4, 200],
                          "num_tokens": [9, 9, 9], "max_context": [4096] * 3})
    _, outside = law.predict(frame, on_domain="mask")
    assert outside.tolist() == [False, True, True]
    with pytest.warns(LawDomainWarning, match=r'2 not selected by phase == "prefill" and '
                      r"\(num_seqs <= 128\)"):
        law.predict(frame)
    # Without the where columns the caller picked the law: nothing to check.
    _, outside = law.predict(frame.drop(columns="phase"), on_domain="mask")
    assert outside.tolist() == [False, False, True]
    with pytest.warns(LawDomainWarning, match='not selected by phase == "prefill"'):
        law.predict({"phase": "decode", "num_seqs": 4, "num_tokens": 9, "max_context": 4096})


def test_a_loaded_law_file_predicts_through_lawfile_law(tmp_path: Path) -> None:
    (tmp_path / "laws.yaml").write_text(GOOD)
    law = load(tmp_path / "laws.yaml").law("prefill")
    got = law.predict({"phase": "prefill", "num_seqs": 4, "num_tokens": 900,
                       "max_context": 4096})
    assert got == pytest.approx(_by_hand(4, 900, 4096))
