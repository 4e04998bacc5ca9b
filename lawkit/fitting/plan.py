"""The plan of a fit: the request checked, the laws to fit (a spec per formula, or per law of
the existing file), the columns they read, and, once the scan has found the `--by` groups,
one law per group.

With `--formula`, each formula gives one spec, or one per group of `--by` values (named
`target[v1,v2]`, each group's values added to `where` as typed in the captures:
docs/law-files.md); with none, every law of the existing `--out` file is refitted from its own
target, terms, where and filter.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lawkit.config import Workspace, digest_problem
from lawkit.errors import FitError, printable
from lawkit.fitting.captures.chunks import ColumnSpec
from lawkit.fitting.captures.files import Capture
from lawkit.fitting.captures.tracemap import mapping_for
from lawkit.fitting.crossval import cv_column, parse_cv
from lawkit.fitting.formula import parse_formula
from lawkit.fitting.methods import NAMES
from lawkit.fitting.request import CURRENT, FitRequest, LawSpec
from lawkit.keying.check import is_law_file_name
from lawkit.lawfiles import lawfile
from lawkit.lawfiles.where import And, Expr, format_literal, parse_where

if TYPE_CHECKING:
    from lawkit.fitting.scan import Scan

def check_request(request: FitRequest, ws: Workspace) -> None:
    """Refuse, before any capture is read, what the fit could not honour."""
    if request.method is not None and request.method not in NAMES:
        raise FitError(f"--method {request.method}: expected one of {', '.join(NAMES)}")
    if request.holdout is not None and not 0.0 < request.holdout < 1.0:
        raise FitError(f"--holdout {request.holdout}: expected a fraction between 0 and 1 "
                       "(0.2 holds out a fifth of the rows)")
    if not request.formulas:
        for flag, given in (("--by", request.by), ("--where", request.where),
                            ("--name", request.name)):
            if given:
                raise FitError(f"{flag} needs --formula: with no --formula, each law of the "
                               "file is refitted from its own target, terms, where and filter")
    if request.name is not None:
        if len(request.formulas) > 1 or request.by:
            raise FitError("--name names a single law: with several --formula or with --by, "
                           "laws are named after their target (and group values)")
        if not request.name.strip():
            raise FitError("--name: expected a non-empty name")
        _check_text("--name", request.name)
    for key, value in request.labels.items():
        _check_text("--label", f"{key}={value}")
    if request.cv is not None:
        parse_cv(request.cv)
        if request.holdout is not None:
            raise FitError("--cv and --holdout both hold rows out: choose one (--cv scores "
                           "every row once, on a fit that did not see it)")
    if request.chunk_rows is not None and request.chunk_rows < 1:
        raise FitError("chunk_rows must be at least 1")
    captured_on = request.captured_on
    if captured_on is not None and captured_on != CURRENT and \
            (problem := digest_problem(captured_on, ws.digest.length)) is not None:
        raise FitError(f"--captured-on {printable(repr(captured_on))}: {problem} (or 'current')")


def check_out(out: Path, ws: Workspace) -> str | None:
    """Refuse an `--out` that is not a law file name (`*.yaml` or `*.yml`); a file outside the
    workspace's laws folder is written where asked, and the note returned says that `lawkit
    check` will not read it (None: below the laws folder, or no workspace at all)."""
    shown = ws.rel(out)
    if not is_law_file_name(out.name):
        raise FitError(f"--out {shown}: a law file is named *.yaml or *.yml, the only files "
                       f"lawkit check reads: --out {ws.rel(out.with_suffix('.yaml'))}")
    if ws.config_path is None:
        return None  # no workspace: a first fit goes where it is told
    try:
        out.resolve().relative_to(ws.laws.resolve())
    except ValueError:
        return (f"--out {shown} is outside the laws folder {ws.rel(ws.laws)}: lawkit check "
                "will not read it")
    return None


def _check_text(flag: str, value: str) -> None:
    """A value the law file stores is text: on POSIX an argument's byte that is not UTF-8
    arrives as a lone surrogate, which no YAML file can hold."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        byte = ord(value[exc.start]) - 0xDC00
        hint = f"the byte 0x{byte:02x}" if 0x80 <= byte <= 0xFF else "a character"
        raise FitError(f"{flag} {printable(repr(value))}: {hint} is not UTF-8 text; law "
                       "files are UTF-8: give the name in UTF-8") from None


def load_existing(out: Path, shown: str, ws: Workspace) -> lawfile.LawFile | None:
    """The existing `--out` file, None when there is none (a fit then writes a new one)."""
    if not out.exists() and not out.is_symlink():
        return None
    return lawfile.load(out, key=ws.digest.key, shown_as=shown)


def plan_specs(request: FitRequest, existing: lawfile.LawFile | None) -> list[LawSpec]:
    """The laws to fit, before `--by` groups are known (a spec per formula, or per law of the
    existing file when there is no formula)."""
    if not request.formulas:
        if existing is None:
            raise FitError(f"no --formula and {request.out} does not exist: give at least one "
                           "--formula to fit, or --out an existing law file to refit")
        return [_refit_spec(law, request) for law in existing.host.laws]
    where_expr: Expr | None = parse_where(request.where) if request.where else None
    specs = []
    for text in request.formulas:
        formula = parse_formula(text)
        selection, bounds = split_bounds(where_expr, formula.columns())
        mapping = selection.as_mapping() if selection is not None else None
        specs.append(LawSpec(
            name=request.name or formula.target, target=formula.target, terms=formula.terms,
            where=mapping or None, filter=None if selection is None or mapping is not None
            else str(selection), method=request.method or "ols", weight=request.weight,
            bounds=bounds))
    return specs


def _refit_spec(law: lawfile.Law, request: FitRequest) -> LawSpec:
    """The spec that refits a law of the file: its `auto` terms searched again
    (`fit.breakpoints`), its rows bounded again (`fit.bounds`)."""
    stats = law.fit or {}
    origin = stats.get("breakpoints")
    origin = origin if isinstance(origin, dict) else {}
    return LawSpec(name=law.name, target=law.target,
                   terms=tuple(str(origin.get(t, t)) for t in law.terms),
                   where=dict(law.where) if law.where else None, filter=law.filter,
                   method=request.method or str(stats.get("method", "ols")),
                   weight=request.weight or _str_or_none(stats.get("weight")),
                   bounds=_str_or_none(stats.get("bounds")))


def split_bounds(expr: Expr | None, features: Sequence[str]) -> tuple[Expr | None, str | None]:
    """A `--where` as (the selection, the bounds): the conditions of its top-level conjunction
    that read only the law's feature columns bound its domain (docs/fitting.md); the
    others select its rows."""
    if expr is None:
        return None, None
    parts = expr.items if isinstance(expr, And) else [expr]
    bound = [p for p in parts if p.columns() and set(p.columns()) <= set(features)]
    if not bound:
        return expr, None
    rest = [p for p in parts if p not in bound]
    bounds = str(bound[0]) if len(bound) == 1 else str(And(bound))
    if not rest:
        return None, bounds
    return (rest[0] if len(rest) == 1 else And(rest)), bounds


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def column_spec(specs: Sequence[LawSpec], request: FitRequest, ws: Workspace,
                found: Sequence[Capture] = ()) -> ColumnSpec:
    """The columns the laws read and what each must hold (`ColumnSpec`), with the trace
    mapping where a trace is among the captures `found`."""
    numbers: dict[str, None] = {}
    targets: dict[str, None] = {}
    weights: dict[str, None] = {}
    labels: dict[str, None] = {}
    for spec in specs:
        numbers.update(dict.fromkeys(spec.numbers()))
        targets[spec.target] = None
        labels.update(dict.fromkeys(spec.selectors()))
        if spec.weight:
            weights[spec.weight] = None
    labels.update(dict.fromkeys(request.by))
    column = cv_column(request)
    if column is not None:
        labels[column] = None
    key = ws.digest.key
    return ColumnSpec(
        numbers=tuple(numbers), labels=tuple(c for c in labels if c not in numbers and c != key),
        digest=key, digest_length=ws.digest.length,
        nonnegative=() if request.allow_negative else tuple(targets), weights=tuple(weights),
        trace=mapping_for(ws, request.trace_map, found))


def expand(specs: Sequence[LawSpec], scan: Scan, request: FitRequest) -> list[LawSpec]:
    """One law per spec, or per group of `--by` values; an empty selection is an error."""
    laws = []
    for i, spec in enumerate(specs):
        if not scan.selected.get(i):
            raise _empty_selection(spec, scan)
        if not request.by:
            laws.append(spec)
            continue
        for key in scan.groups.get(i, []):
            where = dict(spec.where or {})
            where.update(zip(request.by, key, strict=True))
            name = f"{spec.target}[{','.join(_name_part(v) for v in key)}]"
            laws.append(replace(spec, name=name, where=where))
    return laws


def _name_part(value: Any) -> str:
    if isinstance(value, str):
        return value
    return format_literal(value)


def _empty_selection(spec: LawSpec, scan: Scan) -> FitError:
    selection = spec.selection()
    if not scan.records:
        return FitError(f"law {spec.name}: the captures hold no rows")
    return FitError(f"law {spec.name}: no capture row matches where {selection!r} (of "
                    f"{scan.records} rows read): check the values with the captures' own "
                    "spelling and types")


def check_names(names: Sequence[str]) -> None:
    """Two laws of one fit may not share a name."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise FitError(f"two laws would be named {name!r}: give each formula its own "
                           "target, fit them into separate files, or use --name for one")
        seen.add(name)


__all__ = ["check_names", "check_request", "column_spec", "expand", "load_existing",
           "plan_specs", "split_bounds"]
