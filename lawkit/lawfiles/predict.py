"""Evaluating a law: `sum(coef * product of columns)` over a table, an array mapping or scalars.

A simulator asks a law about one step at a time (a mapping of scalars: plain Python floats, no
numpy on that path) or about many rows at once (a DataFrame or a mapping of arrays: numpy
passes over blocks of rows, no per-row Python). A row is outside the law when a feature lies
outside the law's `domain` (the range of every feature it was fitted on) or, where the data
holds the columns of the law's `where`/`filter`, when that selection does not pick it
(docs/law-files.md: predict applies both). Such rows are still predicted; the caller is told
with a `LawDomainWarning`, or gets the mask.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

from lawkit.errors import CaptureError

# The warning and errors are predict's to name too (lawkit re-exports them from here).
from lawkit.lawfiles.predicterrors import LawDomainError as LawDomainError
from lawkit.lawfiles.predicterrors import LawDomainWarning as LawDomainWarning
from lawkit.lawfiles.predicterrors import MissingColumnError as MissingColumnError
from lawkit.lawfiles.predicterrors import format_number
from lawkit.lawfiles.terms import Factor, parse_term

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from lawkit.lawfiles.lawtypes import LawLike

    FloatArray = npt.NDArray[np.float64]
    BoolArray = npt.NDArray[np.bool_]

OnDomain = Literal["warn", "ignore", "mask", "raise"]
_ON_DOMAIN = ("warn", "ignore", "mask", "raise")


def predict(law: LawLike, data: Any, *, on_domain: OnDomain = "warn", stacklevel: int = 2) -> Any:
    """The law's predictions for `data`; see `Law.predict` for the arguments and results."""
    if on_domain not in _ON_DOMAIN:
        raise ValueError(f"on_domain must be one of {', '.join(_ON_DOMAIN)}, got {on_domain!r}")
    value: float | FloatArray
    outside: bool | BoolArray
    if isinstance(data, Mapping) and _all_scalars(data):
        value, outside = _predict_scalar(law, data)
    else:
        value, found = _predict_arrays(law, data, check=on_domain != "ignore",
                                       mask=on_domain == "mask")
        outside = False if found is None else found
    if on_domain == "mask":
        return value, outside
    if on_domain != "ignore" and _any(outside):
        message = outside_message(law, data, outside)
        if on_domain == "raise":
            raise LawDomainError(message)
        warnings.warn(message, LawDomainWarning, stacklevel=stacklevel)
    return value


# Rows per block: a block of every column, the output and the scratch (1 MiB each) stay in the
# CPU's last-level cache between the passes, so each column is read from memory once whatever
# the number of terms. bench/predict.py measured 32K-256K rows: 128K was the fastest, and the
# per-call overhead grows below it.
_BLOCK = 1 << 17

# The evaluation as passes over a block: `ufunc(slots[x], slots[y], slots[z])`, where the slots
# of a block are its output rows, the scratch, each column's rows, each step/hinge factor's
# values and the coefficients (a number stays a number: numpy broadcasts it).
_OUT, _SCRATCH = 0, 1
_Step = tuple[Any, int, int, int]


def _evaluate(law: LawLike, data: Any, *, check_domain: bool) -> tuple[FloatArray, set[str]]:
    """The values, and (when checked) the domain columns holding a value outside their range."""
    import numpy as np

    columns: dict[str, Any] = {name: _array(data, name, law) for name in law.columns()}
    try:
        shape = np.broadcast_shapes(*(c.shape for c in columns.values()), (_length(data),))
    except ValueError:
        lengths = ", ".join(f"{k}: {v.shape[0]}" for k, v in columns.items() if v.ndim)
        raise CaptureError(f"law {law.name!r}: columns of different lengths ({lengths})") from None
    n = shape[0]
    arrays = list(columns.values())
    steps, derived, constants = _program(law, list(columns))
    bounds = [(name, columns[name] if name in columns else _array(data, name, law), low, high)
              for name, (low, high) in (law.domain or {}).items()
              if check_domain and has_column(data, name)]
    out = np.empty(n)
    scratch = np.empty(min(n, _BLOCK))
    strays: set[str] = set()
    smallest, largest = np.minimum.reduce, np.maximum.reduce  # without the method wrappers
    for lo in range(0, n, _BLOCK):
        hi = min(n, lo + _BLOCK)
        slots = [out[lo:hi], scratch[: hi - lo], *[a[lo:hi] if a.ndim else a for a in arrays]]
        slots += [factor.array(slots[column]) for factor, column in derived]
        slots += constants
        for ufunc, x, y, z in steps:
            ufunc(slots[x], slots[y], slots[z])
        for name, values, low, high in bounds:
            # Two reductions per block, on rows the evaluation has just brought into the cache;
            # the mask is built only for a column found outside.
            if name not in strays and values.size:
                rows = values[lo:hi] if values.ndim else values
                if not (low <= smallest(rows) and largest(rows) <= high):
                    strays.add(name)
    return out, strays


