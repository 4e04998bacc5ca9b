"""Cut a Python source file into its units, each with its own digest.

Units, in source order:

- ``<module>``: the module body;
- a class shell (``ModelRunner``): the class's lines without its methods and nested classes;
- a function or method by qualified name (``ModelRunner.__init__``): its lines from its first
  decorator to its last line; a function, class or lambda nested in a function belongs to it.

Definitions under ``if``/``try``/``with``/``for``/``while``/``match`` belong to the scope that
holds the statement, as Python's ``__qualname__`` says. Two definitions with one qualified name
are told apart by an ordinal in source order (``C.x``, ``C.x#2``). A unit's bytes are its lines
exactly as stored (``bytes.splitlines(keepends=True)``, the line breaks Python's tokenizer
knows); its digest is the sha256 of those bytes.

A module body's or class shell's bytes hold its members in one of two ways:

- schema 2 (``lawkit-footprint/2``): each member keeps its place, replaced where it stood by one
  line ``\\0def NAME`` or ``\\0class NAME`` followed by its header, the bytes from its first
  decorator to the start of its first body statement (decorators, defaults, annotations,
  bases). The header runs when the body holding it runs, so a changed decorator or default, or
  a statement moved across a ``def``, changes that body;
- schema 1 (``lawkit-footprint/1``, still read): the body's own lines, then ``b"\\0"`` and its
  members' names, one per line, in source order: blind to those three changes.

A file that is not valid Python (a syntax error, a null byte, a bad encoding) is one unit:
``<module>``, holding every line. Python source holds no null byte, so ``\\0`` only ever marks
members. A file nested too deep for Python's parser (``ast`` runs out of stack or memory) is a
`SourceTooDeep` error naming it: Python cannot compile it either.
"""

from __future__ import annotations

import ast
import codecs
import functools
import gc
import hashlib
import io
import tokenize
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from lawkit.footprint.errors import FootprintError

MODULE = "<module>"
"""The qualified name of a file's module-body unit."""
SCHEMAS = (1, 2)
"""The unit schemas, by the footprint schema whose digests they give."""

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_NAMES_MARK = b"\0"
_DefNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


@dataclass(frozen=True)
class Unit:
    """One unit of a source file: its name, kind, lines and digest.

    ``lines`` are the 1-based line numbers that are the unit's own (a function's: all of its
    lines; a shell's or module body's: those left once its members are cut out). ``header`` are
    a function's def and decorator lines, which run at import as part of ``holder``'s body;
    ``body`` the lines whose run means the function ran. ``first`` is its first line (a code
    object's ``co_firstlineno``).
    """

    qualname: str
    kind: str  # "module" | "class" | "function"
    data: bytes
    lines: frozenset[int]
    first: int
    holder: str | None = None
    header: frozenset[int] = field(default_factory=frozenset)
    body: frozenset[int] = field(default_factory=frozenset)

    @property
    def digest(self) -> str:
        """The sha256 of the unit's bytes, in hex."""
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class _Def:
    """A definition found in the tree, before its bytes are cut."""

    node: _DefNode
    qualname: str
    holder: str
    members: list[_Def] = field(default_factory=list)

    @property
    def first(self) -> int:
        return min([d.lineno for d in self.node.decorator_list] + [self.node.lineno])

    @property
    def span(self) -> range:
        return range(self.first, (self.node.end_lineno or self.node.lineno) + 1)


class SourceTooDeep(FootprintError):
    """A hashed source is nested too deep for Python's parser to cut it into units."""


def units_of(source: bytes, schema: int = 2, *, path: str | None = None) -> list[Unit]:
    """The units of one Python source file, the module body first, then in source order.

    ``schema``: whose digests (2, or 1 to compare with a schema-1 footprint); ``path``: the
    file's name in a `SourceTooDeep` error.
    """
    if schema not in SCHEMAS:
        raise ValueError(f"unit schema must be one of {SCHEMAS}, got {schema!r}")
    try:
        return list(_units_cached(source, schema))
    except (RecursionError, MemoryError) as exc:
        why = "out of stack" if isinstance(exc, RecursionError) else "out of memory"
        raise SourceTooDeep(f"nested too deep for Python's parser ({why}), so Python cannot "
                            "compile it and lawkit cannot cut it into units: split the deep "
                            "expression, or leave the file out of the digest's include",
                            path=path or "a hashed source") from None


