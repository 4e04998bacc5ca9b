"""Fuzzing at CI size: every target of scripts/fuzz.py, a few hundred cases each.

A target may return or raise a LawkitError whose message is one printable line; anything else
fails here, and hypothesis shrinks it to a small input. The long run with counts per outcome is
`python scripts/fuzz.py --seconds N`. The regressions below are inputs the fuzzing found.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lawkit.errors import FitError, LawFileError, LawkitError
from lawkit.fitting.formula import parse_formula
from lawkit.lawfiles import lawfile, where
from testing.reliability import assert_one_line

REPO = Path(__file__).resolve().parents[2]
CASES = 300  # per target; a target whose case costs more gets fewer (Target.cost)
SLOWEST_S = 5.0  # a case slower than this is a hang for the purpose of CI


def _fuzz_module() -> Any:
    spec = importlib.util.spec_from_file_location("lawkit_fuzz", REPO / "scripts" / "fuzz.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["lawkit_fuzz"] = module
    spec.loader.exec_module(module)
    return module


fuzz = _fuzz_module()


@pytest.mark.parametrize("name", list(fuzz.TARGETS))
def test_a_fuzz_target_ends_in_a_result_or_a_one_line_lawkit_error(name: str) -> None:
    target = fuzz.TARGETS[name]
    outcomes: dict[str, int] = {}

    @settings(max_examples=max(20, int(CASES / target.cost)), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                     HealthCheck.filter_too_much])
    @given(target.strategy())
    def one(case: Any) -> None:
        start = time.perf_counter()
        try:
            target.run(case)
            outcome = "result"
        except LawkitError as exc:
            assert_one_line(str(exc))
            outcome = "LawkitError"
        assert time.perf_counter() - start < SLOWEST_S
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    one()
    assert sum(outcomes.values()) >= 20, outcomes


# -- what the fuzzing found -----------------------------------------------------------------


@pytest.mark.parametrize("raw", [b"!!int ", b"!!float ", b"x: !!int ''", b"x: !!float '-'",
                                 b"x: !!int abc", b"x: " + b"9" * 5000,
                                 b"x: !!int " + b"9" * 5000, b"x: !!float 1.x"])
def test_an_explicitly_tagged_scalar_that_does_not_read_is_a_law_file_error(raw: bytes) -> None:
    """Regression: `!!int ''` raised ValueError and `!!float ''` IndexError out of the loader,
    and an integer past Python's digit limit ValueError, instead of naming the line."""
    with pytest.raises(LawFileError, match=r"fuzz\.yaml:1: cannot read the value") as info:
        lawfile.parse(raw, "fuzz.yaml")
    assert_one_line(str(info.value))


@pytest.mark.parametrize("text", ["(" * 100_000 + "a == 1" + ")" * 100_000,
                                  "not " * 100_000 + "a == 1", "(" * 101 + "a == 1" + ")" * 101])
def test_deep_nesting_of_a_where_expression_is_a_fit_error(text: str) -> None:
    """Regression: a RecursionError at about 330 levels."""
    with pytest.raises(FitError, match="nested deeper than 100 levels") as info:
        where.parse_where(text)
    assert_one_line(str(info.value))
    assert len(str(info.value)) < 400


def test_a_hundred_levels_of_nesting_still_parse_and_evaluate() -> None:
    import numpy as np

    expr = where.parse_where("(" * 50 + "not " * 50 + "a == 1" + ")" * 50)
    assert expr.mask({"a": np.array([1, 2])}).tolist() == [True, False]


def test_an_integer_literal_past_the_digit_limit_is_a_fit_error() -> None:
    """Regression: ValueError from int() (Python's 4,300-digit limit)."""
    with pytest.raises(FitError, match="a number of 5000 digits is too long at character 6"):
        where.parse_where("a == " + "9" * 5000)


@pytest.mark.parametrize("op", ["<", "<=", ">", ">="])
def test_ordering_a_column_with_gaps_selects_nothing_there_instead_of_raising(op: str) -> None:
    """Regression: TypeError ('<' between None and str) from `lawkit score --where` over a
    capture whose label column has an empty cell, and from a filter in predict."""
    import numpy as np

    data = {"model": np.array(["a", None, "c", float("nan")], dtype=object),
            "tp": np.array([1, None, 4, float("nan")], dtype=object),
            "mixed": np.array(["a", 1, None, "c"], dtype=object),
            "n": np.array([1.0, 2.0, 3.0, 4.0])}
    before = op in ("<", "<=")
    assert where.parse_where(f'model {op} "b"').mask(data).tolist() == \
        [before, False, not before, False]
    assert where.parse_where(f"tp {op} 2").mask(data).tolist() == \
        [before, False, not before, False]
    assert where.parse_where(f"model {op} model").mask(data).tolist() == \
        [op in ("<=", ">="), False, op in ("<=", ">="), False]
    assert where.parse_where(f'mixed {op} "b"').mask(data).tolist() == \
        [before, False, False, not before]
    assert where.parse_where(f"n {op} 2.5").mask(data).tolist() == \
        [before, before, not before, not before]


def test_a_long_expression_is_quoted_short_in_its_error() -> None:
    with pytest.raises(FitError) as info:
        where.parse_where("a == 1 and " * 20_000 + "b ==")
    assert len(str(info.value)) < 400 and "ends too early" in str(info.value)
    with pytest.raises(FitError) as info:
        parse_formula("y ~ " + " + ".join(f"x{i}" for i in range(20_000)) + " * z")
    assert len(str(info.value)) < 400 and "unexpected character '*'" in str(info.value)


@given(st.text(max_size=40))
@settings(max_examples=200, deadline=None)
def test_any_law_file_message_is_one_line_whatever_value_it_quotes(value: str) -> None:
    text = fuzz._law_seeds()[1].decode().replace("schema: lawkit/1", "schema: " +
                                                  '"' + value.replace("\\", "\\\\")
                                                  .replace('"', '\\"') + '"')
    try:
        lawfile.parse(text.encode("utf-8", "surrogatepass"), "x.yaml")
    except LawkitError as exc:
        assert_one_line(str(exc))
