"""A law as a plain Python function of one row: what `Law.compile()` returns and what
`Law.predict` runs on a mapping of scalars.

A simulator prices every forward step with a law (millions of calls), so the row path
is generated once per law as Python source, with the terms, knots, domain bounds and `where`
values bound as closure constants: no numpy, no term parsing, no per-call allocation beyond the
floats. The value is `sum(coef * product of factors)` accumulated from 0.0 in the order the
terms are written, each product `((coef * f1) * f2) ...` left to right, which is the order the
array path uses too, so that scalars, the compiled form and arrays agree to the last bit.

A row is outside when a domain column it holds lies outside its range (NaN included) or, where
the row holds the columns of the law's `where` (or of its `filter`), when that part does not
select it (docs/law-files.md). Only names of columns (through `repr`) are written into the
generated source; every value is a closure constant, so a law file cannot inject code.
"""

from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from lawkit.errors import CaptureError, FitError
from lawkit.lawfiles.predicterrors import (
    LawDomainError,
    LawDomainWarning,
    MissingColumnError,
    format_number,
)
from lawkit.lawfiles.terms import parse_term
from lawkit.lawfiles.where import (
    And,
    Column,
    Compare,
    Expr,
    In,
    Literal,
    Not,
    Or,
    _check_kinds,
    _EvalError,
    _Operand,
    _quoted,
    format_where,
    law_columns,
    mapping_expr,
    parse_where,
)

if TYPE_CHECKING:
    from lawkit.lawfiles.lawtypes import LawLike

Row = Mapping[str, Any]
_MODES = ("warn", "ignore", "mask", "raise")
_NUMBER_TYPES = (int, float)


def compile_law(law: LawLike, *, on_domain: str = "warn",
                stacklevel: int = 2) -> Callable[[Row], Any]:
    """The law as `f(row) -> float` (with `on_domain="mask"`, `-> (float, outside)`); see
    `Law.compile`. `stacklevel` is the warning's, counted from the generated function."""
    if on_domain not in _MODES:
        raise ValueError(f"on_domain must be one of {', '.join(_MODES)}, got {on_domain!r}")
    return _Generator(law, on_domain, stacklevel).build()


def row_selected(law: LawLike, row: Row) -> bool | None:
    """Whether the law's `where` and `filter` select `row`, judged by the parts whose columns
    the row holds; None when the row holds the columns of neither."""
    judged: bool | None = None
    for expr in _selection_parts(law):
        if all(c in row for c in expr.columns()):
            selected = _selects(expr, row)
            judged = selected if judged is None else judged and selected
    return judged


def outside_message(law: LawLike, row: Row) -> str:
    """`law 'x': the row is outside its domain (num_seqs 300 > 256; not selected by ...)`:
    what `predict.outside_message` says of one row, without numpy."""
    details = []
    for name, (low, high) in (law.domain or {}).items():
        if name not in row:
            continue
        value = _number(row[name], name, law)
        if math.isnan(value):
            details.append(f"{name} NaN")
        elif value < low:
            details.append(f"{name} {format_number(value)} < {format_number(low)}")
        elif value > high:
            details.append(f"{name} {format_number(value)} > {format_number(high)}")
    if row_selected(law, row) is False:
        details.append(f"not selected by {format_where(law.where, law.filter)}")
    return f"law {law.name!r}: the row is outside its domain ({'; '.join(details)})"