def _program(law: LawLike, names: list[str]) -> tuple[list[_Step], list[tuple[Factor, int]],
                                                  list[float]]:
    """The passes that evaluate `law` over a block, the step/hinge factors to compute first
    (each with the slot of its column), and the constants' slot values.

    Term by term in the order written, each product left to right: the order of the scalar path
    (lawkit.lawfiles.compiled), so that both agree to the last bit. An intercept written first
    is added after the next term's product (`c0 + c1*x` as `c1*x + c0`: the same float, one
    pass less); a first term starts the sum, as the scalar path's does, so a -0.0 stays -0.0.
    """
    import numpy as np

    multiply, add = np.multiply, np.add
    terms = [(coef, parse_term(term).factors) for term, coef in law.terms.items()]
    columns = {name: 2 + i for i, name in enumerate(names)}
    factors_at: dict[Factor, int] = {}  # a step/hinge factor's slot, each computed once a block
    derived: list[tuple[Factor, int]] = []
    for _coef, factors in terms:
        for factor in factors:
            if factor.kind != "column" and factor not in factors_at:
                factors_at[factor] = 2 + len(names) + len(derived)
                derived.append((factor, columns[factor.column]))
    constants: list[float] = []

    def constant(value: float) -> int:
        constants.append(value)
        return 2 + len(names) + len(derived) + len(constants) - 1

    def operand(factor: Factor) -> int:
        return columns[factor.column] if factor.kind == "column" else factors_at[factor]

    fused = len(terms) > 1 and not terms[0][1] and bool(terms[1][1])
    steps: list[_Step] = []
    for i, (coef, factors) in enumerate(terms):
        if not factors:  # the intercept
            if i == 0 and not fused:
                steps.append((multiply, constant(coef), constant(1.0), _OUT))
            elif i:
                steps.append((add, _OUT, constant(coef), _OUT))
            continue
        part = _OUT if i == 0 or (i == 1 and fused) else _SCRATCH
        steps.append((multiply, operand(factors[0]), constant(coef), part))
        steps += [(multiply, part, operand(factor), part) for factor in factors[1:]]
        if i == 1 and fused:
            steps.append((add, _OUT, constant(terms[0][0]), _OUT))
        elif i:
            steps.append((add, _OUT, _SCRATCH, _OUT))
    return steps, derived, constants


def _stray_mask(law: LawLike, data: Any, strays: set[str], shape: tuple[int, ...]) -> BoolArray:
    import numpy as np

    outside = np.zeros(shape, dtype=bool)
    for name in strays:
        low, high = (law.domain or {})[name]
        values = _array(data, name, law)
        outside |= ~((values >= low) & (values <= high))
    return outside


def outside_message(law: LawLike, data: Any, outside: Any) -> str:
    """`law 'x': 3 of 1000 rows outside its domain (num_seqs 300 > 256, ...)`."""
    if isinstance(data, Mapping) and all(_is_scalar(v) for v in data.values()):
        from lawkit.lawfiles.compiled import outside_message as row_message

        return row_message(law, data)
    import numpy as np

    mask = np.asarray(outside, dtype=bool)
    count, n = int(mask.sum()), mask.size
    details = []
    for name, (low, high) in (law.domain or {}).items():
        if not has_column(data, name):
            continue
        values = np.asarray(_array(data, name, law), dtype=np.float64)
        values = np.broadcast_to(values, mask.shape)[mask]
        below, above = values[values < low], values[values > high]
        if below.size:
            details.append(f"{name} {format_number(below.min())} < {format_number(low)}")
        if above.size:
            details.append(f"{name} {format_number(above.max())} > {format_number(high)}")
        if np.isnan(values).any():
            details.append(f"{name} NaN")
    unselected = _unselected(law, data, mask.shape)
    if unselected is not None and (unselected & mask).any():
        from lawkit.lawfiles.where import format_where

        picked = int((unselected & mask).sum())
        details.append(f"{'' if n == 1 else f'{picked} '}not selected by "
                       f"{format_where(law.where, law.filter)}")
    rows = "the row is" if n == 1 else f"{count} of {n} rows are"
    return f"law {law.name!r}: {rows} outside its domain ({'; '.join(details)})"