@functools.lru_cache(maxsize=16)
def _units_cached(source: bytes, schema: int) -> tuple[Unit, ...]:
    # A review cuts the same changed file for its unit list and again for its verdict: the
    # units of the last few sources are kept (units are frozen, the list is a fresh copy).
    # A syntax tree holds no reference cycles: refcounting frees it, and the cyclic collector,
    # set off again and again by the allocations of a parse, only costs time (7x on 400 files).
    enabled = gc.isenabled()
    gc.disable()
    try:
        return tuple(_units_of(source, schema))
    finally:
        if enabled:
            gc.enable()


def _units_of(source: bytes, schema: int) -> list[Unit]:
    lines = source.splitlines(keepends=True)
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):  # ValueError: a null byte in the source
        everything = frozenset(range(1, len(lines) + 1))
        return [Unit(MODULE, "module", source, everything, 1)]
    cut = _Cutter(lines, _encoding(source), schema)
    top = _collect(tree.body, prefix="", holder=MODULE, seen={})
    every = range(1, len(lines) + 1)
    units = [Unit(MODULE, "module", cut.shell_bytes(every, top), cut.own_lines(every, top), 1)]
    for d in top:
        units.extend(cut.units_of_def(d))
    return units


def _encoding(source: bytes) -> str:
    """The encoding a source file declares (PEP 263), UTF-8 by default."""
    try:
        return tokenize.detect_encoding(io.BytesIO(source).readline)[0]
    except SyntaxError:
        return "utf-8"


def _collect(body: Iterable[ast.stmt], prefix: str, holder: str,
             seen: dict[str, int]) -> list[_Def]:
    """The definitions held directly by one scope (a module or class body), in source order."""
    found: list[_Def] = []
    for node in _scope_statements(body):
        name = prefix + node.name
        count = seen[name] = seen.get(name, 0) + 1
        qualname = name if count == 1 else f"{name}#{count}"
        d = _Def(node, qualname, holder)
        if isinstance(node, ast.ClassDef):
            d.members = _collect(node.body, qualname + ".", qualname, seen)
        found.append(d)
    return found


def _scope_statements(body: Iterable[ast.stmt]) -> Iterator[_DefNode]:
    """The def and class statements of a scope, looking inside compound statements."""
    for node in body:
        if isinstance(node, _DEFS):
            yield node
            continue
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            child = getattr(node, name, None)
            if isinstance(child, list):
                inner = [s for c in child for s in ([c] if isinstance(c, ast.stmt) else c.body)]
                yield from _scope_statements(inner)


