"""Formulas: `"host_s ~ 1 + num_seqs + num_tokens + num_seqs:max_context"`.

The right-hand side is a sum of terms, each the intercept `1`, a factor, or a product of factors
joined by `:`; a factor is a column, `step(COL,K)` or `hinge(COL,K)` (the grammar of
`lawkit.lawfiles.terms`, docs/law-files.md: what a law's `terms` hold, so that a simulator
evaluates a law with nothing but the law file). K is a number, written loosely if need be
(`step(batch_size, 60.0)` is stored as `step(batch_size,60)`), or `auto`: a placeholder that a
breakpoint search must resolve (`Formula.auto_factors`, `Formula.with_knots`) before a design
matrix can be built. The intercept is implied, as in R and patsy, unless the
formula drops it with `- 1`, `+ 0` or a leading `0 +`. Terms keep the order they are written in
(an implied intercept comes first). No other operators: `a*b` is written `a + b + a:b`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lawkit.errors import FitError
from lawkit.lawfiles.terms import COLUMN, Factor, TermError, canonical_term, parse_term

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_TOKEN = re.compile(
    rf"\s*(?:(?P<factor>(?:step|hinge)\s*\([^()]*\))|(?P<name>{COLUMN})|(?P<number>[0-9]+)"
    r"|(?P<op>[~+\-:])|(?P<bad>\S))")
INTERCEPT = "1"
_HINTS = {"*": " (terms are 1, columns and a:b products joined by '+'; write a*b as "
               "a + b + a:b)",
          "=": " (a formula is TARGET ~ TERMS: write '~', as in 'host_s ~ 1 + num_seqs')"}


@dataclass(frozen=True)
class Formula:
    """A parsed formula: the target column and the terms, in the order written."""

    target: str
    terms: tuple[str, ...]
    text: str

    @property
    def intercept(self) -> bool:
        """Whether the terms include the intercept `1`."""
        return INTERCEPT in self.terms

    def columns(self) -> list[str]:
        """The feature columns the terms use, in first-use order (not the target); a step's or
        hinge's COL is one."""
        out: dict[str, None] = {}
        for term in self.terms:
            if term != INTERCEPT:
                out.update(dict.fromkeys(parse_term(term, allow_auto=True).columns()))
        return list(out)

    @property
    def auto_factors(self) -> tuple[str, ...]:
        """The `auto` breakpoints (`step(batch_size,auto)`), once each, in first-use order: what
        a breakpoint search chooses K for before `with_knots`."""
        out: dict[str, None] = {}
        for term in self.terms:
            out.update(dict.fromkeys(f.text for f in parse_term(term, allow_auto=True).factors
                                     if f.auto))
        return tuple(out)

    def with_knots(self, knots: Mapping[str, float]) -> Formula:
        """This formula with each `auto` factor named in `knots` (`{"step(x,auto)": 60.0}`) at
        that K; the others stay `auto`."""
        terms = []
        for term in self.terms:
            factors = [f.with_knot(knots[f.text]) if f.auto and f.text in knots else f
                       for f in parse_term(term, allow_auto=True).factors]
            terms.append(":".join(f.text for f in factors) if factors else term)
        return Formula(target=self.target, terms=tuple(terms), text=self.text)

    def __str__(self) -> str:
        rhs = " + ".join(self.terms)
        return f"{self.target} ~ {rhs}" if self.intercept else f"{self.target} ~ {rhs} - 1"


def parse_formula(text: str) -> Formula:
    """Parse `target ~ terms`; a FitError naming the formula and what is wrong."""
    return _Parser(text).parse()


def formula_of(target: str, terms: Iterable[str]) -> Formula:
    """The formula of a law: its target and the terms its `terms` mapping names, in file order."""
    names = list(terms)
    text = f"{target} ~ {' + '.join(names)}" if INTERCEPT in names else \
        f"{target} ~ {' + '.join([*names, '0'])}"
    if not names:
        raise FitError(f"formula {text!r}: no terms")
    return Formula(target=target, terms=tuple(names), text=text)


def design_matrix(columns: Mapping[str, Any], terms: Sequence[str],
                  rows: npt.NDArray[np.bool_] | None = None) -> npt.NDArray[np.float64]:
    """The design matrix of `terms` over `columns` (numeric arrays), one column per term, for
    the rows selected by `rows` (default: all); `1` is a column of ones."""
    import numpy as np

    def values(name: str) -> Any:
        column = np.asarray(columns[name], dtype=np.float64)
        return column if rows is None else column[rows]

    if rows is not None:
        n = int(np.count_nonzero(rows))
    else:
        n = len(next(iter(columns.values()))) if columns else 0
    parsed = [_design_term(term) for term in terms]
    x = np.empty((n, len(terms)), dtype=np.float64, order="F")  # columns contiguous
    for j, factors in enumerate(parsed):
        if not factors:
            x[:, j] = 1.0
            continue
        x[:, j] = factors[0].array(values(factors[0].column))
        for factor in factors[1:]:
            x[:, j] *= factor.array(values(factor.column))
    return x


