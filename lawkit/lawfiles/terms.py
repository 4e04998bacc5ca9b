"""The term grammar (docs/law-files.md): what a key of a law's `terms` may say.

    term    := "1" | factor (":" factor)*
    factor  := column | "step(" column "," K ")" | "hinge(" column "," K ")"
    column  := [A-Za-z_][A-Za-z0-9_.]*

`step(COL,K)` is 1.0 where COL > K, else 0.0; `hinge(COL,K)` is max(0, COL - K) (0.0 where COL
is not above K, NaN included). K is a finite number spelled canonically: Python's `repr` of the
float without a trailing `.0` (`60`, `4096.5`, `1e+16`), no spaces, because the body hash covers
the term strings: `step(x,60.0)` and `step(x,60)` price the same and must not hash apart. Any
other spelling is an error naming the canonical one. In a `--formula`, K may also be `auto`
(`parse_term(..., allow_auto=True)`), a placeholder the fit resolves to a number.

One grammar for every reader: law-file validation, predict (scalars, compiled, arrays), formula
parsing and design matrices, the JSON Schema's pattern, and the writer's quoting. Plain Python:
numpy is imported only by `Factor.array`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

INTERCEPT = "1"
COLUMN = r"[A-Za-z_][A-Za-z0-9_.]*"
_COLUMN = re.compile(rf"{COLUMN}\Z")
# Lenient on purpose: spaces and any K spelling are read, so that the error can name the
# canonical spelling instead of only saying "malformed".
_BREAKPOINT = re.compile(rf"\s*(step|hinge)\s*\(\s*({COLUMN})\s*,\s*([^\s,()]*)\s*\)\s*\Z")
_NUMBER = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")

KNOT_PATTERN = r"-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?(e[-+][0-9]{2,3})?"
"""Canonical K as a regular expression (what `format_knot` writes; a superset of it)."""
FACTOR_PATTERN = rf"({COLUMN}|(step|hinge)\({COLUMN},{KNOT_PATTERN}\))"
TERM_PATTERN = rf"^(1|{FACTOR_PATTERN}(:{FACTOR_PATTERN})*)$"
"""A term as a JSON Schema (ECMA 262) pattern, for editors: `check` is the authority."""

FactorKind = Literal["column", "step", "hinge"]


class TermError(ValueError):
    """A term string that is not in the grammar; the message names the canonical spelling
    where there is one."""


@dataclass(frozen=True)
class Factor:
    """One factor of a term: a column, or `step`/`hinge` of a column at a knot `knot`.

    `knot` is None for a column and for an `auto` breakpoint (`auto` True), which a fit must
    resolve (`with_knot`) before the factor can be evaluated.
    """

    kind: FactorKind
    column: str
    knot: float | None = None
    auto: bool = False

    @property
    def text(self) -> str:
        """The canonical spelling: `batch_size`, `step(batch_size,60)`, `hinge(x,auto)`."""
        if self.kind == "column":
            return self.column
        knot = "auto" if self.auto else format_knot(self.knot)  # type: ignore[arg-type]
        return f"{self.kind}({self.column},{knot})"

    def __str__(self) -> str:
        return self.text

    def with_knot(self, knot: float) -> Factor:
        """This breakpoint at `knot` (what a search for an `auto` K returns)."""
        return Factor(self.kind, self.column, _knot_value(float(knot)))

    def scalar(self, value: float) -> float:
        """The factor's value for one row whose COL is `value` (a float)."""
        if self.kind == "column":
            return value
        knot = self._knot()
        if self.kind == "step":
            return 1.0 if value > knot else 0.0
        return value - knot if value > knot else 0.0

    def array(self, values: Any) -> npt.NDArray[np.float64]:
        """The factor over an array of COL's values, float64, equal to `scalar` row by row."""
        import numpy as np

        values = np.asarray(values, dtype=np.float64)
        if self.kind == "column":
            return values  # type: ignore[no-any-return]
        knot = self._knot()
        above = values > knot
        if self.kind == "step":
            return above.astype(np.float64)  # type: ignore[no-any-return]
        out = np.zeros(values.shape)
        np.subtract(values, knot, out=out, where=above)
        return out

    def _knot(self) -> float:
        if self.knot is None:
            raise TermError(f"{self.text}: an auto breakpoint has no value until a fit "
                            "chooses it")
        return self.knot


@dataclass(frozen=True)
class Term:
    """A parsed term: its canonical text and its factors (none for the intercept)."""

    text: str
    factors: tuple[Factor, ...]

    @property
    def is_intercept(self) -> bool:
        """Whether this is the intercept `1`."""
        return not self.factors

    @property
    def auto(self) -> bool:
        """Whether a factor is an `auto` breakpoint."""
        return any(f.auto for f in self.factors)

    def columns(self) -> list[str]:
        """The capture columns the factors read, in first-use order."""
        return list(dict.fromkeys(f.column for f in self.factors))

    def key(self) -> frozenset[str]:
        """What two spellings of the same product share (`a:b` and `b:a`)."""
        return frozenset(f.text for f in self.factors)

    def __str__(self) -> str:
        return self.text