def _predict_scalar(law: LawLike, data: Mapping[str, Any]) -> tuple[float, bool]:
    # The simulator's path: the law's generated row function (no numpy), built once per law.
    value, outside = law.row_function("mask", stacklevel=2)(data)
    return value, outside


def _predict_arrays(law: LawLike, data: Any, *, check: bool, mask: bool = True,
                    ) -> tuple[FloatArray, BoolArray | None]:
    """The values and the rows outside; None for "none outside" unless `mask` asks for the
    array (building an all-False mask of a million rows costs a fifth of the evaluation)."""
    values, strays = _evaluate(law, data, check_domain=check)
    if not mask and not strays and not (check and (law.where or law.filter)):
        return values, None
    outside = _stray_mask(law, data, strays, values.shape)
    if check and (law.where or law.filter):
        unselected = _unselected(law, data, values.shape)
        if unselected is not None:
            outside |= unselected
    return values, outside


def _unselected(law: LawLike, data: Any, shape: tuple[int, ...] = (1,)) -> BoolArray | None:
    """The rows the law's where/filter does not select, judged by the parts whose columns the
    data holds (a simulator that picked the law itself passes no `phase` column)."""
    from lawkit.lawfiles.where import law_columns, law_mask

    parts = [(law.where, None), (None, law.filter)]
    present = [(w, f) for w, f in parts if (w or f) and all(has_column(data, c)
                                                            for c in law_columns(w, f))]
    if not present:
        return None
    if isinstance(data, Mapping):  # scalars and arrays alike, as rows of one length
        import numpy as np

        data = {k: np.broadcast_to(np.asarray(v), shape) for k, v in data.items()}
    selected = law_mask(present[0][0], present[0][1], data)
    for where, filter in present[1:]:
        selected &= law_mask(where, filter, data)
    return ~selected


def _any(outside: Any) -> bool:
    return bool(outside) if isinstance(outside, bool) else bool(outside.any())


def _all_scalars(data: Mapping[str, Any]) -> bool:
    for value in data.values():
        if type(value) not in _SCALARS and not _is_scalar(value):
            return False
    return True


_SCALARS = {float, int, str}


def _is_scalar(value: Any) -> bool:
    return isinstance(value, (int, float, str)) or (hasattr(value, "ndim") and value.ndim == 0)


def has_column(data: Any, name: str) -> bool:
    """Whether `data` (a DataFrame, a mapping, anything with `in`) holds column `name`."""
    try:
        return name in data
    except TypeError:
        return False


def _missing(name: str, law: LawLike) -> MissingColumnError:
    return MissingColumnError(f"law {law.name!r} needs column {name!r}, which the data does not "
                              "hold")


def _array(data: Any, name: str, law: LawLike) -> Any:
    import numpy as np

    try:
        raw = data[name]
    except KeyError:
        raise _missing(name, law) from None
    values = raw.to_numpy() if hasattr(raw, "to_numpy") else np.asarray(raw)
    if values.dtype.kind not in "iuf":
        raise CaptureError(f"law {law.name!r}: column {name!r} holds {values.dtype} values, not "
                           "numbers")
    if values.ndim > 1:
        raise CaptureError(f"law {law.name!r}: column {name!r} has shape {values.shape}: pass "
                           "one value or one array of rows per column")
    return values


def _length(data: Any) -> int:
    if hasattr(data, "shape") and hasattr(data, "columns"):
        return int(data.shape[0])
    return max((len(v) for v in data.values() if not _is_scalar(v)), default=1)
