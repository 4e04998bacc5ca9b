"""`--where`: a small, safe expression language that selects capture rows.

    expr     := and_expr ("or" and_expr)*
    and_expr := not_expr ("and" not_expr)*
    not_expr := "not" not_expr | "(" expr ")" | test
    test     := operand ("==" | "!=" | "<" | "<=" | ">" | ">=") operand
              | column ["not"] "in" "[" [literal ("," literal)* [","]] "]"
    operand  := column | literal
    literal  := number | string | "true" | "false"

A column is a name (`num_seqs`, `a.b`) or any text in backticks (`` `model/name` ``); a number
is `4`, `-0.5`, `1e-3` (an integer literal stays an integer); a string is single- or
double-quoted with backslash escapes. The text is tokenized and parsed here, by hand: it is
never given to `eval` or any Python parser, so a capture filter cannot run code.

Evaluation is vectorised: `Expr.mask(data)` is a boolean numpy array over the rows of a pandas
DataFrame or a mapping of column name to array. Comparing a string column with a number (or a
number column with a string) is an error rather than a silently empty selection. numpy is
imported only when a mask is computed, so parsing stays cheap for `check` and `review`.

A law stores its selection as a `where` mapping (column -> value, or -> [values], ANDed) when
the expression is exactly such a conjunction (`Expr.as_mapping()`), else verbatim in `filter`
(docs/law-files.md); `law_mask` applies both.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Union

from lawkit.errors import FitError

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    BoolArray = npt.NDArray[np.bool_]

Scalar = Union[str, bool, int, float]  # noqa: UP007  (a runtime alias; keeps 3.11 happy)
WhereMapping = dict[str, Scalar | list[Scalar]]

_KEYWORDS = {"and", "or", "not", "in", "true", "false"}
MAX_NESTING = 100
"""The deepest nesting of parentheses and `not` (the parser recurses)."""
_COMPARISONS = ("==", "!=", "<=", ">=", "<", ">")
_TOKEN = re.compile(r"""
    \s*(?:
      (?P<number>[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?)
    | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
    | (?P<backtick>`[^`]*`)
    | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<op>==|!=|<=|>=|<|>|\(|\)|\[|\]|,|-)
    | (?P<bad>\S)
    )""", re.VERBOSE | re.DOTALL)
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t"}


class Expr:
    """A parsed `--where` expression."""

    text: str = ""

    def columns(self) -> list[str]:
        """The columns the expression reads, in first-use order."""
        out: dict[str, None] = {}
        self._collect(out)
        return list(out)

    def as_mapping(self) -> WhereMapping | None:
        """The `where` mapping this expression is exactly (a conjunction of `col == v` and
        `col in [..]`, each column once), else None."""
        parts = self.items if isinstance(self, And) else [self]
        out: WhereMapping = {}
        for part in parts:
            if isinstance(part, Compare) and part.op == "==" and \
                    isinstance(part.left, Column) and isinstance(part.right, Literal):
                column, value = part.left.name, part.right.value
                if column in out:
                    return None
                out[column] = value
            elif isinstance(part, In) and not part.negated:
                if part.column in out:
                    return None
                out[part.column] = list(part.values)
            else:
                return None
        return out

    def mask(self, data: Any, *, size: int | None = None) -> BoolArray:
        """The rows of `data` (a DataFrame or a mapping of column -> array) it selects;
        `size` is the row count where `data` may hold no column to tell it."""
        import numpy as np

        try:
            selected = self._eval(data, {})
        except _EvalError as exc:
            raise FitError(f"where {_quoted(str(self))}: {exc}") from None
        n = _length(data) if size is None else size
        return np.broadcast_to(np.asarray(selected, dtype=bool), (n,)).copy()

    def __str__(self) -> str:
        return self.text or self._render()

    def _render(self) -> str:
        raise NotImplementedError

    def _collect(self, out: dict[str, None]) -> None:
        raise NotImplementedError

    def _eval(self, data: Any, cache: dict[str, Any]) -> Any:
        raise NotImplementedError


@dataclass(eq=False)
class Column(Expr):
    """A column reference."""

    name: str

    def _render(self) -> str:
        return self.name if _plain_name(self.name) else f"`{self.name}`"

    def _collect(self, out: dict[str, None]) -> None:
        out[self.name] = None


@dataclass(eq=False)
class Literal(Expr):
    """A number, string or boolean."""

    value: Scalar

    def _render(self) -> str:
        return format_literal(self.value)

    def _collect(self, out: dict[str, None]) -> None:
        pass

    def _eval(self, data: Any, cache: dict[str, Any]) -> Any:
        return self.value


@dataclass(eq=False)
class Compare(Expr):
    """`left op right`."""

    op: str
    left: Column | Literal
    right: Column | Literal

    def _render(self) -> str:
        return f"{self.left._render()} {self.op} {self.right._render()}"

    def _collect(self, out: dict[str, None]) -> None:
        self.left._collect(out)
        self.right._collect(out)

    def _eval(self, data: Any, cache: dict[str, Any]) -> Any:
        import operator

        left = _operand(self.left, data, cache)
        right = _operand(self.right, data, cache)
        _check_kinds(self.op, left, right)
        ops = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
               ">": operator.gt, ">=": operator.ge}
        if self.op in ("==", "!="):
            return ops[self.op](left.values, right.values)
        return _ordered(ops[self.op], left, right)


@dataclass(eq=False)
class In(Expr):
    """`column in [values]` (or `not in`)."""

    column: str
    values: tuple[Scalar, ...]
    negated: bool = False

    def _render(self) -> str:
        items = ", ".join(format_literal(v) for v in self.values)
        return f"{Column(self.column)._render()} {'not in' if self.negated else 'in'} [{items}]"

    def _collect(self, out: dict[str, None]) -> None:
        out[self.column] = None

    def _eval(self, data: Any, cache: dict[str, Any]) -> Any:
        import numpy as np

        column = _column(self.column, data, cache)
        hit: Any = np.zeros(len(column.values), dtype=bool)
        for value in self.values:
            _check_kinds("in", column, _Operand(value, _kind_of(value), None))
            hit |= column.values == value
        return ~hit if self.negated else hit


@dataclass(eq=False)
class And(Expr):
    """All of `items`."""

    items: list[Expr]

    def _render(self) -> str:
        return " and ".join(_wrap(item, (Or,)) for item in self.items)

    def _collect(self, out: dict[str, None]) -> None:
        for item in self.items:
            item._collect(out)

    def _eval(self, data: Any, cache: dict[str, Any]) -> Any:
        result = self.items[0]._eval(data, cache)
        for item in self.items[1:]:
            result = result & item._eval(data, cache)
        return result


@dataclass(eq=False)
class Or(Expr):
    """Any of `items`."""

    items: list[Expr]

    def _render(self) -> str:
        return " or ".join(self._part(item) for item in self.items)

    @staticmethod
    def _part(item: Expr) -> str:
        return _wrap(item, ())

    def _collect(self, out: dict[str, None]) -> None:
        for item in self.items:
            item._collect(out)

    def _eval(self, data: Any, cache: dict[str, Any]) -> Any:
        result = self.items[0]._eval(data, cache)
        for item in self.items[1:]:
            result = result | item._eval(data, cache)
        return result


@dataclass(eq=False)
class Not(Expr):
    """Not `item`."""

    item: Expr

    def _render(self) -> str:
        return f"not {_wrap(self.item, (And, Or))}"

    def _collect(self, out: dict[str, None]) -> None:
        self.item._collect(out)

    def _eval(self, data: Any, cache: dict[str, Any]) -> Any:
        return ~self.item._eval(data, cache)


def parse_where(text: str) -> Expr:
    """Parse a `--where` expression; a FitError naming the expression and the position."""
    expr = _Parser(text).parse()
    expr.text = text.strip()
    return expr


def mapping_expr(where: Mapping[str, Any]) -> Expr:
    """The expression a `where` mapping stands for (`col == v and col in [..]`)."""
    items: list[Expr] = []
    for column, value in where.items():
        if isinstance(value, list):
            items.append(In(column, tuple(value)))
        else:
            items.append(Compare("==", Column(column), Literal(value)))
    if not items:
        return Literal(True)
    expr = items[0] if len(items) == 1 else And(items)
    expr.text = expr._render()
    return expr


def format_where(where: Mapping[str, Any] | None, filter: str | None = None) -> str:
    """A law's selection as one expression, for messages; "" for all rows."""
    parts = []
    if where:
        parts.append(str(mapping_expr(where)))
    if filter:
        parts.append(f"({filter})" if where else filter)
    return " and ".join(parts)


def law_columns(where: Mapping[str, Any] | None, filter: str | None) -> list[str]:
    """The columns a law's `where` and `filter` read."""
    out = dict.fromkeys(where or {})
    if filter:
        out.update(dict.fromkeys(parse_where(filter).columns()))
    return list(out)


def law_mask(where: Mapping[str, Any] | None, filter: str | None, data: Any, *,
             size: int | None = None) -> BoolArray:
    """The rows a law's `where` mapping and `filter` expression select (ANDed); `size` as for
    `Expr.mask`."""
    import numpy as np

    n = _length(data) if size is None else size
    mask = mapping_expr(where).mask(data, size=n) if where else np.ones(n, dtype=bool)
    if filter:
        mask &= parse_where(filter).mask(data, size=n)
    return mask


def format_literal(value: Scalar) -> str:
    """A literal as the language writes it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return repr(value)


# -- evaluation ----------------------------------------------------------------------------


@dataclass
class _Operand:
    values: Any
    kind: str  # "number", "string", "bool"
    column: str | None


def _length(data: Any) -> int:
    if hasattr(data, "shape") and hasattr(data, "columns"):
        return int(data.shape[0])
    for values in data.values():
        return len(values)
    return 0


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    return "string" if isinstance(value, str) else "number"


def _column(name: str, data: Any, cache: dict[str, Any]) -> _Operand:
    if name in cache:
        return cache[name]  # type: ignore[no-any-return]
    import numpy as np

    try:
        raw = data[name]
    except KeyError:
        raise _EvalError(f"no column {name!r} in the captures") from None
    values = raw.to_numpy() if hasattr(raw, "to_numpy") else np.asarray(raw)
    if values.dtype.kind == "b":
        kind = "bool"
    elif values.dtype.kind in "iuf":
        kind = "number"
    else:
        kind = "string"
        present = [v for v in values[:1000] if v is not None and not _is_nan(v)]
        if present and all(isinstance(v, bool) for v in present):
            kind = "bool"
        elif present and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                             for v in present):
            kind = "number"
    operand = _Operand(values, kind, name)
    cache[name] = operand
    return operand


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _ordered(op: Any, left: _Operand, right: _Operand) -> Any:
    """`left op right` for <, <=, >, >=: in a column of Python objects, a row holding a missing
    value (None, NaN) or one of another kind is not selected (Python would raise TypeError)."""
    import numpy as np

    loose = [side.values for side in (left, right)
             if isinstance(side.values, np.ndarray) and side.values.dtype.kind == "O"]
    if not loose:
        return op(left.values, right.values)
    wanted = (str,) if left.kind == "string" else (int, float, np.integer, np.floating)
    ok = np.ones(len(loose[0]), dtype=bool)
    for values in loose:
        ok &= np.fromiter((isinstance(v, wanted) and not isinstance(v, (bool, np.bool_))
                           and v == v for v in values), dtype=bool, count=len(values))  # NaN
    out = np.zeros(len(ok), dtype=bool)
    out[ok] = op(*(side.values[ok] if isinstance(side.values, np.ndarray) else side.values
                   for side in (left, right)))
    return out


def _operand(node: Column | Literal, data: Any, cache: dict[str, Any]) -> _Operand:
    if isinstance(node, Column):
        return _column(node.name, data, cache)
    return _Operand(node.value, _kind_of(node.value), None)


class _EvalError(Exception):
    """A type clash or missing column; `Expr.mask` names the whole expression."""


def _check_kinds(op: str, left: _Operand, right: _Operand) -> None:
    kinds = {left.kind, right.kind}
    if len(kinds) == 1 or kinds == {"number", "bool"}:
        if op not in ("==", "!=", "in") and "bool" in kinds:
            raise _EvalError("true and false only compare with == and !=")
        return
    column = left if left.column is not None else right
    other = right if column is left else left
    if column.column is None:  # two literals of different kinds
        raise _EvalError(f"compares a {left.kind} with a {right.kind}")
    what = {"number": "numbers", "string": "strings", "bool": "true/false values"}
    hint = ""
    if other.column is None and (retyped := _retyped(other.values)) is not None:
        hint = f" (did you mean {format_literal(retyped)}?)"
    raise _EvalError(f"column {column.column} holds {what[column.kind]}, compared with a "
                     f"{other.kind}{hint}")


def _retyped(value: Any) -> Any:
    """A string literal that looks like a number, as the number (for the hint), else None."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            try:
                number = float(value)
            except ValueError:
                return None
            return number if math.isfinite(number) else None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return None


def _wrap(item: Expr, parens_for: tuple[type, ...]) -> str:
    text = item._render()
    return f"({text})" if isinstance(item, parens_for) else text


def _plain_name(name: str) -> bool:
    return bool(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name)) and name not in _KEYWORDS


# -- parsing -------------------------------------------------------------------------------


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = list(self._tokenize(text))
        self.i = 0
        self.depth = 0

    def fail(self, message: str, at: int | None) -> FitError:
        where = f" at character {at + 1}" if at is not None else ""
        return FitError(f"where {_quoted(self.text.strip())}: {message}{where}")

    def _tokenize(self, text: str) -> Sequence[tuple[str, str, int]]:
        tokens: list[tuple[str, str, int]] = []
        pos = 0
        end = len(text.rstrip())
        while pos < end:
            match = _TOKEN.match(text, pos)
            if match is None or match.lastgroup is None:  # pragma: no cover  (bad matches all)
                raise self.fail("cannot read", pos)
            kind = match.lastgroup
            value, start = match.group(kind), match.start(kind)
            if kind == "bad":
                hint = ""
                if value in "\"'`":
                    hint = ": the quote is never closed"
                elif value == "=":
                    hint = ": write == to compare"
                elif value in "&|!":
                    hint = ": write and, or, not"
                raise self.fail(f"unexpected {value!r}{hint}", start)
            if kind == "name" and value in _KEYWORDS:
                kind = "keyword"
            tokens.append((kind, value, start))
            pos = match.end()
        return tokens

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def take(self, expected: str) -> tuple[str, str, int]:
        token = self.peek()
        if token is None:
            raise self.fail(f"ends too early: expected {expected}", None)
        self.i += 1
        return token

    def at(self, kind: str, value: str | None = None) -> bool:
        token = self.peek()
        return token is not None and token[0] == kind and (value is None or token[1] == value)

    def parse(self) -> Expr:
        if not self.tokens:
            raise self.fail("empty: expected a test like num_seqs <= 256", None)
        expr = self.or_expr()
        token = self.peek()
        if token is not None:
            raise self.fail(f"expected 'and', 'or' or the end, got {token[1]!r}", token[2])
        return expr

    def or_expr(self) -> Expr:
        items = [self.and_expr()]
        while self.at("keyword", "or"):
            self.i += 1
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else Or(items)

    def and_expr(self) -> Expr:
        items = [self.not_expr()]
        while self.at("keyword", "and"):
            self.i += 1
            items.append(self.not_expr())
        if len(items) == 1:
            return items[0]
        flat: list[Expr] = []
        for item in items:  # `a and (b and c)` is one conjunction: it may still be a mapping
            flat.extend(item.items if isinstance(item, And) else [item])
        return And(flat)

    def not_expr(self) -> Expr:
        token = self.peek()
        if token is None or token[:2] not in (("keyword", "not"), ("op", "(")):
            return self.test()
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise self.fail(f"nested deeper than {MAX_NESTING} levels of 'not' and "
                            "parentheses", token[2])
        try:
            return self.nested()
        finally:
            self.depth -= 1

    def nested(self) -> Expr:
        if self.at("keyword", "not"):
            self.i += 1
            return Not(self.not_expr())
        if self.at("op", "("):
            self.i += 1
            expr = self.or_expr()
            token = self.take("')'")
            if token[1] != ")":
                raise self.fail(f"expected ')', got {token[1]!r}", token[2])
            return expr
        raise AssertionError("not_expr calls nested only before 'not' or '('")

    def test(self) -> Expr:
        left = self.operand()
        token = self.peek()
        if token is None:
            raise self.fail("ends too early: expected a comparison (==, !=, <, <=, >, >=) or "
                            "'in'", None)
        if token[0] == "keyword" and token[1] in ("in", "not"):
            if not isinstance(left, Column):
                raise self.fail("'in' needs a column on its left", token[2])
            self.i += 1
            negated = token[1] == "not"
            if negated:
                nxt = self.take("'in'")
                if nxt[1] != "in":
                    raise self.fail(f"expected 'in' after 'not', got {nxt[1]!r}", nxt[2])
            return In(left.name, tuple(self.literal_list()), negated)
        if token[0] != "op" or token[1] not in _COMPARISONS:
            raise self.fail(f"expected a comparison (==, !=, <, <=, >, >=) or 'in', got "
                            f"{token[1]!r}", token[2])
        self.i += 1
        right = self.operand()
        after = self.peek()
        if after is not None and after[0] == "op" and after[1] in _COMPARISONS:
            raise self.fail("chained comparisons are not supported: write 'a < x and x < b'",
                            after[2])
        return Compare(token[1], left, right)

    def literal_list(self) -> list[Scalar]:
        token = self.take("'['")
        if token[1] != "[" or token[0] != "op":
            raise self.fail(f"expected '[' after 'in', got {token[1]!r}", token[2])
        values: list[Scalar] = []
        while not self.at("op", "]"):
            operand = self.operand()
            if not isinstance(operand, Literal):
                raise self.fail(f"a list holds numbers and strings, not the column "
                                f"{operand.name!r}", self.tokens[self.i - 1][2])
            values.append(operand.value)
            if self.at("op", ","):
                self.i += 1
            elif not self.at("op", "]"):
                token = self.take("']'")
                raise self.fail(f"expected ',' or ']', got {token[1]!r}", token[2])
        self.i += 1
        return values

    def operand(self) -> Column | Literal:
        kind, value, at = self.take("a column, number or string")
        if kind == "op" and value == "-":
            nkind, nvalue, nat = self.take("a number after '-'")
            if nkind != "number":
                raise self.fail(f"expected a number after '-', got {nvalue!r}", nat)
            return Literal(-self.number(nvalue, nat))
        if kind == "number":
            return Literal(self.number(value, at))
        if kind == "name":
            return Column(value)
        if kind == "backtick":
            if len(value) == 2:
                raise self.fail("empty column name ``", at)
            return Column(value[1:-1])
        if kind == "string":
            return Literal(_unescape(value, self, at))
        if kind == "keyword" and value in ("true", "false"):
            return Literal(value == "true")
        raise self.fail(f"expected a column, number or string, got {value!r}", at)

    def number(self, text: str, at: int) -> int | float:
        if not re.fullmatch(r"[0-9]+", text):
            number = float(text)
            if not math.isfinite(number):
                raise self.fail(f"the number {text} is too large for a float (it would be "
                                f"{number}): write a finite number", at)
            return number
        try:
            return int(text)
        except ValueError:  # past sys.get_int_max_str_digits()
            raise self.fail(f"a number of {len(text)} digits is too long", at) from None


def _quoted(text: str) -> str:
    """`repr(text)`, cut to a length a message can quote."""
    quoted = repr(text)
    return quoted if len(quoted) <= 200 else f"{quoted[:196]} ..."


def _unescape(token: str, parser: _Parser, at: int) -> str:
    body = token[1:-1]
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            nxt = body[i + 1]  # the tokenizer guarantees a character after a backslash
            if nxt not in _ESCAPES:
                raise parser.fail(f"unknown escape \\{nxt} in a string (known: \\\\ \\' \\\" "
                                  "\\n \\t)", at + i + 1)
            out.append(_ESCAPES[nxt])
            i += 2
        else:
            out.append(char)
            i += 1
    return "".join(out)