def _design_term(term: str) -> tuple[Factor, ...]:
    try:
        parsed = parse_term(term, allow_auto=True)
    except TermError as exc:
        raise FitError(str(exc)) from None
    if parsed.auto:
        raise FitError(f"term {term!r}: auto breakpoints are chosen by the search of "
                       "`lawkit fit` (lawkit.fitting.breakpoints) before a design is built: "
                       "fit the formula, or give K as a number, e.g. step(batch_size,60)")
    return parsed.factors


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            match = _TOKEN.match(stripped, pos)
            assert match is not None  # the `bad` branch matches any non-space character
            kind = match.lastgroup
            assert kind is not None
            start = match.start(kind)
            if kind == "bad" and match.group(kind) == "(" and self.tokens and \
                    self.tokens[-1][1] in ("step", "hinge"):
                self.fail(f"{self.tokens[-1][1]}( is not closed: write "
                          f"{self.tokens[-1][1]}(COLUMN,K)", start)
            if kind == "bad":
                self.fail(f"unexpected character {match.group(kind)!r}", start,
                          hint=_HINTS.get(match.group(kind), ""))
            self.tokens.append((kind, match.group(kind), start))
            pos = match.end()
        self.i = 0

    def fail(self, message: str, at: int | None = None, hint: str = "") -> None:
        where = f" at character {at + 1}" if at is not None else ""
        quoted = repr(self.text)
        if len(quoted) > 200:
            quoted = f"{quoted[:196]} ..."
        raise FitError(f"formula {quoted}: {message}{where}{hint}")

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self) -> tuple[str, str, int]:
        token = self.peek()
        if token is None:
            self.fail("ends too early: expected a term")
            raise AssertionError  # pragma: no cover  (fail raises)
        self.i += 1
        return token

    def parse(self) -> Formula:
        if not self.text.strip():
            self.fail("empty: expected 'target ~ 1 + column + ...'")
        kind, value, at = self.take()
        if kind != "name":
            self.fail(f"expected the target column first, got {value!r}", at)
        target = value
        tilde = self.take() if self.peek() else None
        if tilde is None or tilde[0] != "op" or tilde[1] != "~":
            self.fail("expected '~' after the target column "
                      "(write 'target ~ 1 + column + ...')", tilde[2] if tilde else None)
        intercept: bool | None = None  # None: implied
        terms: list[str] = []
        seen: dict[frozenset[str], str] = {}
        sign = "+"
        expect_term = True
        while self.peek() is not None:
            kind, value, at = self.take()
            if not expect_term:
                if kind == "op" and value in "+-":
                    sign = value
                    expect_term = True
                    continue
                self.fail(f"expected '+' or '-' before {value!r}", at)
            if kind == "op" and value == "-" and not terms and intercept is None and sign == "+":
                self.fail("a formula cannot start with '-': write 'target ~ a - 1' or "
                          "'target ~ 0 + a' to drop the intercept", at)
            if kind == "number":
                if value not in ("0", "1"):
                    self.fail(f"a number term must be 1 (the intercept) or 0 (no intercept), "
                              f"got {value}", at)
                wants = (value == "1") == (sign == "+")
                if intercept is not None and intercept != wants:
                    self.fail("both keeps and drops the intercept", at)
                intercept = wants
                if wants and INTERCEPT not in terms:
                    terms.append(INTERCEPT)
                expect_term = False
                continue
            if kind not in ("name", "factor"):
                self.fail(f"expected a term, got {value!r}", at)
            factors = [self.factor(value, at)]
            while (nxt := self.peek()) is not None and nxt[0] == "op" and nxt[1] == ":":
                self.take()
                fkind, fvalue, fat = self.take()
                if fkind not in ("name", "factor"):
                    self.fail(f"expected a factor after ':', got {fvalue!r}", fat)
                factors.append(self.factor(fvalue, fat))
            term = ":".join(f.text for f in factors)
            if sign == "-":
                self.fail(f"only the intercept can be removed ('- 1'), not {term!r}", at)
            if len({f.text for f in factors}) != len(factors):
                self.fail(f"{term!r} repeats a factor", at)
            if target in (f.column for f in factors):
                self.fail(f"the target {target!r} cannot be a term", at)
            key = frozenset(f.text for f in factors)
            if key in seen:
                self.fail(f"{term!r} repeats the term {seen[key]!r}", at)
            seen[key] = term
            terms.append(term)
            expect_term = False
        if expect_term:
            self.fail("ends too early: expected a term after the last '+' or '-'"
                      if terms or intercept is not None else "no terms after '~'")
        if intercept is None:
            terms.insert(0, INTERCEPT)
        elif not intercept and INTERCEPT in terms:
            terms.remove(INTERCEPT)
        if not terms:
            self.fail("no terms left: a law needs at least one term")
        return Formula(target=target, terms=tuple(terms), text=self.text)

    def factor(self, text: str, at: int) -> Factor:
        """A column, or a breakpoint read loosely and kept in its canonical spelling."""
        fixed = canonical_term(text, allow_auto=True)
        try:
            return parse_term(fixed or text, allow_auto=True).factors[0]
        except TermError as exc:
            self.fail(str(exc), at)
            raise AssertionError from None  # pragma: no cover  (fail raises)
