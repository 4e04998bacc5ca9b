"""The interfaces a fit is written against, below every module that uses them: a `Runner`
(where the rows are read and folded) is given to `fit` and `crossval`, and implemented by
`local` and `distributed`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from lawkit.fitting.report import FittedLaw
    from lawkit.fitting.request import FitRequest, LawSpec
    from lawkit.fitting.rows import Split
    from lawkit.fitting.scan import Scan


class Runner(Protocol):
    """Where the rows are read and folded: this process, or a cluster
    (`lawkit.fitting.distributed`)."""

    def scan(self, specs: Sequence[LawSpec], request: FitRequest) -> Scan:
        """One pass over the selection and digest columns of every capture."""

    def fit(self, laws: Sequence[LawSpec], request: FitRequest, split: Split | None,
            ) -> list[FittedLaw]:
        """Every law fitted, in order."""

    def hashes(self) -> list[str]:
        """The sha256 of every capture file, in order."""

    @property
    def passes(self) -> dict[str, int]:
        """Reads of the rows so far: by the scan (`scan`) and per law (or, on a cluster, for
        all laws together: `fit`)."""


__all__ = ["Runner"]
