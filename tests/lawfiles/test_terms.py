"""The term grammar: step and hinge factors, canonical K, and one result on every path (scalar
predict, the compiled form, arrays, the fit's design), plus load(require="current")."""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import lawkit
from lawkit.config import load_workspace
from lawkit.errors import FitError, LawFileError
from lawkit.fitting.formula import design_matrix, parse_formula
from lawkit.keying.check import check_workspace
from lawkit.lawfiles.lawfile import Law, parse
from lawkit.lawfiles.lawwrite import flow_mapping
from lawkit.lawfiles.predict import LawDomainError, LawDomainWarning
from lawkit.lawfiles.terms import TERM_PATTERN, TermError, format_knot, parse_term
from testing.workspaces import make_fit_folder

DECODE = {"1": 1.9e-3, "batch_size": 2.2e-5, "num_tokens": 4.0e-8, "step(batch_size,60)": 3.5e-4,
          "batch_size:hinge(num_tokens,4096)": 1.0e-9}
DOMAIN = {"batch_size": [1.0, 128.0], "num_tokens": [1.0, 8192.0]}


def _law(**extra: object) -> Law:
    return Law.model_validate({"name": "decode", "target": "host_s", "terms": DECODE,
                               "where": {"phase": "decode"}, "domain": DOMAIN, **extra})


@pytest.mark.parametrize(("knot", "text"), [(60.0, "60"), (4096.5, "4096.5"), (1e16, "1e+16"),
                                            (-3.0, "-3"), (-0.0, "0"), (1e-05, "1e-05")])
def test_k_is_spelt_as_the_float_repr_without_a_trailing_point_zero(knot: float,
                                                                    text: str) -> None:
    assert format_knot(knot) == text
    assert parse_term(f"step(x,{text})").factors[0].knot == knot


@pytest.mark.parametrize(("term", "canonical"), [
    ("step(batch_size,60.0)", "step(batch_size,60)"),
    ("step(batch_size, 60)", "step(batch_size,60)"),
    ("hinge(x,1E16)", "hinge(x,1e+16)"),
    ("a:step(b,+4)", "a:step(b,4)"),
])
def test_any_other_spelling_of_a_term_is_an_error_naming_the_canonical_one(
        term: str, canonical: str) -> None:
    with pytest.raises(TermError, match=re.escape(f"write {canonical} ")):
        parse_term(term)
    with pytest.raises(Exception, match=re.escape(f"write {canonical} ")):
        _law(terms={"1": 1.0, term: 2.0})


@pytest.mark.parametrize("term", ["step(x,auto)", "step(x,nan)", "step(x,inf)", "step(x)",
                                  "step(x,1", "a:a", "log(x)"])
def test_a_term_outside_the_grammar_is_refused(term: str) -> None:
    with pytest.raises(TermError):
        parse_term(term)


def test_a_step_and_a_hinge_price_as_the_design_says_on_scalars_and_arrays() -> None:
    law = _law()
    row = {"phase": "decode", "batch_size": 70, "num_tokens": 5000.0}
    by_hand = (1.9e-3 + 2.2e-5 * 70 + 4.0e-8 * 5000 + 3.5e-4 * 1.0 + 1.0e-9 * 70 * (5000 - 4096))
    assert law.predict(row) == pytest.approx(by_hand, rel=1e-15)
    arrays = law.predict({"batch_size": np.array([70.0, 60.0]), "num_tokens": np.array(
        [5000.0, 4096.0])})
    assert arrays[0] == law.predict(row)
    assert arrays[1] == law.predict({"batch_size": 60.0, "num_tokens": 4096.0})
    assert law.columns() == ["batch_size", "num_tokens"]


finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(coefs=st.lists(finite, min_size=5, max_size=5),
       knots=st.tuples(st.floats(0, 200), st.floats(0, 9000)),
       batch=st.floats(1, 128), tokens=st.floats(1, 8192) | st.integers(1, 8192))
def test_predict_the_compiled_form_and_arrays_agree_to_the_last_bit(
        coefs: list[float], knots: tuple[float, float], batch: float, tokens: float) -> None:
    terms = ["1", "batch_size", "num_tokens", f"step(batch_size,{format_knot(knots[0])})",
             f"batch_size:hinge(num_tokens,{format_knot(knots[1])})"]
    law = _law(terms=dict(zip(terms, coefs, strict=True)))
    row = {"phase": "decode", "batch_size": batch, "num_tokens": tokens}
    value = law.predict(row)
    compiled = law.compile()(row)
    array = law.predict({k: np.asarray([v]) for k, v in row.items()})[0]
    assert math.copysign(1, value) == math.copysign(1, compiled) == math.copysign(1, array)
    assert value == compiled == array


