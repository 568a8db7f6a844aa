"""The package's modules import each other in one direction: no import circle, lazy imports included.

A circle makes a reader climb a floor to understand the one below, and a lazy import that breaks
it at run time only hides it. The scan reads every module with ``ast``: imports inside functions
count, imports under ``if TYPE_CHECKING:`` (annotations only) do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGE = "airflow_provider_eos"


def _modules() -> dict[str, Path]:
    found = {}
    for path in (REPO / PACKAGE).rglob("*.py"):
        parts = path.relative_to(REPO).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(child) for child in ast.walk(node))
    return inside


def _imported(module: str, path: Path, node: ast.Import | ast.ImportFrom, modules: dict[str, Path]) -> list[str]:
    """The package's modules ``node`` imports: ``from a.b import c`` names ``a.b.c`` when that is a module."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
    return [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]


def import_graph() -> dict[str, set[str]]:
    """``{module: the package's modules it imports at run time}``."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        annotations_only = _type_checking_nodes(tree)
        edges: set[str] = set()
        for node in ast.walk(tree):
            if not isinstance(node, ast.Import | ast.ImportFrom) or id(node) in annotations_only:
                continue
            for name in _imported(module, path, node, modules):
                while name and name not in modules:  # ``from pkg.mod import function`` -> pkg.mod
                    name = name.rpartition(".")[0]
                if name.startswith(PACKAGE) and name != module:
                    edges.add(name)
        graph[module] = edges
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:  # noqa: C901  # Tarjan's algorithm, kept whole as published
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"a"}}, []),
    ],
)
def test_the_circle_finder_finds_circles_and_nothing_else(graph: dict[str, set[str]], expected: list[list[str]]):
    assert circles(graph) == expected


def _function_level_imports(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules ``module`` imports only inside functions (the edges a top-level scan misses)."""
    tree = ast.parse(path.read_text(), str(path))
    top, inner = set(), set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            top.update(_imported(module, path, node, modules))
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for child in ast.walk(node):
                if isinstance(child, ast.ImportFrom) and (child.module or "").startswith(PACKAGE):
                    inner.update(_imported(module, path, child, modules))
    return {name for name in inner - top if name in modules and name != module}


def test_the_scan_sees_lazy_imports_and_skips_annotation_only_ones():
    modules = _modules()
    graph = import_graph()
    lazy = {module: _function_level_imports(module, path, modules) for module, path in modules.items()}
    lazy = {module: edges for module, edges in lazy.items() if edges}
    # The package has function-level imports (the Kafka admin, only when a command needs it) ...
    assert lazy, "expected at least one module importing the package only inside a function"
    # ... and each of them is an edge of the graph, so a circle through one would be found.
    missing = {module: sorted(edges - graph[module]) for module, edges in lazy.items() if edges - graph[module]}
    assert missing == {}
    # An import under TYPE_CHECKING only (an annotation) is no edge: those would make circles of every
    # pair of modules that merely name each other's types.
    annotation_only = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        typing_nodes = _type_checking_nodes(tree)
        typed, run = set(), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                (typed if id(node) in typing_nodes else run).update(_imported(module, path, node, modules))
        only = {name for name in typed - run if name in modules}
        if only:
            annotation_only[module] = only
    assert annotation_only, "expected at least one module importing the package under TYPE_CHECKING only"
    assert all(not edges & graph[module] for module, edges in annotation_only.items())


def test_no_import_circle_inside_the_package():
    found = circles(import_graph())
    assert found == [], f"modules that import each other (break the circle by moving what both need down): {found}"
