"""The layout of DESIGN.md section 2, read from the source: which wing may import which, and no
import cycle at module level.

Imports are read with `ast` from every module, so a lazy import inside a function counts for the
directions (it runs sooner or later) but not for cycles (a module-level cycle is what breaks an
import order); imports under `if TYPE_CHECKING:` count for neither.
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


def test_no_import_cycle_at_module_level() -> None:
    edges = {name: top for name, (top, _) in GRAPH.items()}
    cycles: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def walk(node: str, path: list[str]) -> None:
        state[node] = 1
        for target in sorted(edges.get(node, ())):
            # importing a package runs its __init__, never the reverse
            if target == node or node.startswith(target + "."):
                continue
            if state.get(target) == 1:
                cycles.append([*path[path.index(target):], target])
            elif target not in state:
                walk(target, [*path, target])
        state[node] = 2

    for name in sorted(edges):
        if name not in state:
            walk(name, [name])
    assert cycles == []


def test_the_graph_is_read_from_the_source() -> None:
    # guards the test itself: a known lazy import and a known module-level one are seen
    top, anywhere = GRAPH["lawkit.fitting.fit"]
    assert "lawkit.lawfiles.lawfile" in top
    assert "lawkit.keying.digest" in anywhere - top


def test_lawkit_top_level_holds_at_most_14_entries_and_each_wing_says_what_it_may_import() -> None:
    entries = [p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"]
    assert len(entries) <= TOP_LEVEL_BUDGET, sorted(entries)
    for wing in ("lawfiles", "keying", "fitting", "footprint"):
        init = PACKAGE / wing / "__init__.py"
        if wing == "footprint" and not init.exists():
            continue
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        assert "May import" in doc, wing