def test_the_compiled_form_warns_raises_or_masks_as_predict_does() -> None:
    law = _law()
    outside = {"phase": "prefill", "batch_size": 200.0, "num_tokens": 10.0}
    with pytest.warns(LawDomainWarning, match=r"batch_size 200 > 128; not selected by") as got:
        law.compile()(outside)
    assert got[0].filename == __file__
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        law.predict(outside)
    assert str(seen[0].message) == str(got[0].message) and seen[0].filename == __file__
    with pytest.raises(LawDomainError):
        law.compile(on_domain="raise")(outside)
    assert law.compile(on_domain="mask")(outside) == (law.predict(outside, on_domain="ignore"),
                                                      True)
    with pytest.raises(FitError, match="column phase holds numbers"):
        law.compile()({"phase": 3, "batch_size": 2.0, "num_tokens": 10.0})
    with pytest.raises(KeyError, match="needs column 'num_tokens'"):
        law.compile()({"batch_size": 2.0})


def _file(laws: str) -> bytes:
    return f"schema: lawkit/1\nhost:\n  key: {{atom: \"abcd1234\"}}\n  laws:\n{laws}".encode()


def test_a_law_file_compiles_to_a_function_choosing_the_law_by_its_where() -> None:
    laws = "".join(f"    - name: d{m}\n      target: t\n      where: {{model: \"m{m}\"}}\n"
                   f"      terms: {{\"1\": {m}.5, \"step(x,2)\": 1.0}}\n" for m in range(3))
    law_file = parse(_file(laws), "x.yaml")
    choose = law_file.compile()
    assert choose({"model": "m2", "x": 3.0}) == 3.5 == law_file.law("d2").predict({"x": 3.0})
    assert choose({"model": "m0", "x": 1.0}) == 0.5
    with pytest.raises(LawDomainError, match="no law for t selects the row"):
        choose({"model": "m9", "x": 1.0})


def test_a_term_key_unquoted_in_a_flow_mapping_is_named_with_its_quoted_spelling() -> None:
    laws = "    - name: a\n      target: t\n      terms: {\"1\": 0.1, step(bs, 60.0): 0.5}\n"
    with pytest.raises(LawFileError) as info:
        parse(_file(laws), "x.yaml")
    assert str(info.value) == ("x.yaml:7: host.laws[0].terms: the term step(bs, 60.0) is not "
                               "quoted, so YAML reads it as two keys ('step(bs' and '60.0)'): "
                               "write \"step(bs,60)\"")


def test_an_unquoted_term_key_in_a_block_mapping_is_named_too() -> None:
    laws = "    - name: a\n      target: t\n      terms:\n        step(bs,60): 0.5\n"
    with pytest.raises(LawFileError, match=r"x.yaml:8: .*write \"step\(bs,60\)\""):
        parse(_file(laws), "x.yaml")


def test_lawkit_writes_term_keys_holding_a_parenthesis_quoted() -> None:
    text = flow_mapping({"1": 0.5, "a:step(b,60)": 1.0})
    assert text == '{"1": 0.5, "a:step(b,60)": 1.0}'
    assert parse(_file(f"    - name: a\n      target: t\n      terms: {text}\n"),
                 "x.yaml").host.laws[0].terms == {"1": 0.5, "a:step(b,60)": 1.0}


@pytest.mark.parametrize("term", ["1", "a", "step(batch_size,60)", "a:hinge(b.c,4096.5)",
                                  "step(x,1e+16)", "hinge(x,-3)", "step(x,1.5e-07)"])
def test_the_schema_pattern_accepts_canonical_terms(term: str) -> None:
    assert re.search(TERM_PATTERN, term)
    parse_term(term)


@pytest.mark.parametrize("term", ["step(x,60.0)", "step(x, 60)", "step(x,auto)", "step(x)",
                                  "step(x,1E16)", "step(x,060)", "log(x)", "a:"])
def test_the_schema_pattern_refuses_what_the_grammar_refuses(term: str) -> None:
    assert not re.search(TERM_PATTERN, term)
    with pytest.raises(TermError):
        parse_term(term)


def test_a_formula_takes_breakpoints_and_auto_is_a_placeholder_the_design_refuses() -> None:
    formula = parse_formula("s ~ 1 + bs + step(bs, 60.0) + n:step(t,4096) + hinge(bs,auto)")
    assert formula.terms == ("1", "bs", "step(bs,60)", "n:step(t,4096)", "hinge(bs,auto)")
    assert formula.columns() == ["bs", "n", "t"]
    assert formula.auto_factors == ("hinge(bs,auto)",)
    columns = {"bs": np.array([50.0, 70.0]), "n": np.array([2.0, 3.0]), "t": np.array([5e3, 1.0])}
    with pytest.raises(FitError, match="auto breakpoints are chosen by the search"):
        design_matrix(columns, formula.terms)
    resolved = formula.with_knots({"hinge(bs,auto)": 64.0})
    x = design_matrix(columns, resolved.terms)
    assert x.tolist() == [[1.0, 50.0, 0.0, 2.0, 0.0], [1.0, 70.0, 1.0, 0.0, 6.0]]


