"""Law files: the pydantic models of docs/law-files.md, loading with line-numbered errors."""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, overload

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from lawkit.errors import LawFileError
from lawkit.lawfiles import yamlsafe
from lawkit.lawfiles.fixes import stale_fix, stale_message
from lawkit.lawfiles.lawbytes import check_size, read_bytes
from lawkit.lawfiles.terms import INTERCEPT, TermError, canonical_term, needs_quoting, parse_term

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    import numpy as np
    import numpy.typing as npt

    from lawkit.config import Workspace

SCHEMA = "lawkit/1"
Scalar = str | bool | int | float
_NUMBER_12 = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")


class Law(BaseModel):
    """One host law: `target` predicted as the sum of `terms` (coefficient times columns)."""

    model_config = ConfigDict(strict=True, extra="forbid")

    name: str = Field(min_length=1)
    target: str = Field(min_length=1)
    terms: dict[str, float] = Field(min_length=1)
    where: dict[str, Scalar | list[Scalar]] | None = None
    filter: str | None = None
    fit: dict[str, Any] | None = None
    domain: dict[str, list[float]] | None = None

    # The generated row functions by (on_domain, stacklevel): a Law is not changed once loaded.
    _rows: dict[tuple[str, int], Callable[[Mapping[str, Any]], Any]] = PrivateAttr(
        default_factory=dict)

    @field_validator("terms")
    @classmethod
    def _terms_are_well_formed(cls, terms: dict[str, float]) -> dict[str, float]:
        seen: dict[frozenset[str], str] = {}
        for term, coef in terms.items():
            try:
                parsed = parse_term(term)
            except TermError as exc:
                raise ValueError(str(exc)) from None
            if not math.isfinite(coef):
                raise ValueError(f"coefficient of {term!r} is {coef!r}: coefficients must be "
                                 "finite")
            key = parsed.key()
            if key in seen:
                raise ValueError(f"{term!r} repeats {seen[key]!r}")
            seen[key] = term
        return terms

    @field_validator("filter")
    @classmethod
    def _filter_parses(cls, filter: str | None) -> str | None:
        # Read here, not first at use: a filter that does not parse fails check, show and
        # rekey naming its file and line, not score naming no file.
        if filter is not None:
            from lawkit.errors import FitError
            from lawkit.lawfiles.where import parse_where

            try:
                parse_where(filter)
            except FitError as exc:
                raise ValueError(str(exc)) from None
        return filter

    @field_validator("domain")
    @classmethod
    def _domain_is_ranges(cls, domain: dict[str, list[float]] | None) -> Any:
        for column, bounds in (domain or {}).items():
            if len(bounds) != 2 or not bounds[0] <= bounds[1]:
                raise ValueError(f"{column} must be [low, high] with low <= high, got {bounds!r}")
        return domain

    def columns(self) -> list[str]:
        """The feature columns the terms use, in first-use order (a step's COL is one)."""
        out: dict[str, None] = {}
        for term in self.terms:
            if term != INTERCEPT:
                out.update(dict.fromkeys(parse_term(term).columns()))
        return list(out)

    @overload
    def predict(self, data: Mapping[str, float | str],
                *, on_domain: Literal["warn", "ignore", "raise"] = ...) -> float: ...
    @overload
    def predict(self, data: Mapping[str, float | str],
                *, on_domain: Literal["mask"]) -> tuple[float, bool]: ...
    @overload
    def predict(self, data: Any, *, on_domain: Literal["warn", "ignore", "raise"] = ...
                ) -> npt.NDArray[np.float64]: ...
    @overload
    def predict(self, data: Any, *, on_domain: Literal["mask"]
                ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]: ...

    def predict(self, data: Any, *, on_domain: str = "warn") -> Any:
        """The law's prediction for `data`: a DataFrame, a mapping of arrays, or of scalars.

        A mapping of scalars gives a float, anything else a float64 array, one value a row.
        Rows outside the law's domain (or not selected by its where/filter, when the data holds
        those columns) are predicted all the same; `on_domain` says what else happens:
        `"warn"` issues a `LawDomainWarning`, `"ignore"` nothing, `"raise"` raises
        `LawDomainError`, and `"mask"` returns `(values, outside)` with the rows outside marked.
        A column the law needs and `data` lacks raises a KeyError naming it.
        """
        if type(data) is dict:  # the simulator's hot path: one row of plain scalars
            for value in data.values():
                if type(value) not in _ROW_TYPES:
                    break
            else:
                return self.row_function(on_domain, stacklevel=3)(data)
        from lawkit.lawfiles.predict import predict

        return predict(self, data, on_domain=on_domain, stacklevel=3)  # type: ignore[arg-type]

    @overload
    def compile(self, *, on_domain: Literal["warn", "ignore", "raise"] = ...
                ) -> Callable[[Mapping[str, float | str]], float]: ...
    @overload
    def compile(self, *, on_domain: Literal["mask"]
                ) -> Callable[[Mapping[str, float | str]], tuple[float, bool]]: ...

    def compile(self, *, on_domain: str = "warn") -> Callable[[Mapping[str, Any]], Any]:
        """The law as a plain Python function of one row (a mapping of scalars), for a hot loop.

        `f(row)` equals `law.predict(row, on_domain=...)` to the last bit, with the same checks
        (domain, where, filter) and the same warning, error or `(value, outside)` mask; it
        needs no numpy and parses nothing per call.
        """
        return self.row_function(on_domain, stacklevel=2)

    def row_function(self, on_domain: str, *, stacklevel: int) -> Callable[[Mapping[str, Any]],
                                                                           Any]:
        """The generated row function behind `compile` and scalar `predict`, built once per
        `on_domain` (`stacklevel`: the warning's, counted from the function's caller's frame)."""
        rows: dict[tuple[str, int], Callable[[Mapping[str, Any]], Any]] = \
            self.__pydantic_private__["_rows"]  # type: ignore[index]  # 3 us through getattr
        function = rows.get((on_domain, stacklevel))
        if function is None:
            from lawkit.lawfiles.compiled import compile_law

            function = compile_law(self, on_domain=on_domain, stacklevel=stacklevel)
            rows[(on_domain, stacklevel)] = function
        return function


