"""The mapping from a Chrome-format trace to capture records: `[trace]` in lawkit.toml
(`[tool.lawkit.trace]` in pyproject.toml), or a TOML file of its own (`fit --trace-map`).

    [trace]
    regions = { schedule_s = "schedule", sample_s = { prefix = "sample" } }
    ranks = "rows"            # a row per rank; "max": a row per step, each region's max
    step_id = "step"          # match steps across ranks by this args key (default: order)
    digest = "atom"           # the trace's top-level key holding the digest (optional)

    [[trace.steps]]
    kind = "decode"           # the value of the `kind` column for these steps
    prefix = "decode["        # which ranges are steps: name, prefix, glob or regex
    features = 'decode\\[bs=(?P<batch_size>\\d+)...'   # named groups are features

A range is a step when its name matches a step entry's selector (`name`, `prefix`, `glob` or
`regex`); its features are the named groups of `features` (or of the selector, when it is a
regex), and `args` maps columns to keys of the range's `args`. A step whose name the features
pattern does not match is left out and counted, never guessed.

Standard library only: the workspace config keeps the table as written; it is checked here,
where a trace is read.
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lawkit.config import Workspace
from lawkit.errors import CaptureError, ConfigError
from lawkit.fitting.captures.files import Capture

SELECTORS = ("name", "prefix", "glob", "regex")
_TOP = {"steps", "regions", "ranks", "step_id", "digest", "kind_column", "step_column",
        "rank_column", "categories"}
_STEP = {*SELECTORS, "kind", "features", "args", "defaults"}
GPU_ANNOTATIONS = "gpu_user_annotation"
"""kineto's copy of each `record_function` range on the GPU stream it ran on: left out unless
`categories` names it, so that a step is not counted once more as a rank of its own."""


@dataclass(frozen=True)
class Selector:
    """Which ranges a step or region is: by exact name, prefix, glob or regular expression."""

    how: str
    text: str
    regex: re.Pattern[str]

    def shown(self) -> str:
        """The selector as the mapping writes it, for messages."""
        return f"{self.how} {self.text!r}"


@dataclass(frozen=True)
class StepKind:
    """One `[[trace.steps]]` entry."""

    kind: str
    select: Selector
    features: re.Pattern[str] | None
    """The pattern whose named groups are features (the selector's, when it is a regex)."""
    args: dict[str, str] = field(default_factory=dict)
    """Feature columns taken from the range's `args`: column -> args key."""
    defaults: dict[str, Any] = field(default_factory=dict)
    """A feature's value where its group did not take part in the match (`p=` left out)."""

    def columns(self) -> list[str]:
        """The feature columns of this kind."""
        groups = list(self.features.groupindex) if self.features is not None else []
        return list(dict.fromkeys([*groups, *self.args, *self.defaults]))


@dataclass(frozen=True)
class TraceMapping:
    """How a trace becomes rows: one a step (per rank, or the max over ranks)."""

    steps: tuple[StepKind, ...]
    regions: dict[str, Selector]
    where: str
    """Where the mapping was written, for messages (`lawkit.toml [trace]`)."""
    ranks: str = "rows"
    step_id: str | None = None
    digest: str | None = None
    kind_column: str = "kind"
    step_column: str = "step_s"
    rank_column: str = "rank"
    categories: tuple[str, ...] | None = None

    def features(self) -> list[str]:
        """Every feature column, in first-mention order."""
        return list(dict.fromkeys(c for step in self.steps for c in step.columns()))

    def columns(self) -> list[str]:
        """The columns of a row: step, rank, kind, features, the step's time, regions."""
        return ["step", self.rank_column, self.kind_column, *self.features(),
                self.step_column, *self.regions]

    def wants_category(self, category: Any) -> bool:
        """Whether a range of this category may be a step or region."""
        if self.categories is not None:
            return bool(category in self.categories)
        return bool(category != GPU_ANNOTATIONS)


def load_trace_map(path: Path, shown: str) -> TraceMapping:
    """The mapping in a TOML file of its own: a `[trace]` table, or its keys at top level."""
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=shown) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"not valid TOML: {exc}", path=shown) from None
    table = doc.get("trace", doc)
    return trace_mapping(table, f"{shown} [trace]" if "trace" in doc else shown)


def trace_mapping(table: Any, where: str) -> TraceMapping:
    """The mapping a `[trace]` table writes; a ConfigError naming `where` and the key."""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}: expected a table")
    _unknown(table, _TOP, where)
    steps = table.get("steps")
    if isinstance(steps, dict):
        steps = [steps]
    if not isinstance(steps, list) or not steps:
        raise ConfigError(f"{where}: steps: expected one [[trace.steps]] entry or more, each "
                          "naming which ranges are steps (name, prefix, glob or regex), e.g. "
                          "{ glob = \"ProfilerStep#*\" }")
    kinds = tuple(_step(entry, f"{where} steps[{i}]") for i, entry in enumerate(steps))
    regions = table.get("regions", {})
    if not isinstance(regions, dict):
        raise ConfigError(f"{where}: regions: expected a table of column = name or "
                          "{ prefix | glob | regex = ... }")
    mapping = TraceMapping(
        steps=kinds, where=where,
        regions={column: _selector(value, f"{where} regions.{column}")
                 for column, value in regions.items()},
        ranks=_choice(table, "ranks", ("rows", "max"), "rows", where),
        step_id=_text(table, "step_id", None, where),
        digest=_text(table, "digest", None, where),
        kind_column=_text(table, "kind_column", "kind", where) or "kind",
        step_column=_text(table, "step_column", "step_s", where) or "step_s",
        rank_column=_text(table, "rank_column", "rank", where) or "rank",
        categories=_categories(table, where))
    columns = mapping.columns()
    twice = sorted({c for c in columns if columns.count(c) > 1})
    if twice:
        raise ConfigError(f"{where}: column {twice[0]!r} is named twice (a feature, region, or "
                          "the step, rank, kind or step-time column): rename one")
    return mapping


