"""The layout docs/development.md maps, read from the source of `lawkit/` and `src_digest/`: which
folder may import which, no import cycle of any length, no private name read from outside its
package, and `src_digest` on the standard library alone.

Every import is read with `ast` from every module, wherever it is written: at module level, lazily
inside a function (it runs sooner or later, and a lower module reaching up lazily still depends
on what is above it) and under `if TYPE_CHECKING:` (a type a lower module names is a piece of the
upper one it needs: it belongs below both). A package's `__init__` is a module like any other for
the imports it writes, `lawkit/__init__.py` (the face) included; the parent packages Python runs
before a module (`lawkit/__init__.py` before `lawkit.errors`) are not imports the module writes
and are not counted. `from package import name` is an import of `package.name` where that is a
module, else of `package`.
"""

from __future__ import annotations

import ast
import itertools
import re
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "lawkit"
FIRST_PARTY = ("lawkit", "src_digest")
TOP_LEVEL_BUDGET = 14


class Import(NamedTuple):
    """One import a module writes: what it imports (a first-party module where it is one), the
    line, and how it runs: `top` (at import), `lazy` (inside a function) or `typing` (only for
    the type checker)."""

    source: str
    target: str
    line: int
    kind: str

    def __str__(self) -> str:
        how = {"top": "", "lazy": ", lazily", "typing": ", under TYPE_CHECKING"}[self.kind]
        return f"{self.source} imports {self.target} (line {self.line}{how})"


class PrivateRead(NamedTuple):
    """A name with a leading underscore read from another module: `owner` is the package it is
    private to."""

    source: str
    name: str
    owner: str
    line: int

    def __str__(self) -> str:
        return (f"{self.source} reads {self.name} (line {self.line}), private to {self.owner}")


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources(root: Path) -> dict[str, Path]:
    return {_module_name(path, root): path
            for top in FIRST_PARTY for path in sorted((root / top).rglob("*.py"))}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _owner(module: str, known: dict[str, Path]) -> str:
    """The package a private name defined in `module` is private to."""
    is_package = module in known and known[module].name == "__init__.py"
    return module if is_package else module.rpartition(".")[0]