def format_knot(knot: float) -> str:
    """K's canonical spelling: `repr` of the float without a trailing `.0` (`60`, `1e+16`)."""
    text = repr(_knot_value(knot))
    return text[:-2] if text.endswith(".0") else text


def parse_factor(text: str, *, allow_auto: bool = False) -> Factor:
    """Parse one factor; a TermError naming the canonical spelling for a misspelt one."""
    if _COLUMN.match(text):
        return Factor("column", text)
    match = _BREAKPOINT.match(text)
    if match is None:
        if "(" in text or ")" in text:
            raise TermError(f"malformed factor {text!r}: write step(COLUMN,K) or "
                            "hinge(COLUMN,K)")
        raise TermError(f"malformed factor {text!r}: a factor is a column name (letters, "
                        "digits, '_' and '.'), step(COLUMN,K) or hinge(COLUMN,K)")
    kind: FactorKind = "step" if match.group(1) == "step" else "hinge"
    column, knot_text = match.group(2), match.group(3)
    if knot_text == "auto":
        if not allow_auto:
            raise TermError(f"{text.strip()}: K is 'auto' only in a --formula; a law file "
                            "holds the number the fit chose")
        factor = Factor(kind, column, None, auto=True)
    else:
        if not _NUMBER.match(knot_text):
            raise TermError(f"{text.strip()}: K must be a number, got {knot_text!r}")
        knot = float(knot_text)
        if not math.isfinite(knot):
            raise TermError(f"{text.strip()}: K must be finite, got {knot_text!r}")
        factor = Factor(kind, column, _knot_value(knot))
    if factor.text != text:
        raise TermError(f"{text!r} is not spelt canonically: write {factor.text} (K as "
                        "Python's repr of the float without a trailing '.0', no spaces)")
    return factor


def parse_term(text: str, *, allow_auto: bool = False) -> Term:
    """Parse a term string (`1`, `a`, `a:step(b,60)`); a TermError saying what is wrong and,
    for a misspelt K, the canonical spelling."""
    if text == INTERCEPT:
        return Term(INTERCEPT, ())
    cached = _PARSED.get(text) if not allow_auto else None
    if cached is not None:
        return cached
    if not text:
        raise TermError("an empty term: a term is \"1\", a factor, or factors joined by ':'")
    factors: list[Factor] = []
    wrong: list[str] = []
    problem: TermError | None = None
    for part in _split(text):
        try:
            factor = parse_factor(part, allow_auto=allow_auto)
        except TermError as exc:
            problem = problem or exc
            fixed = _canonical_or_none(part, allow_auto)
            if fixed is None:
                raise TermError(f"malformed term {text!r}: {exc}") from None
            wrong.append(fixed)
            continue
        wrong.append(factor.text)
        factors.append(factor)
    if problem is not None:
        raise TermError(f"term {text!r} is not spelt canonically: write {':'.join(wrong)} (K "
                        "as Python's repr of the float without a trailing '.0', no spaces)")
    seen: set[str] = set()
    for factor in factors:
        if factor.text in seen:
            raise TermError(f"term {text!r} repeats the factor {factor.text}")
        seen.add(factor.text)
    term = Term(text, tuple(factors))
    if not allow_auto and len(_PARSED) < _CACHE_LIMIT:
        _PARSED[text] = term
    return term


def canonical_term(text: str, *, allow_auto: bool = False) -> str | None:
    """The canonical spelling of a term written loosely (spaces, `60.0`), or None when it is not
    a term at all."""
    try:
        return parse_term(text, allow_auto=allow_auto).text
    except TermError:
        parts = [_canonical_or_none(p, allow_auto) for p in _split(text)]
        return None if None in parts else ":".join(p for p in parts if p is not None)


def needs_quoting(term: str) -> bool:
    """Whether a term key must be quoted in YAML: it holds `(` or `,` (unquoted in a flow
    mapping, `step(x,60)` reads as two keys)."""
    return "(" in term or "," in term


_PARSED: dict[str, Term] = {}
_CACHE_LIMIT = 4096


def _split(text: str) -> list[str]:
    """`text` split at the `:` that are not inside parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == ":" and depth <= 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _canonical_or_none(part: str, allow_auto: bool) -> str | None:
    stripped = part.strip()
    if _COLUMN.match(stripped):
        return stripped
    match = _BREAKPOINT.match(part)
    if match is None:
        return None
    kind, column, knot_text = match.groups()
    if knot_text == "auto":
        return f"{kind}({column},auto)" if allow_auto else None
    if not _NUMBER.match(knot_text) or not math.isfinite(float(knot_text)):
        return None
    return f"{kind}({column},{format_knot(float(knot_text))})"


def _knot_value(knot: float) -> float:
    # -0.0 and 0.0 are the same breakpoint: one spelling, "0".
    return knot + 0.0
