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


def test_the_scan_sees_lazy_imports_and_skips_annotation_only_ones():
    graph = import_graph()
    # A function-level import (the Kafka admin, only when a command needs it) is an edge ...
    assert any(graph.values())
    lazy = {module for module, path in _modules().items()
            if any(isinstance(node, ast.FunctionDef) and any(isinstance(inner, ast.ImportFrom)
                                                              and (inner.module or "").startswith(PACKAGE)
                                                              for inner in ast.walk(node))
                   for node in ast.walk(ast.parse(path.read_text())))}
    assert lazy, "expected at least one module with a function-level import of the package"
    assert all(graph[module] for module in lazy)


def test_no_import_circle_inside_the_package():
    found = circles(import_graph())
    assert found == [], f"modules that import each other (break the circle by moving what both need down): {found}"
