"""One line, the right exit code, never a traceback (issue 14 items 9 to 13)."""

from __future__ import annotations

import pytest

from lawkit.errors import FitError
from lawkit.lawfiles.where import parse_where


@pytest.mark.parametrize("text", ["tp in [1, 1e999]", "tp < -1e400", "tp == 1.5e308000"])
def test_a_non_finite_where_literal_is_refused(text: str) -> None:
    with pytest.raises(FitError, match="too large for a float"):
        parse_where(text)