_ROW_TYPES = frozenset({float, int, str})


class FitRecord(BaseModel):
    """A `fit` provenance entry."""

    model_config = ConfigDict(strict=True, extra="allow")
    digest: str
    at: str
    records: int
    body: str
    captures: list[Any] = []
    laws: list[str] | None = None
    """The laws this fit fitted (None in files written before fits named them)."""


class RekeyRecord(BaseModel):
    """A `rekey` provenance entry."""

    model_config = ConfigDict(strict=True, extra="forbid", populate_by_name=True)
    from_: str = Field(alias="from")
    to: str
    at: str
    why: str
    refs: list[str] = []
    laws: list[str] | None = None
    """The laws re-keyed, when a refit re-keys the laws it kept (None: every law of the
    file)."""
    env: dict[str, list[str | dict[str, Any] | None]] | None = None
    """The environment accepted as the new baseline (`rekey --accept-env`): each
    distribution's recorded version and what the target showed of it (its version, or its
    identity: version, install, source, files; null: absent); ``python``: the Python's;
    ``environ:NAME`` and ``setting:NAME``: the configuration's."""


class AdoptRecord(BaseModel):
    """An `adopt` provenance entry."""

    model_config = ConfigDict(strict=True, extra="forbid")
    digest: str
    at: str
    why: str
    body: str


class ProvenanceEntry(BaseModel):
    """One line of `host.provenance`: exactly one of `fit`, `rekey`, `adopt`."""

    model_config = ConfigDict(strict=True, extra="forbid")
    fit: FitRecord | None = None
    rekey: RekeyRecord | None = None
    adopt: AdoptRecord | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> ProvenanceEntry:
        if sum(x is not None for x in (self.fit, self.rekey, self.adopt)) != 1:
            raise ValueError("a provenance entry is exactly one of fit, rekey or adopt")
        return self

    @property
    def kind(self) -> str:
        """`fit`, `rekey` or `adopt`."""
        return "fit" if self.fit else "rekey" if self.rekey else "adopt"

    @property
    def names_digest(self) -> str:
        """The digest this entry leaves the key at."""
        if self.fit:
            return self.fit.digest
        if self.rekey:
            return self.rekey.to
        assert self.adopt is not None
        return self.adopt.digest

    @property
    def body(self) -> str | None:
        """The body hash this entry vouches for (`fit` and `adopt` only)."""
        return self.fit.body if self.fit else self.adopt.body if self.adopt else None


class Host(BaseModel):
    """The `host` section: the key, the laws and their history."""

    model_config = ConfigDict(strict=True, extra="forbid")
    key: dict[str, str] = Field(min_length=1)
    laws: list[Law] = Field(min_length=1)
    provenance: list[ProvenanceEntry] = []

    @model_validator(mode="after")
    def _names_are_unique(self) -> Host:
        seen: set[str] = set()
        for law in self.laws:
            if law.name in seen:
                raise ValueError(f"two laws are named {law.name!r}: names are unique in a file")
            seen.add(law.name)
        return self