@dataclass(frozen=True)
class _Cutter:
    """Cuts the bytes of one parsed source file into units' bytes, by one schema."""

    lines: list[bytes]
    encoding: str
    schema: int

    def units_of_def(self, d: _Def) -> Iterator[Unit]:
        """A definition's unit, then (for a class) its members' units."""
        span = d.span
        if isinstance(d.node, ast.ClassDef):
            yield Unit(d.qualname, "class", self.shell_bytes(span, d.members),
                       self.own_lines(span, d.members), d.first, holder=d.holder,
                       header=_header_lines(d.node))
            for m in d.members:
                yield from self.units_of_def(m)
            return
        header = _header_lines(d.node)
        body = frozenset(n for n in span if n not in header)
        yield Unit(d.qualname, "function", self._joined(span), frozenset(span), d.first,
                   holder=d.holder, header=header, body=body)

    def own_lines(self, span: Iterable[int], members: list[_Def]) -> frozenset[int]:
        """The lines of a shell or module body that are not its members'."""
        taken = {n for m in members for n in m.span}
        return frozenset(n for n in span if n not in taken)

    def shell_bytes(self, span: Iterable[int], members: list[_Def]) -> bytes:
        """A shell's or module body's bytes: each member marked where it stood with its header
        (schema 2), or its own lines then its members' names (schema 1)."""
        if self.schema == 1:
            names = [_short_name(m) for m in members]
            own = sorted(self.own_lines(span, members))
            return self._joined(own) + _NAMES_MARK + "\n".join(names).encode("utf-8")
        starts = {m.first: m for m in members}
        taken = {n for m in members for n in m.span}
        out: list[bytes] = []
        for n in span:
            member = starts.get(n)
            if member is not None:
                kind = b"class " if isinstance(member.node, ast.ClassDef) else b"def "
                out += [_NAMES_MARK, kind, _short_name(member).encode("utf-8"), b"\n",
                        self._header_bytes(member)]
            elif n not in taken:
                out.append(self.lines[n - 1])
        return b"".join(out)

    def _header_bytes(self, d: _Def) -> bytes:
        """A definition's bytes from its first decorator to the start of its first body
        statement, ending in a line break."""
        first = d.node.body[0]
        data = self._joined(range(d.first, first.lineno))
        line = self.lines[first.lineno - 1] if first.lineno <= len(self.lines) else b""
        before = _prefix(line, first.col_offset, self.encoding)
        if before.strip():  # the body starts on the header's last line: `def f(): return 1`
            data += before + b"\n"
        return data

    def _joined(self, numbers: Iterable[int]) -> bytes:
        return b"".join(self.lines[n - 1] for n in numbers if n <= len(self.lines))


def _short_name(d: _Def) -> str:
    """A member's name within its scope, with its ordinal (``p#2``)."""
    return d.qualname.rpartition(".")[2]


def _prefix(line: bytes, col_offset: int, encoding: str) -> bytes:
    """The bytes of a line before a column that ``ast`` counts in UTF-8 bytes."""
    if encoding in ("utf-8", "utf-8-sig"):
        return line[:col_offset]
    try:
        return line.decode(encoding).encode("utf-8")[:col_offset].decode(
            "utf-8", "ignore").encode(encoding)
    except (LookupError, UnicodeError):
        return line


def _header_lines(node: _DefNode) -> frozenset[int]:
    """The decorator and signature lines of a definition: what runs when it is defined."""
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    parts: list[ast.AST] = [*node.decorator_list]
    if isinstance(node, ast.ClassDef):
        parts += [*node.bases, *node.keywords]
    else:
        parts += [node.args] + ([node.returns] if node.returns else [])
    last = node.lineno
    for part in parts:
        for child in ast.walk(part):
            last = max(last, getattr(child, "end_lineno", None) or last)
    # The body starts after the colon, so the signature runs up to the line before it (a
    # closing `):` on its own line); a body on the signature's last line (`def f(): return 1`)
    # shares that line, and only the arcs entering the function tell that it ran.
    start = node.body[0].lineno
    if start > last:
        last = start - 1
    return frozenset(range(first, last + 1))


NORMAL = 2
"""The version of the normal form `codes_of` hashes (docs/footprints.md): a footprint's unit
``"code"`` is compared only with codes of the same ``"normal"``. Version 2 adds the file's
declared encoding to the module body's code: a coding declaration decides what its string
literals hold."""


def codes_of(source: bytes) -> Mapping[str, str] | None:
    """Each unit's code digest, by qualified name: the sha256 of the unit's code in a normal
    form that leaves out comments, blank lines, docstrings and positions (version `NORMAL`);
    None when the file is not valid Python.

    The whole file is parsed (with its declared encoding, which the module body's code names,
    so that a changed coding declaration is code; each unit's literals are its decoded values).
    A function is its definition's syntax tree; a module body or class shell its own
    statements, each member replaced where it stood by its kind, name and header (decorators,
    arguments, annotations, bases), as a unit's bytes hold it. Every function's, class's and
    module's leading docstring (a plain string literal standing first in the body) is
    dropped; an f-string, or any other expression statement, is code. The dump names each
    node's fields in sorted order and leaves out those that are empty or None, so that 3.11,
    3.12 and 3.13 give the same bytes for the same code.
    """
    return _codes_cached(source)


