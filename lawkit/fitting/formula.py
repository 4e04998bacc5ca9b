"""Formulas: `"host_s ~ 1 + num_seqs + num_tokens + num_seqs:max_context"`.

The right-hand side is a sum of terms, each the intercept `1`, a column, or a product of columns
joined by `:` (DESIGN.md section 5: what a law's `terms` hold, so that a simulator evaluates a
law with nothing but the law file). The intercept is implied, as in R and patsy, unless the
formula drops it with `- 1`, `+ 0` or a leading `0 +`. Terms keep the order they are written in
(an implied intercept comes first). No other operators: `a*b` is written `a + b + a:b`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lawkit.errors import FitError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

_COLUMN_TEXT = r"[A-Za-z_][A-Za-z0-9_.]*"
_TOKEN = re.compile(
    rf"\s*(?:(?P<name>{_COLUMN_TEXT})|(?P<number>[0-9]+)|(?P<op>[~+\-:])|(?P<bad>\S))")
INTERCEPT = "1"


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
        """The feature columns the terms use, in first-use order (not the target)."""
        out: dict[str, None] = {}
        for term in self.terms:
            if term != INTERCEPT:
                out.update(dict.fromkeys(term.split(":")))
        return list(out)

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
    x = np.empty((n, len(terms)), dtype=np.float64, order="F")  # columns contiguous
    for j, term in enumerate(terms):
        if term == INTERCEPT:
            x[:, j] = 1.0
            continue
        factors = term.split(":")
        x[:, j] = values(factors[0])
        for factor in factors[1:]:
            x[:, j] *= values(factor)
    return x


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
            if kind == "bad":
                self.fail(f"unexpected character {match.group(kind)!r}", start,
                          hint=" (terms are 1, columns and a:b products joined by '+'; write "
                          "a*b as a + b + a:b)" if match.group(kind) == "*" else "")
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
            if kind != "name":
                self.fail(f"expected a term, got {value!r}", at)
            factors = [value]
            while (nxt := self.peek()) is not None and nxt[0] == "op" and nxt[1] == ":":
                self.take()
                fkind, fvalue, fat = self.take()
                if fkind != "name":
                    self.fail(f"expected a column after ':', got {fvalue!r}", fat)
                factors.append(fvalue)
            term = ":".join(factors)
            if sign == "-":
                self.fail(f"only the intercept can be removed ('- 1'), not {term!r}", at)
            if len(set(factors)) != len(factors):
                self.fail(f"{term!r} repeats a column", at)
            if target in factors:
                self.fail(f"the target {target!r} cannot be a term", at)
            key = frozenset(factors)
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