class LawFile(BaseModel):
    """A validated law file; unknown top-level sections are kept as extra fields."""

    model_config = ConfigDict(strict=True, extra="allow", populate_by_name=True)
    schema_: Literal["lawkit/1"] = Field(alias="schema")
    labels: dict[str, Scalar] | None = None
    host: Host

    _path: str = PrivateAttr(default="")
    _text: str = PrivateAttr(default="")
    _document: yamlsafe.Document | None = PrivateAttr(default=None)

    @property
    def path(self) -> str:
        """The path the file was loaded from, as given."""
        return self._path

    @property
    def text(self) -> str:
        """The file's text as loaded (a BOM dropped)."""
        return self._text

    @property
    def document(self) -> yamlsafe.Document:
        """The parsed YAML with node positions."""
        assert self._document is not None
        return self._document

    def law(self, name: str) -> Law:
        """The law called `name`; KeyError naming the laws there are otherwise."""
        for law in self.host.laws:
            if law.name == name:
                return law
        raise KeyError(f"no law {name!r} in {self._path or 'this file'} (laws: "
                       f"{', '.join(law.name for law in self.host.laws)})")

    def body_hash(self) -> str:
        """sha256 of the laws' canonical JSON (what determines their predictions)."""
        return body_hash(self.host.laws)

    def line(self, *path: str | int) -> int | None:
        """The line of a key path in the file (or of its nearest ancestor)."""
        return self.document.line(path)

    def compile(self, target: str | None = None, *, on_domain: Literal["warn", "ignore", "raise"]
                = "warn") -> Callable[[Mapping[str, float | str]], float]:
        """A plain Python function of one row that prices it with the law for `target` whose
        `where` and `filter` select the row (the first in file order), as `Law.compile` does.

        `target` may be left out when every law predicts the same one. A row that no law
        selects raises `LawDomainError` naming the columns it was chosen by.
        """
        from lawkit.lawfiles.compiled import law_chooser

        targets = list(dict.fromkeys(law.target for law in self.host.laws))
        if target is None:
            if len(targets) > 1:
                raise ValueError(f"{self._path or 'the law file'} holds laws for "
                                 f"{', '.join(targets)}: pass the target to compile")
            target = targets[0]
        laws = [law for law in self.host.laws if law.target == target]
        if not laws:
            raise KeyError(f"no law for target {target!r} in {self._path or 'this file'} "
                           f"(targets: {', '.join(targets)})")
        return law_chooser(laws, on_domain=on_domain, shown=self._path or "the law file")


@dataclass(frozen=True)
class LawText:
    """A law file's text and node tree, without its validated model: what `rekey` edits a file
    by when `check`'s cache already vouches for the file."""

    path: str
    text: str
    document: yamlsafe.Document

    def line(self, *path: str | int) -> int | None:
        """The line of a key path in the file (or of its nearest ancestor)."""
        return self.document.line(path)


def law_text(raw: bytes, shown: str) -> LawText:
    """The text and node tree of a law file's bytes (see `LawText`)."""
    text = yamlsafe.decode(raw, shown)
    return LawText(path=shown, text=text, document=yamlsafe.load_nodes(text, shown))


