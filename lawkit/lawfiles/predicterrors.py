"""What evaluating a law raises or warns, shared by the row path (`compiled`) and the array path
(`predict`) so that neither imports the other for it, and the number format of their messages.
"""

from __future__ import annotations

import math

from lawkit.errors import CaptureError


class LawDomainWarning(UserWarning):
    """Rows were predicted outside the domain their law was fitted on."""


class LawDomainError(CaptureError):
    """`on_domain="raise"`: rows lie outside the domain their law was fitted on."""


class MissingColumnError(CaptureError, KeyError):
    """The data lacks a column a law needs (a KeyError too, for `except KeyError` callers)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def format_number(value: float) -> str:
    """A value as the domain messages write it: `256`, not `256.0`; `0.5`, `1e-200`, `nan`."""
    value = float(value)
    return str(int(value)) if value.is_integer() and math.isfinite(value) else f"{value:g}"