@functools.lru_cache(maxsize=16)
def _codes_cached(source: bytes) -> Mapping[str, str] | None:
    try:
        with warnings.catch_warnings():  # 3.12 warns of an invalid escape such as "\d"
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
        top = _collect(tree.body, prefix="", holder=MODULE, seen={})
        out = {MODULE: _code_digest(tree, top, f"encoding={_declared(source)}\n")}
        todo = list(top)
        while todo:
            d = todo.pop()
            out[d.qualname] = _code_digest(d.node, d.members)
            todo += d.members
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # ValueError: a null byte
        return None
    return MappingProxyType(out)


def _declared(source: bytes) -> str:
    """The encoding a source decodes by, by its canonical name (a UTF-8 BOM is UTF-8)."""
    name = _encoding(source)
    return "utf-8" if name == "utf-8-sig" else name


def _code_digest(node: ast.AST, members: list[_Def], head: str = "") -> str:
    marks = {id(m.node): _short_name(m) for m in members}
    return hashlib.sha256((head + _dump(node, marks)).encode("utf-8", "surrogatepass")
                          ).hexdigest()


_SCOPES = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
_HEADER_FIELDS = ("decorator_list", "args", "returns", "bases", "keywords", "type_params")


def _dump(node: object, marks: dict[int, str]) -> str:
    """A node as text, without positions; the members in ``marks`` as their headers only."""
    if isinstance(node, list):
        return "[" + ",".join(_dump(n, marks) for n in node) + "]"
    if not isinstance(node, ast.AST):
        return repr(node)  # a constant's value, a name, an operator's field
    fields = sorted(node._fields)
    kind = type(node).__name__
    if id(node) in marks:  # a member, where it stands in its body: its header runs there
        kind = f"{kind} {marks[id(node)]}"
        fields = [f for f in fields if f in _HEADER_FIELDS]
    parts = []
    for name in fields:
        value = getattr(node, name, None)
        if name == "body" and isinstance(node, _SCOPES) and isinstance(value, list):
            value = value[1:] if value and _is_docstring(value[0]) else value
        elif name == "values" and isinstance(node, ast.JoinedStr):
            value = _joined_parts(node.values)
        if value is None or (isinstance(value, list) and not value):
            continue  # 3.12 added empty `type_params`; 3.13's dump leaves out empty fields
        parts.append(f"{name}={_dump(value, marks)}")
    return f"{kind}({','.join(parts)})"


def _joined_parts(values: list[ast.expr]) -> list[ast.expr | str]:
    """An f-string's parts with its literal text joined and empty text left out (3.12 ends a
    format spec holding a field with an empty string; others split text differently)."""
    out: list[ast.expr | str] = []
    for v in values:
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            if out and isinstance(out[-1], str):
                out[-1] += v.value
            elif v.value:
                out.append(v.value)
        else:
            out.append(v)
    return out


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and \
        isinstance(stmt.value.value, str)


def layout_only(old: bytes, new: bytes, schema: int = 2) -> bool:
    """True when two versions of a unit (cut by one ``schema``) differ only in comments,
    blank lines or docstrings.

    Compares the token streams without comments, blank or continuation lines, docstrings and
    the spelling of indentation and line breaks; a shell's members must be the same, in the
    same places. False when either version does not tokenize (a file that is not valid Python).
    """
    if old == new:
        return True
    try:
        return _layout(old, schema) == _layout(new, schema)
    except (tokenize.TokenError, SyntaxError, UnicodeDecodeError):
        return False