class _Generator:
    def __init__(self, law: LawLike, mode: str, stacklevel: int) -> None:
        self.law = law
        self.mode = mode
        self.stacklevel = stacklevel
        self.constants: dict[str, Any] = {}
        self.lines: list[str] = []
        self.columns: dict[str, str] = {}  # column -> local variable

    def constant(self, value: Any) -> str:
        name = f"k{len(self.constants)}"
        self.constants[name] = value
        return name

    def build(self) -> Callable[[Row], Any]:
        law = self.law
        terms = [(parse_term(t), coef) for t, coef in law.terms.items()]
        for term, _coef in terms:
            for column in term.columns():
                self.columns.setdefault(column, f"x{len(self.columns)}")
        out = self.lines
        if self.columns:
            out.append("    try:")
            out += [f"        {var} = row[{col!r}]" for col, var in self.columns.items()]
            out.append("    except KeyError as exc:")
            out.append("        raise _missing(exc) from None")
            for col, var in self.columns.items():
                out.append(f"    if type({var}) is not float:")
                out.append(f"        {var} = _number({var}, {col!r}, _law)")
        for i, (term, coef) in enumerate(terms):
            parts = [self.constant(coef)]
            for factor in term.factors:
                var = self.columns[factor.column]
                if factor.kind == "column":
                    parts.append(var)
                    continue
                knot = self.constant(factor.knot)
                parts.append(f"(1.0 if {var} > {knot} else 0.0)" if factor.kind == "step" else
                             f"({var} - {knot} if {var} > {knot} else 0.0)")
            # The first term starts the sum (not 0.0 + it): the array path does the same, so
            # that a -0.0 stays -0.0 on both.
            out.append(f"    total {'=' if i == 0 else '+='} {' * '.join(parts)}")
        if self.mode == "ignore":
            out.append("    return total")
        else:
            self.checks()
            if self.mode == "mask":
                out.append("    return total, outside")
            else:
                action = "warn" if self.mode == "warn" else "raise"
                out.append("    if outside:")
                out.append(f"        _{action}(row)")
                out.append("    return total")
        return self.compiled()

    def checks(self) -> None:
        law, out = self.law, self.lines
        bounds = []
        for name, (low, high) in (law.domain or {}).items():
            var = self.columns.get(name)
            lo, hi = self.constant(low), self.constant(high)
            if var is not None:
                bounds.append(f"{lo} <= {var} <= {hi}")
            else:  # a domain column no term reads: judged where the row holds it
                bounds.append(f"({name!r} not in row or "
                              f"{lo} <= _number(row[{name!r}], {name!r}, _law) <= {hi})")
        out.append(f"    outside = not ({' and '.join(bounds)})" if bounds else
                   "    outside = False")
        if law.where:
            self.where_check(law.where)
        if law.filter:
            expr = self.constant(parse_where(law.filter))
            present = " and ".join(f"{c!r} in row" for c in law_columns(None, law.filter))
            test = f"not outside and {present}" if present else "not outside"
            out.append(f"    if {test} and not _selects({expr}, row):")
            out.append("        outside = True")

    def where_check(self, where: Mapping[str, Any]) -> None:
        """Inline equality where the row's values have the literal's kind (the common case);
        anything else goes to the general evaluation, which also raises the kind errors."""
        out = self.lines
        present = " and ".join(f"{c!r} in row" for c in where)
        out.append(f"    if not outside and {present}:")
        fast, tests = [], []
        for i, (column, value) in enumerate(where.items()):
            var = f"w{i}"
            out.append(f"        {var} = row[{column!r}]")
            values = value if isinstance(value, list) else [value]
            kinds = {type(v) for v in values}
            if kinds <= {str}:
                fast.append(f"type({var}) is str")
            elif kinds <= {int, float}:
                fast.append(f"type({var}) in _numbers")
            else:
                fast.append("False")
            if isinstance(value, list):
                tests.append(f"{var} in {self.constant(tuple(value))}")
            else:
                tests.append(f"{var} == {self.constant(value)}")
        expr = self.constant(mapping_expr(where))
        out.append(f"        if {' and '.join(fast)}:")
        out.append(f"            outside = not ({' and '.join(tests)})")
        out.append(f"        elif not _selects({expr}, row):")
        out.append("            outside = True")

    def compiled(self) -> Callable[[Row], Any]:
        law = self.law
        names = ", ".join(["_law", "_missing", "_number", "_numbers", "_selects", "_warn",
                           "_raise", *self.constants])
        source = (f"def _make({names}):\n"
                  "    def law(row):\n"
                  + "".join(f"    {line}\n" for line in self.lines)
                  + "    return law\n")
        namespace: dict[str, Any] = {}
        exec(compile(source, f"<lawkit law {law.name!r}>", "exec"), namespace)

        def missing(exc: KeyError) -> MissingColumnError:
            name = exc.args[0] if exc.args else "?"
            return MissingColumnError(f"law {law.name!r} needs column {name!r}, which the data "
                                      "does not hold")

        stacklevel = self.stacklevel

        def warn(row: Row) -> None:
            warnings.warn(outside_message(law, row), LawDomainWarning, stacklevel=stacklevel + 1)

        def refuse(row: Row) -> None:
            raise LawDomainError(outside_message(law, row))

        function: Callable[[Row], Any] = namespace["_make"](
            law, missing, _number, _NUMBER_TYPES, _selects, warn, refuse, *self.constants.values())
        function.__name__ = function.__qualname__ = "law"
        function.__doc__ = f"Law {law.name!r} ({law.target}) on one row: {self.mode} outside."
        return function