def body_hash(laws: list[Law]) -> str:
    """sha256 over name, target, where, filter and terms of each law, in order (the body hash
    of docs/law-files.md)."""
    canon = [{"name": law.name, "target": law.target, "where": law.where,
              "filter": law.filter, "terms": law.terms} for law in laws]
    text = json.dumps(canon, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def load(path: str | Path, *, key: str | None = None, require: Literal["current"] | None = None,
         workspace: Workspace | str | Path | None = None, shown_as: str | None = None,
         ) -> LawFile:
    """Read and validate a law file; a LawFileError with file and line for anything wrong.

    `key` names the `host.key` field that holds the digest (default: the workspace's, `atom`
    without one). `require="current"` also refuses, with the message `lawkit check` gives, a
    file whose digest is not the workspace's current one: the workspace is `workspace` (a
    `Workspace`, or a folder to discover it from), by default the one found walking up from
    the law file's folder.
    """
    if require is None:
        shown = shown_as or str(path)
        return parse(read_bytes(path, shown), shown, key=key or "atom")
    if require != "current":
        raise ValueError(f"require must be 'current' or None, got {require!r}")
    ws = _workspace_of(path, workspace)
    name = key or ws.digest.key
    shown = shown_as or ws.rel(path)
    law_file = parse(read_bytes(path, shown), shown, key=name)
    named, digest = law_file.host.key[name], current_digest(ws)
    if named != digest:
        raise LawFileError(f"stale: {stale_message(named, digest)}; fix: {stale_fix([shown])}",
                           path=shown, line=law_file.line("host", "key", name))
    return law_file


def current_digest(ws: Workspace) -> str:
    """The digest of the workspace's engine work tree (what `lawkit digest` prints)."""
    import src_digest
    from lawkit.errors import LawkitError

    config = ws.digest
    try:
        return src_digest.host_key_of(config.root, config.packages, config.include,
                                      config.exclude, config.length)
    except src_digest.DigestError as exc:
        raise LawkitError(config.explain(exc)) from None


def _workspace_of(path: str | Path, workspace: Workspace | str | Path | None) -> Workspace:
    from lawkit.config import Workspace, load_workspace

    if isinstance(workspace, Workspace):
        return workspace
    start = Path(workspace) if workspace is not None else Path(path).absolute().parent
    return load_workspace(cwd=start.absolute())


def parse(raw: bytes, shown: str, *, key: str = "atom") -> LawFile:
    """Validate the bytes of a law file (see `load`)."""
    check_size(len(raw), shown)
    text = yamlsafe.decode(raw, shown)
    document = yamlsafe.load(text, shown)
    data = document.data
    if not isinstance(data, dict):
        raise LawFileError("expected a mapping with 'schema: lawkit/1' at the top", path=shown,
                           line=1)
    if data.get("schema") != SCHEMA:
        raise LawFileError(f"schema: expected '{SCHEMA}', got {_clipped(data.get('schema'))}",
                           path=shown, line=document.line(("schema",)))
    _require_quoted_digests(document, shown, key)
    _require_quoted_terms(document, text, shown)
    try:
        law_file = LawFile.model_validate(data)
    except ValidationError as exc:
        raise _explain(exc, document, shown) from None
    law_file._path = shown
    law_file._text = text
    law_file._document = document
    return law_file


def _require_quoted_digests(document: yamlsafe.Document, shown: str, key: str) -> None:
    host = document.data.get("host")
    if not isinstance(host, dict) or not isinstance(host.get("key"), dict):
        return  # the model reports the missing section
    paths: list[tuple[str | int, ...]] = [("host", "key", key)]
    for i, entry in enumerate(host.get("provenance") or []):
        if isinstance(entry, dict):
            for kind, fields in entry.items():
                for name in ("digest", "from", "to"):
                    if isinstance(fields, dict) and name in fields:
                        paths.append(("host", "provenance", i, kind, name))
    for path in paths:
        node = document.nodes.get(path)
        if node is None:
            if path[-1] == key and len(path) == 3:
                raise LawFileError(f"host.key.{key}: missing: the digest the laws price goes "
                                   f"here{_other_key(host['key'], key)}", path=shown,
                                   line=document.line(path))
            continue
        if not isinstance(node, yaml.ScalarNode):
            what = "a mapping" if isinstance(node, yaml.MappingNode) else "a list"
            raise LawFileError(f"{_dotted(path)}: expected a quoted string, got {what}",
                               path=shown, line=node.start_mark.line + 1)
        if not yamlsafe.is_quoted(node):
            raise LawFileError(f"{_dotted(path)}: expected a quoted string, got {node.value} "
                               f"({_plain_kind(node)}): write it as \"{node.value}\"",
                               path=shown, line=node.start_mark.line + 1)


def _require_quoted_terms(document: yamlsafe.Document, text: str, shown: str) -> None:
    """A term key holding `(` or `,` is quoted: unquoted in a flow mapping, `step(x,60)` reads
    as two keys (`step(x` and `60)`), which is named here rather than as a missing number."""
    host = document.data.get("host")
    laws = host.get("laws") if isinstance(host, dict) else None
    for i, law in enumerate(laws if isinstance(laws, list) else []):
        terms = law.get("terms") if isinstance(law, dict) else None
        if not isinstance(terms, dict) or not any(c in k for k in terms for c in "(),"):
            continue
        node = document.nodes.get(("host", "laws", i, "terms"))
        if not isinstance(node, yaml.MappingNode):
            continue
        keys = [k for k, _v in node.value]
        for j, key_node in enumerate(keys):
            if yamlsafe.is_quoted(key_node) or not any(c in key_node.value for c in "(),"):
                continue
            where = f"host.laws[{i}].terms"
            line = key_node.start_mark.line + 1
            if key_node.value.count("(") > key_node.value.count(")") and j + 1 < len(keys):
                rest = keys[j + 1]
                joined = text[key_node.start_mark.index:rest.end_mark.index]
                fixed = canonical_term(joined)
                if fixed is not None:
                    raise LawFileError(
                        f"{where}: the term {joined} is not quoted, so YAML reads it as two "
                        f"keys ({key_node.value!r} and {rest.value!r}): write \"{fixed}\"",
                        path=shown, line=line)
            fixed = canonical_term(key_node.value)
            if fixed is not None and needs_quoting(fixed):
                raise LawFileError(f"{where}.{key_node.value}: a term holding '(' or ',' is "
                                   "quoted (unquoted in a flow mapping it reads as two keys): "
                                   f"write \"{fixed}\"", path=shown, line=line)


def _other_key(keys: dict[Any, Any], key: str) -> str:
    """What `host.key` holds instead of the workspace's key field, when it holds one: a file
    keyed by `atom` in a workspace whose `[tool.lawkit.digest] key` is `engine`."""
    others = [str(k) for k in keys if k != key]
    if not others:
        return ""
    likely = (difflib.get_close_matches(key, others, n=1) or others)[0]
    return (f"; it holds {likely} instead, but this workspace's digest key is {key} "
            f"([tool.lawkit.digest] key): rename {likely} to {key}, or key the workspace by "
            f"{likely}")


def _plain_kind(node: yaml.Node) -> str:
    if isinstance(node, yaml.ScalarNode) and _NUMBER_12.match(node.value):
        return "a float" if any(c in node.value for c in ".eE") else "an integer"
    return "unquoted" if isinstance(node, yaml.ScalarNode) else "not a string"


def _dotted(path: tuple[str | int, ...]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _explain(exc: ValidationError, document: yamlsafe.Document, shown: str) -> LawFileError:
    error = exc.errors()[0]
    loc = tuple(p for p in error["loc"] if p not in {"function-after", "FitRecord"})
    loc = tuple("schema" if p == "schema_" else p for p in loc)
    where = _dotted(loc) if loc else "the file"
    kind = error["type"]
    if kind == "missing":
        found = error.get("input")
        known = _known_keys(loc[:-1])
        unknown = [k for k in found if isinstance(k, str) and k not in known] \
            if isinstance(found, dict) else []
        likely = difflib.get_close_matches(str(loc[-1]), unknown, n=1)
        if likely:  # `targt:` for `target:`: the line to fix is the misspelt key's
            message = (f"{_dotted((*loc[:-1], likely[0]))}: unknown key, and {where} is "
                       f"missing: rename {likely[0]} to {loc[-1]}")
            loc = (*loc[:-1], likely[0])
        else:
            message = (f"{where}: missing: add it (lawkit schema prints every key a law file "
                       "holds)")
    elif kind == "extra_forbidden":
        keys = sorted(_known_keys(loc[:-1]))
        likely = difflib.get_close_matches(str(loc[-1]), keys, n=1)
        hint = f"did you mean {likely[0]}?" if likely else "remove it or check its spelling"
        message = f"{where}: unknown key: {hint} (known: {', '.join(keys)})"
    elif kind == "value_error":
        message = f"{where}: {error['msg'].removeprefix('Value error, ')}"
    else:
        got = error.get("input")
        message = (f"{where}: {error['msg'].replace('Input should be', 'expected')}, got "
                   f"{_clipped(got)} ({type(got).__name__})")
    return LawFileError(message, path=shown, line=document.line(loc))


def _known_keys(loc: tuple[Any, ...]) -> set[str]:
    """The keys the model at `loc` (a mapping of the file: `host`, `host.laws[0]`) takes, as
    the file spells them; empty where `loc` is not a model's (`terms`, `where`)."""
    model: Any = LawFile
    for part in loc:
        if isinstance(part, int):
            continue
        field = next((f for name, f in model.model_fields.items()
                      if (f.alias or name) == part), None)
        model = _model_in(field.annotation) if field is not None else None
        if model is None:
            return set()
    return {f.alias or name for name, f in model.model_fields.items()}


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds: itself, or inside `list[...]` or `... | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for arg in typing.get_args(annotation) if (m := _model_in(arg))), None)


def _clipped(value: Any) -> str:
    """`repr(value)`, cut to a length a message can quote."""
    text = repr(value)
    return text if len(text) <= 80 else text[:76] + " ..."
