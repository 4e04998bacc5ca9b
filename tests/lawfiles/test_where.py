"""`--where`: parsing by hand (never eval), vectorised masks, and the where/filter split."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lawkit.errors import FitError
from lawkit.lawfiles.where import (
    format_where,
    law_columns,
    law_mask,
    mapping_expr,
    parse_where,
)

FRAME = pd.DataFrame({
    "model": ["a", "b", "c", "a", "Qwen/Qwen-72B"],
    "tp": [1, 2, 4, 4, 4],
    "x": [0.5, 1.5, 2.5, -1.0, 3.0],
    "ok": [True, False, True, True, False],
})


def mask(text: str, data: object = FRAME) -> list[bool]:
    return [bool(v) for v in parse_where(text).mask(data)]


@pytest.mark.parametrize(("text", "expected"), [
    ('model == "a"', [True, False, False, True, False]),
    ("model == 'a'", [True, False, False, True, False]),
    ('model != "a"', [False, True, True, False, True]),
    ("tp >= 2", [False, True, True, True, True]),
    ("tp < 2 or x > 2.9", [True, False, False, False, True]),
    ("tp == 4 and x > 0", [False, False, True, False, True]),
    ("not tp == 4", [True, True, False, False, False]),
    ("not (tp == 4 or model == 'b')", [True, False, False, False, False]),
    ("tp in [1, 2]", [True, True, False, False, False]),
    ("tp not in [1, 2]", [False, False, True, True, True]),
    ('model in ["Qwen/Qwen-72B", "c",]', [False, False, True, False, True]),
    ("x > -1e-3", [True, True, True, False, True]),
    ("x <= .5", [True, False, False, True, False]),
    ("ok == true", [True, False, True, True, False]),
    ("ok != true", [False, True, False, False, True]),
    ("`tp` == 4", [False, False, True, True, True]),
    ("4 == tp", [False, False, True, True, True]),
    ("x < tp", [True, True, True, True, True]),
    ("tp == 4.0", [False, False, True, True, True]),
    ("tp in []", [False] * 5),
    ("1 == 1", [True] * 5),
    ('tp == 1 or tp == 2 and model == "c"', [True, False, False, False, False]),
])
def test_mask_selects_the_rows_the_expression_says(text: str, expected: list[bool]) -> None:
    assert mask(text) == expected


def test_mask_works_on_a_mapping_of_numpy_arrays() -> None:
    data = {c: FRAME[c].to_numpy() for c in FRAME.columns}
    assert mask('model == "a" and tp == 4', data) == [False, False, False, True, False]
    data = {"model": np.array(["a", "b"]), "tp": np.array([1, 4])}
    assert mask("model in ['b'] and tp > 1", data) == [False, True]


@pytest.mark.parametrize(("text", "mapping"), [
    ('model == "a"', {"model": "a"}),
    ('model == "a" and tp == 4', {"model": "a", "tp": 4}),
    ("(tp in [1, 2]) and (model == 'x' and x == 0.5)", {"tp": [1, 2], "model": "x", "x": 0.5}),
    ("ok == false", {"ok": False}),
    ("tp == -3", {"tp": -3}),
    ("tp == 1 or tp == 2", None),
    ("tp != 1", None),
    ("tp > 1", None),
    ("4 == tp", None),
    ("tp == 1 and tp == 2", None),
    ("tp not in [1]", None),
    ("not tp == 1", None),
    ("tp == x", None),
])
def test_as_mapping_only_for_a_conjunction_of_equalities_and_memberships(
        text: str, mapping: dict[str, object] | None) -> None:
    assert parse_where(text).as_mapping() == mapping


def test_integers_stay_integers_and_strings_stay_strings() -> None:
    mapping = parse_where('tp == 4 and model == "4" and x == 4.0').as_mapping()
    assert mapping is not None
    assert [type(v) for v in mapping.values()] == [int, str, float]


def test_columns_lists_every_column_read_once_in_order() -> None:
    assert parse_where('tp == 1 or (model == "a" and tp < x)').columns() == ["tp", "model", "x"]


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"),
    ("tp = 4", "write == to compare"),
    ("tp == 4 && x > 1", "write and, or, not"),
    ('model == "a', "the quote is never closed"),
    ("tp < x < 5", "chained comparisons are not supported"),
    ("tp in [x]", "not the column 'x'"),
    ("tp in 4", "expected '[' after 'in'"),
    ("tp in [1 2]", "expected ',' or ']'"),
    ("tp >", "ends too early"),
    ("tp", "ends too early"),
    ("(tp == 1", "ends too early: expected ')'"),
    ("tp == 1)", "expected 'and', 'or' or the end"),
    ("__import__('os').system('true')", "unexpected '.'"),
    ("__import__('os')", "expected a comparison"),
    ("tp == 1 and", "ends too early"),
    ("tp == - x", "expected a number after '-'"),
    ("'a' in ['a']", "'in' needs a column on its left"),
    (r"model == 'a\q'", "unknown escape"),
    ("tp not 4", "expected 'in' after 'not'"),
])
def test_a_bad_expression_is_an_error_naming_it(text: str, message: str) -> None:
    with pytest.raises(FitError) as info:
        parse_where(text)
    assert f"where {text.strip()!r}" in str(info.value)
    assert message in str(info.value)


@pytest.mark.parametrize(("text", "message"), [
    ("model == 4", 'column model holds strings, compared with a number (did you mean "4"?)'),
    ('tp == "4"', "column tp holds numbers, compared with a string (did you mean 4?)"),
    ('tp in [1, "2"]', "column tp holds numbers, compared with a string"),
    ("nope == 1", "no column 'nope' in the captures"),
    ("ok < true", "true and false only compare with == and !="),
])
def test_a_type_clash_is_an_error_rather_than_an_empty_selection(text: str,
                                                                 message: str) -> None:
    with pytest.raises(FitError) as info:
        parse_where(text).mask(FRAME)
    assert f"where {text!r}: {message}" in str(info.value)


def test_the_parser_never_evaluates_python() -> None:
    import builtins

    calls: list[str] = []
    original = builtins.eval

    def spy(*args: object, **kwargs: object) -> object:
        calls.append("eval")
        return original(*args, **kwargs)  # type: ignore[arg-type]

    builtins.eval = spy
    try:
        mask('tp == 4 and model in ["a", "b"]')
    finally:
        builtins.eval = original
    assert calls == []


def test_law_mask_ands_the_where_mapping_and_the_filter() -> None:
    where = {"model": ["a", "c"], "tp": 4}
    got = law_mask(where, "x > 0", FRAME)
    assert got.tolist() == [False, False, True, False, False]
    assert law_mask(None, None, FRAME).tolist() == [True] * 5
    assert law_columns(where, "x > 0 or ok == true") == ["model", "tp", "x", "ok"]


def test_format_where_reads_back_as_the_same_selection() -> None:
    where = {"model": "Qwen/Qwen-72B", "tp": [2, 4]}
    text = format_where(where, "x > 1 or x < 0")
    assert text == 'model == "Qwen/Qwen-72B" and tp in [2, 4] and (x > 1 or x < 0)'
    assert parse_where(text).mask(FRAME).tolist() == law_mask(where, "x > 1 or x < 0",
                                                              FRAME).tolist()
    assert mapping_expr(where).as_mapping() == where


_literal = st.one_of(st.integers(-5, 5), st.sampled_from([0.5, -1.0, 2.5]))
_test = st.builds(lambda op, v: f"x {op} {v!r}", st.sampled_from(["==", "!=", "<", "<=", ">",
                                                                    ">="]), _literal) | \
    st.builds(lambda vs: f"tp in [{', '.join(map(repr, vs))}]", st.lists(_literal, max_size=3))


def _exprs() -> st.SearchStrategy[str]:
    return st.recursive(_test, lambda inner: st.one_of(
        st.builds(lambda a, b: f"({a}) and ({b})", inner, inner),
        st.builds(lambda a, b: f"({a}) or ({b})", inner, inner),
        st.builds(lambda a: f"not ({a})", inner)), max_leaves=6)


@settings(max_examples=200, deadline=None)
@given(_exprs())
def test_rendering_an_expression_gives_one_with_the_same_mask(text: str) -> None:
    expr = parse_where(text)
    rendered = expr._render()
    assert parse_where(rendered).mask(FRAME).tolist() == expr.mask(FRAME).tolist()