def _workspace(root: Path) -> Path:
    make_fit_folder(root, {"atom/__init__.py": b"x = 1\n"})
    rng = np.random.default_rng(1)
    bs = np.repeat(np.arange(8, 129, 8), 4).astype(float)
    tokens = rng.integers(100, 8000, bs.size).astype(float)
    host = (0.002 + 1e-5 * bs + 4e-4 * (bs > 60) + 2e-8 * np.maximum(0, tokens - 4096)
            + rng.normal(0, 1e-7, bs.size))
    pd.DataFrame({"batch_size": bs, "num_tokens": tokens, "sampler_s": host}).to_csv(
        root / "caps.csv", index=False)
    return root


def test_a_fit_with_a_known_step_and_hinge_recovers_their_coefficients(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    lawkit.fit(root / "caps.csv", out=root / "laws" / "s.yaml", captured_on="current",
               formula="sampler_s ~ 1 + batch_size + step(batch_size,60) + "
                       "hinge(num_tokens,4096)", workspace=root)
    law = lawkit.load(root / "laws" / "s.yaml").law("sampler_s")
    assert list(law.terms) == ["1", "batch_size", "step(batch_size,60)", "hinge(num_tokens,4096)"]
    assert law.terms["step(batch_size,60)"] == pytest.approx(4e-4, rel=1e-3)
    assert law.terms["hinge(num_tokens,4096)"] == pytest.approx(2e-8, rel=1e-2)
    assert law.terms["batch_size"] == pytest.approx(1e-5, rel=1e-2)
    assert set(law.domain or {}) == {"batch_size", "num_tokens"}


def test_a_fit_with_an_auto_breakpoint_places_it_between_the_values_it_splits(
        tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    lawkit.fit(root / "caps.csv", out=root / "laws" / "s.yaml", captured_on="current",
               formula="sampler_s ~ 1 + batch_size + step(batch_size,auto) + "
                       "hinge(num_tokens,4096)", workspace=root)
    law = lawkit.load(root / "laws" / "s.yaml").law("sampler_s")
    assert "step(batch_size,60)" in law.terms  # the jump lies between 56 and 64
    assert law.terms["step(batch_size,60)"] == pytest.approx(4e-4, rel=1e-3)


def test_a_design_matrix_of_an_auto_breakpoint_asks_for_the_search() -> None:
    with pytest.raises(FitError, match="auto breakpoints are chosen by the search"):
        design_matrix({"x": np.arange(5.0)}, ["step(x,auto)"])


def test_load_require_current_refuses_a_stale_file_with_checks_message(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    lawkit.fit(root / "caps.csv", out=root / "laws" / "s.yaml", captured_on="current",
               formula="sampler_s ~ 1 + batch_size", workspace=root)
    path = root / "laws" / "s.yaml"
    assert lawkit.load(path, require="current").host.laws[0].name == "sampler_s"
    (root / "engine" / "atom" / "__init__.py").write_text("x = 2\n")
    with pytest.raises(LawFileError) as info:
        lawkit.load(path, require="current")
    report = check_workspace(load_workspace(cwd=root))
    assert [p.kind for p in report.problems] == ["stale"]
    assert str(info.value) == f"{report.problems[0].text()}; {report.fix_line()}"
    assert lawkit.load(path).path == str(path)  # without require: no digest asked


def test_score_require_current_refuses_a_stale_file_as_load_does(tmp_path: Path) -> None:
    root = _workspace(tmp_path)
    path = root / "laws" / "s.yaml"
    lawkit.fit(root / "caps.csv", out=path, captured_on="current",
               formula="sampler_s ~ 1 + batch_size", workspace=root)
    assert lawkit.score(path, [root / "caps.csv"], require="current", workspace=root).laws
    (root / "engine" / "atom" / "__init__.py").write_text("x = 2\n")
    with pytest.raises(LawFileError, match="stale: names"):
        lawkit.score(path, [root / "caps.csv"], require="current", workspace=root)
    with pytest.raises(LawFileError, match="stale: names"):
        lawkit.score(lawkit.load(path), {"batch_size": [8.0], "sampler_s": [1e-3]},
                     require="current", workspace=root)
    assert lawkit.score(path, [root / "caps.csv"], workspace=root).laws  # not asked: scored