def _layout(data: bytes, schema: int) -> tuple[list[bytes], list[tuple[int, str]]]:
    """A unit's members (their marks or names) and the tokens that carry its code."""
    if schema == 1:
        code, _, names = data.partition(_NAMES_MARK)
        return [names], _code_tokens(code)
    lines = data.splitlines(keepends=True)
    marks = [line for line in lines if line.startswith(_NAMES_MARK)]
    code = b"".join(line for line in lines if not line.startswith(_NAMES_MARK))
    return marks, _code_tokens(code)


def _code_tokens(code: bytes) -> list[tuple[int, str]]:
    """The tokens that carry code: no comments (a coding declaration, which decides what the
    literals hold, is code), blank lines or docstrings; layout as types."""
    logical: list[list[tokenize.TokenInfo]] = [[]]
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER}
    encoding = "utf-8"
    for tok in tokenize.tokenize(io.BytesIO(code).readline):
        if tok.type == tokenize.ENCODING:
            encoding = _canonical(tok.string)
        if tok.type in skip:
            continue
        logical[-1].append(tok)
        if tok.type == tokenize.NEWLINE:
            logical.append([])
    out: list[tuple[int, str]] = [(tokenize.ENCODING, encoding)]
    after_header: bool | None = None  # the first statement of a module is its docstring
    for line in logical:
        code_toks = [t for t in line if t.type not in (tokenize.INDENT, tokenize.DEDENT)]
        kept = _without_docstring(line, after_header)
        if code_toks:
            # A docstring follows a header that ends in a colon, on an indented line.
            after_header = _is_def_header(code_toks) and len(code_toks) > 1 and \
                code_toks[-2].string == ":"
        layout = (tokenize.INDENT, tokenize.DEDENT, tokenize.NEWLINE)
        out.extend((t.type, "" if t.type in layout else t.string) for t in kept)
    return out


def _canonical(encoding: str) -> str:
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return encoding
    return "utf-8" if name == "utf-8-sig" else name


def _without_docstring(line: list[tokenize.TokenInfo],
                       after_header: bool | None) -> list[tokenize.TokenInfo]:
    """A logical line with its docstring dropped, when it is one.

    ``after_header``: None for the first statement (a module's docstring), True after a def or
    class header ending in a colon.
    """
    if not line:
        return line
    lead = [t for t in line if t.type in (tokenize.INDENT, tokenize.DEDENT)]
    rest = [t for t in line if t.type not in (tokenize.INDENT, tokenize.DEDENT)]
    strings = [t for t in rest if t.type != tokenize.NEWLINE]
    indented = any(t.type == tokenize.INDENT for t in lead)
    if (after_header is None or (after_header and indented)) and strings and \
            all(_plain_string(t) for t in strings):
        return lead
    if _is_def_header(rest):
        # A one-line definition: `def f(): "doc"` (the string ends the line).
        colon = _header_colon(rest)
        tail = [t for t in rest[colon + 1:] if t.type != tokenize.NEWLINE]
        if tail and all(_plain_string(t) for t in tail):
            return lead + rest[: colon + 1] + [t for t in rest if t.type == tokenize.NEWLINE]
    return line


def _plain_string(tok: tokenize.TokenInfo) -> bool:
    """A str literal, the only kind of docstring: an f-string is code (on 3.11 it is one STRING
    token; 3.12 splits it), and a bytes literal is no docstring."""
    prefix = tok.string.split("'", 1)[0].split('"', 1)[0]
    return tok.type == tokenize.STRING and not set(prefix.lower()) & {"f", "b", "t"}


def _is_def_header(toks: list[tokenize.TokenInfo]) -> bool:
    names = [t.string for t in toks[:2] if t.type == tokenize.NAME]
    return bool(names) and (names[0] in ("def", "class") or names[:2] == ["async", "def"])


def _header_colon(toks: list[tokenize.TokenInfo]) -> int:
    """The index of the colon that ends a def or class header, or the last token's."""
    depth = 0
    for i, t in enumerate(toks):
        if t.type == tokenize.OP:
            if t.string in "([{":
                depth += 1
            elif t.string in ")]}":
                depth -= 1
            elif t.string == ":" and depth == 0:
                return i
    return len(toks) - 1