def _resolve(name: str, known: dict[str, Path]) -> str:
    """A dotted import target as the first-party module it imports, else as written."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in known:
            return ".".join(parts[:end])
    return name


def read_module(source: str, text: str, *, is_package: bool,
                known: dict[str, Path]) -> tuple[list[Import], list[PrivateRead]]:
    """Every import `text` (module `source`) writes, and every private name it reads from
    another first-party module (by `from m import _x`, `import m` then `m._x`, or a private
    module `m._x` itself) whose package does not hold `source`."""
    package = source if is_package else source.rpartition(".")[0]
    imports: list[Import] = []
    private: list[PrivateRead] = []
    aliases: dict[str, str] = {}  # a local name bound to a first-party module

    def note_private(target: str, line: int) -> None:
        parts = target.split(".")
        for i, part in enumerate(parts[1:], start=1):
            owner = ".".join(parts[:i])
            if _is_private(part) and not (source == owner or source.startswith(owner + ".")):
                private.append(PrivateRead(source, ".".join(parts[: i + 1]), owner, line))
                return

    def add(target: str, line: int, kind: str) -> None:
        imports.append(Import(source, target, line, kind))
        if target in known:
            note_private(target, line)

    def visit(node: ast.AST, kind: str) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.body:
                visit(child, "typing")
            for child in node.orelse:
                visit(child, kind)
            return
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = _resolve(alias.name, known)
                add(target, node.lineno, kind)
                if alias.asname and target == alias.name:
                    aliases[alias.asname] = target
                elif not alias.asname and alias.name.split(".")[0] in known:
                    aliases[alias.name.split(".")[0]] = alias.name.split(".")[0]
            return
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parent = parts[: len(parts) - node.level + 1]
                base = ".".join([*parent, base] if base else parent)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                if full in known:
                    add(full, node.lineno, kind)
                    aliases[alias.asname or alias.name] = full
                else:
                    add(_resolve(base, known), node.lineno, kind)
                    if base in known and _is_private(alias.name):
                        owner = _owner(base, known)
                        if not (source == owner or source.startswith(owner + ".")):
                            private.append(PrivateRead(source, full, owner, node.lineno))
            return
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            kind = "lazy" if kind == "top" else kind
        for child in ast.iter_child_nodes(node):
            visit(child, kind)

    tree = ast.parse(text, source)
    visit(tree, "top")
    seen: set[tuple[str, int]] = set()
    for node in ast.walk(tree):
        chain: list[str] = []
        at: ast.expr = node if isinstance(node, ast.Attribute) else ast.Constant(None)
        while isinstance(at, ast.Attribute):
            chain.insert(0, at.attr)
            at = at.value
        if not chain or not isinstance(at, ast.Name) or at.id not in aliases:
            continue
        module = aliases[at.id]
        for part in chain:
            if f"{module}.{part}" in known:
                module = f"{module}.{part}"
                continue
            owner = _owner(module, known)
            if _is_private(part) and not (source == owner or source.startswith(owner + ".")) \
                    and (f"{module}.{part}", node.lineno) not in seen:
                seen.add((f"{module}.{part}", node.lineno))
                private.append(PrivateRead(source, f"{module}.{part}", owner, node.lineno))
            break
    return imports, private


@dataclass(frozen=True)
class Tree:
    """Every first-party module of a checkout, with the imports and private reads it writes."""

    imports: dict[str, list[Import]]
    private: list[PrivateRead]

    @classmethod
    def read(cls, root: Path) -> Tree:
        known = _sources(root)
        imports: dict[str, list[Import]] = {}
        private: list[PrivateRead] = []
        for name, path in known.items():
            found, reads = read_module(name, path.read_text(encoding="utf-8"),
                                       is_package=path.name == "__init__.py", known=known)
            imports[name] = found
            private += reads
        return cls(imports, private)

    def first_party(self) -> list[Import]:
        """The imports of one first-party module by another, itself left out."""
        return [i for found in self.imports.values() for i in found
                if i.target in self.imports and i.target != i.source]

    def edges(self) -> dict[str, dict[str, Import]]:
        """Module -> module it imports -> the first import of it (the earliest line)."""
        out: dict[str, dict[str, Import]] = {name: {} for name in self.imports}
        for imp in sorted(self.first_party(), key=lambda i: i.line):
            out[imp.source].setdefault(imp.target, imp)
        return out


TREE = Tree.read(REPO)


def _wing(module: str) -> str:
    """The folder a module belongs to for the direction rules: `lawkit.X` for the modules of the
    subpackage `lawkit/X/`, the module itself at lawkit's top level, `src_digest` for its own;
    `lawkit.capture`, the engine-side capture writer, belongs to the footprint wing
    (docs/development.md)."""
    parts = module.split(".")
    if parts[:2] == ["lawkit", "capture"]:
        return "lawkit.footprint"
    return ".".join(parts[:2]) if parts[0] == "lawkit" and len(parts) > 1 else parts[0]


def _reaching(prefix: str, tree: Tree = TREE) -> list[Import]:
    return [i for i in tree.first_party()
            if i.target == prefix or i.target.startswith(prefix + ".")]


@pytest.mark.parametrize(("wing", "forbidden"), [
    ("lawkit.keying", "lawkit.fitting"),
    ("lawkit.footprint", "lawkit.fitting"),
    ("lawkit.lawfiles", "lawkit.keying"),
    ("lawkit.lawfiles", "lawkit.fitting"),
    ("lawkit.lawfiles", "lawkit.footprint"),
    ("lawkit.footprint", "lawkit.keying"),
])
def test_a_wing_never_imports_the_wings_above_it(wing: str, forbidden: str) -> None:
    wrong = [str(i) for i in _reaching(forbidden) if _wing(i.source) == wing]
    assert wrong == []


HELPERS = frozenset({"lawkit.errors", "lawkit.config", "lawkit.fsio", "lawkit.workers",
                     "lawkit._version"})
MAY_IMPORT: dict[str, frozenset[str]] = {
    "src_digest": frozenset(),
    "lawkit.lawfiles": frozenset({"src_digest", "lawkit.errors", "lawkit.fsio", "lawkit.config"}),
    "lawkit.footprint": frozenset({"src_digest", "lawkit.errors", "lawkit.config", "lawkit.fsio"}),
    "lawkit.keying": frozenset({"src_digest", "lawkit.lawfiles", "lawkit.footprint",
                                "lawkit.errors", "lawkit.config", "lawkit.fsio",
                                "lawkit.workers"}),
    **{helper: HELPERS for helper in HELPERS},
}
"""The first-party folders and modules each folder may import besides its own modules (a name
covers its submodules); `lawkit.fitting`, `lawkit.api` and `lawkit.cli` may import any but
`lawkit.cli`, which the test after next keeps to the command line."""

FOLDER_DOCS = {"src_digest": "src_digest", "lawkit.lawfiles": "lawkit.lawfiles",
               "lawkit.keying": "lawkit.keying", "lawkit.keying.review": "lawkit.keying",
               "lawkit.footprint": "lawkit.footprint"}
"""The folders whose `__init__` docstring lists what they may import, and the rule each list
is (a folder inside a wing follows the wing's)."""


@pytest.mark.parametrize("wing", sorted(MAY_IMPORT))
def test_each_folder_imports_only_what_it_may(wing: str) -> None:
    allowed = MAY_IMPORT[wing]
    wrong = [str(i) for i in TREE.first_party() if _wing(i.source) == wing
             and _wing(i.target) != wing
             and not any(i.target == a or i.target.startswith(a + ".") for a in allowed)]
    assert wrong == []


@pytest.mark.parametrize("folder", sorted(FOLDER_DOCS))
def test_each_folders_init_docstring_names_what_it_may_import(folder: str) -> None:
    init = REPO.joinpath(*folder.split("."), "__init__.py")
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    paragraph = next((p for p in doc.split("\n\n") if "May import:" in p), "")
    allowed_part = paragraph.split("May import:", 1)[-1]
    allowed_part = allowed_part.split("never", 1)[0].split("Never", 1)[0]
    named = {name for name in re.findall(r"`+([A-Za-z_][\w.]*)`+", allowed_part)
             if name.split(".")[0] in FIRST_PARTY} - {FOLDER_DOCS[folder]}
    assert paragraph, f"{init.relative_to(REPO)}: no 'May import:' paragraph"
    assert named == set(MAY_IMPORT[FOLDER_DOCS[folder]]), init.relative_to(REPO)


def test_nothing_but_the_command_line_imports_it() -> None:
    wrong = [str(i) for i in _reaching("lawkit.cli")
             if not i.source.startswith(("lawkit.cli", "lawkit.__main__"))]
    assert wrong == []


def test_only_the_command_line_imports_typer() -> None:
    wrong = [str(i) for found in TREE.imports.values() for i in found
             if i.target.split(".")[0] in ("typer", "click") and _wing(i.source) != "lawkit.cli"]
    assert wrong == []


def test_src_digest_imports_only_the_standard_library() -> None:
    outside = [str(i) for name, found in TREE.imports.items() if _wing(name) == "src_digest"
               for i in found if i.target.split(".")[0] not in sys.stdlib_module_names
               and _wing(i.target) != "src_digest"]
    assert outside == []


def test_no_module_reads_a_private_name_from_outside_its_package() -> None:
    # `_name` (a module or a name in one) is the business of the package that holds it; a
    # module outside asks a public question instead
    assert [str(read) for read in TREE.private] == []


ALLOWED_CYCLES: list[frozenset[str]] = []
"""Cycles tolerated for now, none: an entry whose cycle is gone fails the test below, so none
outlives it."""


def _cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan): each holds a cycle
    through all its members."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for name in sorted(edges):
        if name not in index:
            visit(name)
    return found


