"""What `check` finds in one law file, as plain data: its problems and the facts its cache keeps.

Below both `check` (which makes them) and `checkcache` (which stores them between runs), so that
the cache never imports the command it serves.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lawkit.keying.annotations import annotation
from lawkit.lawfiles.fixes import REKEY_FIX, stale_message


@dataclass(frozen=True)
class Problem:
    """One thing wrong with one law file; `fix` is the command that fixes it, where one does."""

    path: str
    line: int | None
    kind: str  # invalid, stale, unexplained, body-edited, duplicate
    message: str
    fix: str | None = None

    def text(self) -> str:
        """`laws/x.yaml:6: stale: names 59e9ff5a, the engine is at 68ad8fc6`."""
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.kind}: {self.message}"

    def github(self) -> str:
        """A GitHub workflow `::error` annotation."""
        return annotation("error", f"{self.kind}: {self.message}", file=self.path,
                          line=self.line)


@dataclass(frozen=True)
class FileFacts:
    """What `check` learns from one file's bytes, whatever the engine's digest: the digest it
    names and that line (None for an invalid file), its problems other than staleness, and its
    identity (its labels) with their line. Plain data: `checkcache` keeps it between runs."""

    named: str | None
    key_line: int | None
    problems: tuple[Problem, ...]
    identity: str | None = None
    labels_line: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The facts as plain data: what the cache stores (built by hand, faster than `asdict`)."""
        return {"named": self.named, "key_line": self.key_line,
                "problems": [dict(vars(problem)) for problem in self.problems],
                "identity": self.identity, "labels_line": self.labels_line}

    def problems_at(self, shown: str, digest: str) -> list[Problem]:
        """The file's problems with the engine at `digest`: stale first, then the others."""
        if self.named is None or self.named == digest:
            return list(self.problems)
        stale = Problem(shown, self.key_line, "stale", stale_message(self.named, digest),
                        REKEY_FIX)
        return [stale, *self.problems]
