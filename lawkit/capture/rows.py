"""What a capture row may hold: column names, and features that lawkit's reader takes back."""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Sequence

from lawkit.errors import CaptureError

MAX_NUMBER = 1e150
"""The largest magnitude of a number lawkit writes and reads (a fit squares values, and
`lawkit.fitting`'s reader imports this limit): the writer refuses what the reader refuses."""


def names_of(names: Sequence[str], what: str) -> tuple[str, ...]:
    """`names` as a tuple of column names, each once; a CaptureError naming `what` else."""
    if isinstance(names, str):
        raise CaptureError(f"{what}: expected a sequence of column names, got the string "
                           f"{names!r} (write ({names!r},))")
    out = tuple(names)
    for name in out:
        if not isinstance(name, str) or not name.isidentifier():
            raise CaptureError(f"{what}: {name!r} is not a column name (letters, digits and "
                               "_, not starting with a digit, as formulas name columns)")
    if len(set(out)) < len(out):
        twice = next(n for n in out if out.count(n) > 1)
        raise CaptureError(f"{what}: {twice!r} is named twice")
    return out


def feature_row(values: dict[str, float | int], declared: tuple[str, ...],
                ) -> list[float | int] | str:
    """A step's features as plain ints and floats in declared order, or what is wrong with
    them, in words."""
    row: list[float | int] = []
    for name in declared:
        if name not in values:
            return f"feature {name!r} missing (give it to cap.step(...) or cap.set(...))"
        value = values[name]
        kind = type(value)
        # A plain number in range, the usual case, costs two comparisons (NaN fails them).
        if (kind is float or kind is int) and -MAX_NUMBER <= value <= MAX_NUMBER:
            row.append(value)
            continue
        number = _plain_number(value)
        if number is None:
            return f"feature {name}={value!r}: expected a number"
        problem = _out_of_range(number)
        if problem is not None:
            return f"feature {name}={_shown(number)}: {problem}"
        row.append(number)
    if len(values) > len(declared):
        extra = sorted(set(values) - set(declared))
        return (f"feature {extra[0]!r} was not declared at open (features: "
                f"{', '.join(declared) or 'none'})")
    return row


def _out_of_range(value: float | int) -> str | None:
    """Why the reader would refuse `value`, or None. It reads every number as a float."""
    try:
        number = float(value)
    except OverflowError:
        return (f"too large for a float (lawkit's reader takes numbers up to ±{MAX_NUMBER:g}: "
                "rescale it, in other units)")
    if not math.isfinite(number):
        return "expected a finite number"
    if abs(number) > MAX_NUMBER:
        return (f"beyond ±{MAX_NUMBER:g}, more than lawkit's reader takes (a fit squares "
                "values): rescale it, in other units")
    return None


def _shown(value: float | int) -> str:
    """`value` for a message: an int of many digits by its size (its repr would fill lines, and
    Python refuses to print one of more than 4,300 digits)."""
    if type(value) is int and value.bit_length() > 100:
        return f"<an int of {value.bit_length()} bits>"
    return repr(value)


def _plain_number(value: object) -> float | int | None:
    """`value` as a plain int or float, whose repr is the number (numpy's scalars, an IntEnum
    and other int or float subclasses print otherwise); None for a bool or a non-number."""
    kind = type(value)
    if kind is float or kind is int:
        return value  # type: ignore[return-value]
    if isinstance(value, bool) or kind.__name__ == "bool_":  # numpy's bool too
        return None
    try:
        return operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        pass
    if not isinstance(value, numbers.Real):
        return None
    try:
        return float(value)
    except OverflowError:  # a Fraction beyond a float: the reader could not take it either
        return math.inf