def _cycle_path(edges: dict[str, set[str]], members: frozenset[str], start: str) -> list[str]:
    """A shortest cycle through `start` inside `members` (breadth first): its modules in import
    order, `start` again at the end."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in sorted(edges.get(node, set()) & members):
            if target == start:
                path = [node]
                while path[0] != start:
                    path.insert(0, came_from[path[0]])
                return [*path, start]
            if target not in came_from:
                came_from[target] = node
                queue.append(target)
    raise AssertionError(f"no cycle through {start}")


def _knot_cycles(edges: dict[str, set[str]], members: frozenset[str]) -> list[list[str]]:
    """A shortest cycle through each module of a knot, each cycle once: together they name
    every import a fix has to look at, not only the first cycle found."""
    cycles: dict[frozenset[tuple[str, str]], list[str]] = {}
    for start in sorted(members):
        path = _cycle_path(edges, members, start)
        cycles.setdefault(frozenset(itertools.pairwise(path)), path)
    return list(cycles.values())


def describe_cycles(tree: Tree) -> list[str]:
    """Each import cycle among the modules of `tree` (knots in ALLOWED_CYCLES left out) as one
    line: its path, each step with the import that makes it; a knot of more modules than its
    cycles show is named after them."""
    edges = tree.edges()
    plain = {name: set(targets) for name, targets in edges.items()}
    lines = []
    for members in _cycles(plain):
        if members in ALLOWED_CYCLES:
            continue
        cycles = _knot_cycles(plain, members)
        for path in cycles:
            steps = "; ".join(str(edges[a][b]) for a, b in itertools.pairwise(path))
            lines.append(f"{' -> '.join(path)}: {steps}")
        if len(cycles) > 1:
            lines.append(f"those {len(cycles)} cycles tie {len(members)} modules into one knot: "
                         f"{', '.join(sorted(members))}")
    return lines


def test_no_import_cycle_of_any_length_lazy_and_type_checking_imports_counted() -> None:
    assert describe_cycles(TREE) == []


def test_every_allowed_cycle_is_still_a_cycle_so_its_entry_is_removed_once_it_is_broken() -> None:
    present = _cycles({name: set(t) for name, t in TREE.edges().items()})
    assert [sorted(c) for c in ALLOWED_CYCLES if c not in present] == []


def test_the_cycle_finder_finds_a_lazy_cycle_of_three_and_a_subpackage_init() -> None:
    edges = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "b": {"b.m"}, "b.m": {"b"},
             "c": {"a.x"}}
    assert sorted(sorted(c) for c in _cycles(edges)) == [["a.x", "a.y", "a.z"], ["b", "b.m"]]
    assert _cycle_path(edges, frozenset({"a.x", "a.y", "a.z"}), "a.y") == [
        "a.y", "a.z", "a.x", "a.y"]


def test_a_knot_is_reported_as_a_shortest_cycle_through_each_of_its_modules() -> None:
    # k.a -> k.c -> k.d -> k.a is shorter than through k.b; k.e -> k.c -> k.e is a cycle of its
    # own in the same knot, and must be named too
    edges = {"k.a": {"k.b", "k.c"}, "k.b": {"k.c"}, "k.c": {"k.d", "k.e"}, "k.d": {"k.a"},
             "k.e": {"k.c"}}
    (knot,) = _cycles(edges)
    assert _knot_cycles(edges, knot) == [["k.a", "k.c", "k.d", "k.a"],
                                         ["k.b", "k.c", "k.d", "k.a", "k.b"],
                                         ["k.c", "k.e", "k.c"]]


SAMPLE = '''
from __future__ import annotations
import os
from typing import TYPE_CHECKING
import pkg.low as low
from pkg import side
from . import up

if TYPE_CHECKING:
    from pkg.up import Thing
else:
    import json

def lazily():
    from pkg.side import _helper
    return low._state, side.public, json

if not TYPE_CHECKING:
    def __getattr__(name):
        from .up import deep
'''
KNOWN = {name: Path(f"{name.replace('.', '/')}.py") for name in
         ("pkg.low", "pkg.side", "pkg.up", "pkg.mod")} | {"pkg": Path("pkg/__init__.py")}


def test_every_import_is_read_with_how_it_runs_and_every_private_read_from_outside() -> None:
    imports, private = read_module("pkg.mod", SAMPLE, is_package=False, known=KNOWN)
    assert [(i.target, i.kind) for i in imports] == [
        ("__future__", "top"), ("os", "top"), ("typing", "top"), ("pkg.low", "top"),
        ("pkg.side", "top"), ("pkg.up", "top"), ("pkg.up", "typing"), ("json", "top"),
        ("pkg.side", "lazy"), ("pkg.up", "lazy")]
    # pkg.mod is inside pkg, whose privates it may read; another package's module may not
    assert private == []
    _, outside = read_module("other.mod", SAMPLE.replace("from . import up", ""),
                             is_package=False, known=KNOWN)
    assert sorted(map(str, outside)) == [
        "other.mod reads pkg.low._state (line 16), private to pkg",
        "other.mod reads pkg.side._helper (line 15), private to pkg"]


def test_the_graph_is_read_from_the_source() -> None:
    # guards the test itself on the real tree: a module-level, a lazy and a TYPE_CHECKING
    # import of each package are seen, and a subpackage's __init__ is a module of the graph
    kinds = {(i.source, i.target, i.kind) for i in TREE.first_party()}
    assert ("src_digest.git", "src_digest._manifest", "top") in kinds
    assert ("src_digest", "src_digest.git", "typing") in kinds
    assert ("src_digest", "src_digest.git", "lazy") in kinds
    assert ("lawkit.keying.check", "lawkit.keying.checkcache", "typing") in kinds
    assert ("lawkit.lawfiles.lawfile", "lawkit.lawfiles.predict", "lazy") in kinds
    assert "lawkit.keying.review" in TREE.imports
    assert "lawkit" in TREE.imports


def test_lawkit_top_level_holds_at_most_14_entries_and_each_wing_says_what_it_may_import() -> None:
    # modules and folders a reader finds their way among; `py.typed` is a marker for packagers
    entries = [p.name for p in PACKAGE.iterdir() if p.name not in ("__pycache__", "py.typed")]
    assert len(entries) <= TOP_LEVEL_BUDGET, sorted(entries)
    for wing in ("lawfiles", "keying", "fitting", "footprint", "cli"):
        init = PACKAGE / wing / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "May import" in doc, wing
