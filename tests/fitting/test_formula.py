"""Formulas: the terms a law keeps, in the order written, and errors that name the formula."""

from __future__ import annotations

import pytest

from lawkit.errors import FitError
from lawkit.fitting.formula import Formula, formula_of, parse_formula


@pytest.mark.parametrize(("text", "target", "terms"), [
    ("host_s ~ 1 + num_seqs", "host_s", ("1", "num_seqs")),
    ("y ~ 1 + a + b + a:b", "y", ("1", "a", "b", "a:b")),
    ("y ~ a + b", "y", ("1", "a", "b")),
    ("y ~ a - 1", "y", ("a",)),
    ("y ~ 0 + a + b", "y", ("a", "b")),
    ("y ~ a + b + 0", "y", ("a", "b")),
    ("y ~ b + 1 + a", "y", ("b", "1", "a")),
    ("y~a:b:c", "y", ("1", "a:b:c")),
    ("  y  ~  x.mean  ", "y", ("1", "x.mean")),
    ("y ~ a - 0", "y", ("a", "1")),
])
def test_parse_formula_keeps_terms_in_the_order_written(text: str, target: str,
                                                        terms: tuple[str, ...]) -> None:
    formula = parse_formula(text)
    assert formula.target == target
    assert formula.terms == terms
    assert formula.text == text


def test_columns_are_the_features_in_first_use_order() -> None:
    formula = parse_formula("y ~ 1 + b:a + a + c")
    assert formula.columns() == ["b", "a", "c"]
    assert formula.intercept


def test_str_of_a_formula_parses_back_to_the_same_terms() -> None:
    for text in ("y ~ a - 1", "y ~ 1 + a:b", "y ~ 0 + a + b"):
        formula = parse_formula(text)
        assert parse_formula(str(formula)).terms == formula.terms


def test_formula_of_a_law_uses_its_terms_as_they_are() -> None:
    assert formula_of("y", ["a", "1"]) == Formula("y", ("a", "1"), "y ~ a + 1")
    assert formula_of("y", ["a"]).terms == ("a",)
    assert parse_formula(formula_of("y", ["a"]).text).terms == ("a",)


@pytest.mark.parametrize(("text", "message"), [
    ("", "empty"),
    ("y", "expected '~'"),
    ("y ~", "no terms after '~'"),
    ("y ~ a +", "ends too early"),
    ("y ~ a b", "expected '+' or '-' before 'b'"),
    ("y ~ a*b", "write a*b as a + b + a:b"),
    ("y ~ a + a", "repeats the term 'a'"),
    ("y ~ a:b + b:a", "repeats the term 'a:b'"),
    ("y ~ a:a", "repeats a factor"),
    ("y ~ y + a", "the target 'y' cannot be a term"),
    ("y ~ 2 + a", "must be 1 (the intercept) or 0"),
    ("y ~ 0", "no terms left"),
    ("y ~ 1 + a - 1", "both keeps and drops the intercept"),
    ("y ~ a - b", "only the intercept can be removed"),
    ("y ~ -1 + a", "cannot start with '-'"),
    ("~ a", "expected the target column first"),
    ("y ~ a:", "ends too early"),
    ("y ~ log(a)", "unexpected character '('"),
    ("host_s = 1 + num_seqs", "unexpected character '=' at character 8 (a formula is TARGET ~ "
     "TERMS: write '~'"),
])
def test_a_bad_formula_is_an_error_naming_it(text: str, message: str) -> None:
    with pytest.raises(FitError) as info:
        parse_formula(text)
    assert f"formula {text!r}" in str(info.value)
    assert message in str(info.value)