def _step(entry: Any, where: str) -> StepKind:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where}: expected a table such as {{ kind = \"decode\", prefix = "
                          "\"decode[\", features = '...' }")
    _unknown(entry, _STEP, where)
    select = _selector({k: v for k, v in entry.items() if k in SELECTORS}, where)
    features = None
    if "features" in entry:
        features = _compile(entry["features"], f"{where} features")
    elif select.how == "regex":
        features = select.regex
    args = entry.get("args", {})
    if not isinstance(args, dict) or not all(isinstance(v, str) for v in args.values()):
        raise ConfigError(f"{where} args: expected a table of column = \"args key\"")
    defaults = entry.get("defaults", {})
    if not isinstance(defaults, dict) or not all(
            isinstance(v, (int, float, str)) and not isinstance(v, bool)
            for v in defaults.values()):
        raise ConfigError(f"{where} defaults: expected a table of column = number or text")
    kind = entry.get("kind", select.text)
    if not isinstance(kind, str) or not kind:
        raise ConfigError(f"{where} kind: expected a non-empty string")
    return StepKind(kind=kind, select=select, features=features, args=dict(args),
                    defaults=dict(defaults))


def _selector(value: Any, where: str) -> Selector:
    if isinstance(value, str):
        value = {"name": value}
    given = {k: v for k, v in value.items() if k in SELECTORS} if isinstance(value, dict) else {}
    if len(given) != 1 or (isinstance(value, dict) and len(value) != 1):
        raise ConfigError(f"{where}: expected one of {', '.join(SELECTORS)} (a name, or e.g. "
                          "{ glob = \"ProfilerStep#*\" })")
    (how, text), = given.items()
    if not isinstance(text, str) or not text:
        raise ConfigError(f"{where}.{how}: expected a non-empty string")
    if how == "regex":
        return Selector(how, text, _compile(text, f"{where}.regex"))
    source = {"name": re.escape(text), "prefix": re.escape(text) + ".*",
              "glob": fnmatch.translate(text)}[how]
    return Selector(how, text, re.compile(source, re.DOTALL))


def _compile(text: Any, where: str) -> re.Pattern[str]:
    if not isinstance(text, str) or not text:
        raise ConfigError(f"{where}: expected a Python regular expression")
    try:
        return re.compile(text)
    except re.error as exc:
        raise ConfigError(f"{where}: not a valid regular expression: {exc}") from None


def _unknown(table: dict[str, Any], known: set[str], where: str) -> None:
    for key in table:
        if key not in known:
            raise ConfigError(f"{where}: unknown key {key!r} (known: "
                              f"{', '.join(sorted(known))})")


def _text(table: dict[str, Any], key: str, default: str | None, where: str) -> str | None:
    value = table.get(key, default)
    if value is not None and (not isinstance(value, str) or not value):
        raise ConfigError(f"{where}: {key}: expected a non-empty string, got {value!r}")
    return value


def _choice(table: dict[str, Any], key: str, choices: tuple[str, ...], default: str,
            where: str) -> str:
    value = table.get(key, default)
    if value not in choices:
        raise ConfigError(f"{where}: {key}: expected {' or '.join(map(repr, choices))}, got "
                          f"{value!r}")
    return str(value)


def _categories(table: dict[str, Any], where: str) -> tuple[str, ...] | None:
    value = table.get("categories")
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: categories: expected a list of event categories, e.g. "
                          "[\"user_annotation\"]")
    return tuple(value)


def mapping_for(ws: Workspace, trace_map: Path | None,
                captures: Sequence[Capture]) -> TraceMapping | None:
    """The mapping a command reads the traces among `captures` by: `--trace-map FILE`, else
    the workspace's `[trace]`; None when no capture is a trace, or neither is given."""
    if not any(c.format == "trace" for c in captures):
        return None
    if trace_map is not None:
        return load_trace_map(trace_map, ws.rel(trace_map))
    if ws.trace is None:
        return None
    name = ws.config_path.name if ws.config_path is not None else "lawkit.toml"
    section = "[tool.lawkit.trace]" if name == "pyproject.toml" else "[trace]"
    return trace_mapping(ws.trace, f"{name} {section}")


def no_mapping(shown: str) -> CaptureError:
    """The error for a trace read without a mapping."""
    return CaptureError("a trace needs a mapping from its ranges to steps, features and regions: "
                        "write a [trace] table (steps = [...], regions = [...]) in lawkit.toml or "
                        "pass one as --trace-map FILE (trace_map= from Python)", path=shown)


__all__ = ["GPU_ANNOTATIONS", "SELECTORS", "Selector", "StepKind", "TraceMapping",
           "load_trace_map", "mapping_for", "no_mapping", "trace_mapping"]
