"""What evaluating a law reads of it, below both the law model and its evaluators.

`lawfile.Law` (the model) calls `predict` and `compiled` (the evaluators), which take a
`LawLike`: any object with the law's fields, as `Law` has them. Neither evaluator imports the
model, so the model's module sits above them and nothing reaches back up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from lawkit.lawfiles.where import WhereMapping


class LawLike(Protocol):
    """One host law as `predict` and `compiled` read it (`lawfile.Law` is one)."""

    @property
    def name(self) -> str: ...
    @property
    def target(self) -> str: ...
    @property
    def terms(self) -> dict[str, float]: ...
    @property
    def where(self) -> WhereMapping | None: ...
    @property
    def filter(self) -> str | None: ...
    @property
    def domain(self) -> dict[str, list[float]] | None: ...

    def columns(self) -> list[str]:
        """The feature columns the terms use, in first-use order."""
        ...

    def row_function(self, on_domain: str, *, stacklevel: int) -> Callable[[Mapping[str, Any]],
                                                                           Any]:
        """The law as a plain Python function of one row, built once per `on_domain`."""
        ...
