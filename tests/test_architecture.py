"""The layout of DESIGN.md section 2, read from the source: which wing may import which, and no
import cycle of any length among lawkit's modules.

Imports are read with `ast` from every module. A lazy import inside a function counts, for the
directions and for cycles alike (it runs sooner or later, and a lower module reaching up lazily
still depends on what is above it); a subpackage's `__init__` is a module like any other;
imports under `if TYPE_CHECKING:` count for neither. Only `lawkit/__init__.py`, the package's
face (lazy re-exports of everything), is left out of the cycles.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "lawkit"
TOP_LEVEL_BUDGET = 14


def _module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(path: Path) -> tuple[set[str], set[str]]:
    """(modules imported at module level, every module imported anywhere) by one source file."""
    tree = ast.parse(path.read_bytes(), str(path))
    here = _module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    top: set[str] = set()
    anywhere: set[str] = set()

    def visit(node: ast.AST, at_top: bool) -> None:
        if isinstance(node, ast.If) and _is_type_checking(node):
            for child in node.orelse:
                visit(child, at_top)
            return
        if isinstance(node, ast.Import | ast.ImportFrom):
            for name in _targets(node, package):
                anywhere.add(name)
                if at_top:
                    top.add(name)
            return
        nested = at_top and not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef
                                           | ast.Lambda)
        for child in ast.iter_child_nodes(node):
            visit(child, nested)

    visit(tree, True)
    return top, anywhere


def _targets(node: ast.Import | ast.ImportFrom, package: str) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        parent = package.split(".")[: len(package.split(".")) - node.level + 1]
        base = ".".join([*parent, base] if base else parent)
    # `from pkg import name` imports pkg.name when that is a module
    return [base, *(f"{base}.{alias.name}" for alias in node.names)]


def _graph() -> dict[str, tuple[set[str], set[str]]]:
    sources = [*PACKAGE.rglob("*.py"), *(REPO / "src_digest").rglob("*.py")]
    modules = {_module_name(path): _imports(path) for path in sources}
    known = set(modules)
    return {name: ({m for m in top if m in known}, {m for m in anywhere if m in known}
                   | {m for m in anywhere if m.split(".")[0] not in ("lawkit", "src_digest")})
            for name, (top, anywhere) in modules.items()}


GRAPH = _graph()


def _wing(module: str) -> str:
    parts = module.split(".")
    return ".".join(parts[:2]) if parts[0] == "lawkit" and len(parts) > 1 else parts[0]


def _reaching(prefix: str) -> list[str]:
    return sorted(f"{name} imports {target}" for name, (_, anywhere) in GRAPH.items()
                  for target in anywhere if target == prefix or target.startswith(prefix + "."))


@pytest.mark.parametrize(("wing", "forbidden"), [
    ("lawkit.keying", "lawkit.fitting"),
    ("lawkit.footprint", "lawkit.fitting"),
    ("lawkit.lawfiles", "lawkit.keying"),
    ("lawkit.lawfiles", "lawkit.fitting"),
    ("lawkit.lawfiles", "lawkit.footprint"),
    ("lawkit.footprint", "lawkit.keying"),
])
def test_a_wing_never_imports_the_wings_above_it(wing: str, forbidden: str) -> None:
    wrong = [line for line in _reaching(forbidden) if _wing(line.split()[0]) == wing]
    assert wrong == []


def test_nothing_but_the_command_line_imports_it() -> None:
    wrong = [line for line in _reaching("lawkit.cli")
             if not line.startswith(("lawkit.cli", "lawkit.__main__ "))]
    assert wrong == []


def test_src_digest_imports_only_the_standard_library() -> None:
    outside = sorted(f"{name} imports {target}" for name, (_, anywhere) in GRAPH.items()
                     if name.startswith("src_digest") for target in anywhere
                     if target.split(".")[0] not in sys.stdlib_module_names
                     and not target.startswith("src_digest"))
    assert outside == []


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


def _lawkit_edges() -> dict[str, set[str]]:
    """Every import among lawkit's modules, lazy ones included (lawkit/__init__.py left out)."""
    return {name: {m for m in anywhere if m.startswith("lawkit.") and m in GRAPH and m != name}
            for name, (_, anywhere) in GRAPH.items() if name.startswith("lawkit.")}


def test_no_import_cycle_of_any_length_among_lawkits_modules_lazy_imports_counted() -> None:
    edges = _lawkit_edges()
    cycles = [sorted(c) for c in _cycles(edges) if c not in ALLOWED_CYCLES]
    described = [[f"{a} imports {', '.join(sorted(edges[a] & set(c)))}" for a in c]
                 for c in cycles]
    assert described == []


def test_every_allowed_cycle_is_still_a_cycle_so_its_entry_is_removed_once_it_is_broken() -> None:
    present = _cycles(_lawkit_edges())
    assert [sorted(c) for c in ALLOWED_CYCLES if c not in present] == []


def test_the_cycle_finder_finds_a_lazy_cycle_of_three_and_a_subpackage_init() -> None:
    edges = {"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}, "b": {"b.m"}, "b.m": {"b"},
             "c": {"a.x"}}
    assert sorted(sorted(c) for c in _cycles(edges)) == [["a.x", "a.y", "a.z"], ["b", "b.m"]]


def test_the_graph_is_read_from_the_source() -> None:
    # guards the test itself: a known lazy import and a known module-level one are seen
    top, anywhere = GRAPH["lawkit.fitting.provenance"]
    assert "lawkit.config" in top
    assert "lawkit.keying.digest" in anywhere - top
    assert "lawkit.fitting" in GRAPH  # a subpackage's __init__ is a module of the graph


def test_lawkit_top_level_holds_at_most_14_entries_and_each_wing_says_what_it_may_import() -> None:
    entries = [p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"]
    assert len(entries) <= TOP_LEVEL_BUDGET, sorted(entries)
    for wing in ("lawfiles", "keying", "fitting", "footprint"):
        init = PACKAGE / wing / "__init__.py"
        if wing == "footprint" and not init.exists():
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "May import" in doc, wing