def _selection_parts(law: LawLike) -> list[Expr]:
    parts = []
    if law.where:
        parts.append(mapping_expr(law.where))
    if law.filter:
        parts.append(parse_where(law.filter))
    return parts


def _selects(expr: Expr, row: Row) -> bool:
    """`expr` on one row (every column it reads present), with `Expr.mask`'s kind errors."""
    try:
        return _eval(expr, row)
    except _EvalError as exc:
        raise FitError(f"where {_quoted(str(expr))}: {exc}") from None


_ORDERED = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
            ">": operator.gt, ">=": operator.ge}


def _eval(expr: Expr, row: Row) -> bool:
    # Every part is evaluated, as the array path does, so that a kind error is raised whatever
    # the other parts say.
    if isinstance(expr, Compare):
        left, right = _operand(expr.left, row), _operand(expr.right, row)
        _check_kinds(expr.op, left, right)
        return bool(_ORDERED[expr.op](left.values, right.values))
    if isinstance(expr, In):
        column = _operand(Column(expr.column), row)
        hit = False
        for value in expr.values:
            _check_kinds("in", column, _Operand(value, _kind(value), None))
            hit = hit or bool(column.values == value)
        return hit != expr.negated
    if isinstance(expr, And):
        results = [_eval(item, row) for item in expr.items]
        return all(results)
    if isinstance(expr, Or):
        results = [_eval(item, row) for item in expr.items]
        return any(results)
    if isinstance(expr, Not):
        return not _eval(expr.item, row)
    assert isinstance(expr, Literal)
    return bool(expr.value)


def _operand(node: Column | Literal, row: Row) -> _Operand:
    if isinstance(node, Literal):
        return _Operand(node.value, _kind(node.value), None)
    value = row[node.name]
    return _Operand(value, _kind(value), node.name)


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    dtype = getattr(value, "dtype", None)
    if dtype is not None:
        return "bool" if dtype.kind == "b" else "number" if dtype.kind in "iuf" else "string"
    return "string"


def _number(value: Any, name: str, law: LawLike) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if hasattr(value, "dtype") and value.dtype.kind in "iuf":
            return float(value)
        raise CaptureError(f"law {law.name!r}: column {name!r} is {value!r}, not a number")
    return float(value)



def law_chooser(laws: Sequence[LawLike], *, on_domain: str, shown: str) -> Callable[[Row], Any]:
    """`f(row)`: the first of `laws` whose `where` and `filter` select the row, on the row (see
    `LawFile.compile`)."""
    # the very function `law.compile(on_domain=...)` returns (cached in the law)
    functions = [law.row_function(on_domain, stacklevel=2) for law in laws]
    if len(laws) == 1 and not (laws[0].where or laws[0].filter):
        return functions[0]
    table, columns = _dispatch_table(laws, functions)

    def scan(row: Row) -> Any:
        for law, function in zip(laws, functions, strict=True):
            if row_selected(law, row):
                return function(row)
        if len(laws) == 1 and row_selected(laws[0], row) is None:
            return functions[0](row)
        wanted = list(dict.fromkeys(c for law in laws
                                    for c in law_columns(law.where, law.filter)))
        held = ", ".join(f"{c}={row[c]!r}" for c in wanted if c in row)
        raise LawDomainError(f"{shown}: no law for {laws[0].target} selects the row "
                             f"({held or 'it holds none of ' + ', '.join(wanted)})")

    if table is None:
        return scan
    key_of = operator.itemgetter(*columns)

    def choose(row: Row) -> Any:
        try:
            function = table.get(key_of(row))
        except (KeyError, TypeError):  # a missing column, an unhashable value
            function = None
        return scan(row) if function is None else function(row)

    return choose


def _dispatch_table(laws: Sequence[LawLike], functions: list[Callable[[Row], Any]],
                    ) -> tuple[dict[Any, Callable[[Row], Any]] | None, list[str]]:
    """A lookup from the row's `where` values to the law, when every law's selection is a
    `where` of single values over the same columns (what `fit --by` writes); else None."""
    columns = list(laws[0].where or {})
    table: dict[Any, Callable[[Row], Any]] = {}
    for law, function in zip(laws, functions, strict=True):
        where = law.where or {}
        if law.filter or not columns or list(where) != columns or \
                any(isinstance(v, (list, bool)) for v in where.values()):
            return None, columns
        values = tuple(where.values())
        table.setdefault(values if len(values) > 1 else values[0], function)
    return table, columns
