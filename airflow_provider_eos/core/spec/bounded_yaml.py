"""YAML read with bounds, and described without its text: where each key is, where a syntax error is.

A spec holds secrets and its errors reach Airflow's import errors (the DAGs parse every spec at
import), so nothing here quotes the document: PyYAML's messages carry a snippet of the source
line (a ``sasl.password:`` line) and sometimes a piece of a value (an unquoted password starting
with ``*`` reads as an alias and is named as one); :func:`describe_yaml_error` keeps only the
problem, the line, the column and the key. Aliases are walked once more, bounded: an alias bomb
("billion laughs") builds a small graph that every later reader (validation, ``repr``) expands.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

__all__ = [
    "MAX_DEPTH",
    "MAX_NODES",
    "Location",
    "LocationMap",
    "YamlBoundsError",
    "compose_bounded",
    "describe_yaml_error",
    "render_path",
]

#: A spec is a few dozen settings; far more nodes means aliases expanding (or not a spec).
MAX_NODES = 20_000
#: A spec nests three levels (``connector`` -> ``jars`` -> a jar); deeper means not a spec.
MAX_DEPTH = 32

Location = tuple[int, int]
"""1-based ``(line, column)``."""

LocationMap = dict[tuple[str | int, ...], Location]
"""Where each key (and list item) of a document starts, by its path (``("kafka", "sasl.password")``)."""

# A line that starts a mapping entry: its key, bare or quoted (also a list item's first key).
_KEY_LINE = re.compile(
    r"""^(?P<indent>[ \t]*)(?:-[ \t]+)?(?P<q>["']?)"""
    r"""(?P<key>[^\s"'#:{}\[\],&*!|>%@`][^"'#:{}\[\]]*?)(?P=q)[ \t]*:(?:\s|$)"""
)
# A quoted piece of PyYAML's problem text longer than a token (an alias or tag name, read from a value).
_QUOTED = re.compile(r"'([^']*)'")


class YamlBoundsError(ValueError):
    """The document nests deeper than :data:`MAX_DEPTH` or expands to more than :data:`MAX_NODES` nodes."""


def render_path(path: tuple[str | int, ...]) -> str:
    """``kafka['sasl.password']``, ``input_topics[1]``: brackets after the field, as Kafka keys hold dots."""
    if not path:
        return "(spec)"
    head, *rest = path
    return str(head) + "".join(f"[{part}]" if isinstance(part, int) else f"[{part!r}]" for part in rest)


def _children(node: Node, path: tuple[str | int, ...]) -> Iterator[tuple[Node, tuple[str | int, ...], Node]]:
    """``(child, its path, the node whose start is its location)`` of a mapping or sequence node."""
    if isinstance(node, MappingNode):
        for key, value in node.value:
            sub = (*path, key.value if isinstance(key, ScalarNode) else "?")
            yield key, sub, key
            yield value, sub, key
    elif isinstance(node, SequenceNode):
        for index, item in enumerate(node.value):
            yield item, (*path, index), item


def _walk(root: Node) -> LocationMap:
    """Every path's location, expanding aliases as a reader would, refusing past the bounds."""
    locations: LocationMap = {}
    stack: list[tuple[Node, tuple[str | int, ...]]] = [(root, ())]
    seen = 0
    while stack:
        node, path = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise YamlBoundsError(f"expands to more than {MAX_NODES} values (aliases repeating anchors)")
        if len(path) > MAX_DEPTH:
            raise YamlBoundsError(f"nests deeper than {MAX_DEPTH} levels (or an alias refers to itself)")
        for child, sub, start in _children(node, path):
            locations.setdefault(sub, (start.start_mark.line + 1, start.start_mark.column + 1))
            stack.append((child, sub))
    return locations


def compose_bounded(text: str) -> tuple[object, LocationMap]:
    """The document in ``text`` (safe types only) and where its keys are.

    :raises yaml.YAMLError: the document is not valid YAML.
    :raises YamlBoundsError: it nests too deep or expands too far.
    """
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except RecursionError:
            raise YamlBoundsError(f"nests deeper than {MAX_DEPTH} levels") from None
        if node is None:
            return None, {}
        locations = _walk(node)
        return loader.construct_document(node), locations
    finally:
        loader.dispose()


def _key_path_at(lines: list[str], index: int) -> tuple[str, ...]:
    """The keys leading to line ``index`` (0-based), read from indentation; empty if it holds no key."""
    if not 0 <= index < len(lines):
        return ()
    match = _KEY_LINE.match(lines[index])
    if match is None:
        return ()
    path = [match.group("key").strip()]
    indent = len(match.group("indent"))
    for line in reversed(lines[:index]):
        parent = _KEY_LINE.match(line)
        if parent is not None and len(parent.group("indent")) < indent and not line.lstrip().startswith("-"):
            path.insert(0, parent.group("key").strip())
            indent = len(parent.group("indent"))
            if indent == 0:
                break
    return tuple(path)


def _problem(text: str | None) -> str:
    """PyYAML's problem text without the names it read from the document (an alias's, a tag's)."""
    if not text:
        return ""
    return _QUOTED.sub(lambda m: m.group(0) if len(m.group(1)) <= 2 or m.group(1).startswith("<") else "'...'", text)


def describe_yaml_error(err: yaml.YAMLError, text: str) -> str:
    """``"<problem> at line L, column C (key kafka['sasl.password'])"``: PyYAML's error without the source.

    :param err: PyYAML's error.
    :param text: the document, to find the key on the error's line (never quoted).
    """
    if not isinstance(err, yaml.MarkedYAMLError):
        return "the document cannot be read as YAML"
    lines = text.splitlines()
    parts = []
    path: tuple[str, ...] = ()
    for what, mark in ((err.problem, err.problem_mark), (err.context, err.context_mark)):
        if mark is None:
            continue
        parts.append(f"{_problem(what) or 'error'} at line {mark.line + 1}, column {mark.column + 1}")
        path = path or _key_path_at(lines, mark.line)
    where = f" (key {render_path(path)})" if path else ""
    return (", ".join(parts) or _problem(err.problem) or "invalid YAML") + where
