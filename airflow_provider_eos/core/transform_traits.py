"""What a transform says about itself: the :func:`stateful_transform` marker, read at run time and from source.

The executor writers need a plan where each Spark task holds the rows of one input partition
(docs/architecture.md); a stateful transform (windows, aggregations, deduplication, stream-stream joins)
never gives one. The job finds that out from the executed plan at start, with Spark. A transform
can also say it up front::

    from airflow_provider_eos.core.transform_traits import stateful_transform

    @stateful_transform
    def transform(frame):
        return frame.withWatermark("ts", "30 seconds").groupBy(...).count()

so that pre-flight, which runs where there may be no Spark, tells a ``writers: executors`` spec
it cannot work before anything is submitted. Pre-flight reads the marker from the module's
source (:func:`traits_from_source`) rather than importing it: transform modules import PySpark
at their top, and importing a user's module on the Airflow worker would run its code there.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import TypeVar

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.transform_reference import resolve_transform

__all__ = ["STATEFUL_ATTRIBUTE", "TransformTraits", "is_stateful_transform", "stateful_transform", "traits_from_source"]

#: The attribute :func:`stateful_transform` sets on the function.
STATEFUL_ATTRIBUTE = "__eos_stateful__"

_DECORATOR = "stateful_transform"

F = TypeVar("F", bound=Callable[..., object])


def stateful_transform(function: F) -> F:
    """Mark a transform as stateful: it keeps state across rows of several partitions or batches.

    Returns the function itself, marked; the job and pre-flight treat it as not partition-aligned,
    so ``writers: auto`` uses the driver writer and ``writers: executors`` is refused.
    """
    setattr(function, STATEFUL_ATTRIBUTE, True)
    return function


def is_stateful_transform(function: Callable[..., object]) -> bool:
    """Whether ``function`` carries the :func:`stateful_transform` marker."""
    return getattr(function, STATEFUL_ATTRIBUTE, False) is True


class TransformTraits(FrozenModel):
    """What is known about a spec's transform without Spark.

    :param reference: the spec's ``transform`` (``None``: the identity, which is stateless).
    :param stateful: whether the transform declares itself stateful.
    :param evidence: where that was read, for messages.
    """

    reference: str | None
    stateful: bool
    evidence: str


def _is_marker(node: ast.expr) -> bool:
    """``stateful_transform``, ``module.stateful_transform`` or either called with no arguments."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Name):
        return node.id == _DECORATOR
    return isinstance(node, ast.Attribute) and node.attr == _DECORATOR


def traits_from_source(reference: str, source: str, where: str) -> TransformTraits | None:
    """Read the :func:`stateful_transform` marker of ``module:function`` from the module's source.

    Looks at the module's top level only: ``@stateful_transform def function(...)`` or
    ``function = stateful_transform(...)`` mark it; a plain ``def function`` does not.

    :param reference: the spec's ``module:function``.
    :param source: the module's source text.
    :param where: the module's file, for the evidence.
    :return: the traits, or ``None`` when the function is not defined at the module's top level
        (imported from elsewhere, built at run time) or the source does not parse: then
        nothing can be told without importing it.
    """
    function = resolve_transform(reference).function
    try:
        tree = ast.parse(source, filename=where)
    except SyntaxError:
        return None
    # The last top-level binding of the name wins, as it does when the module runs; None: opaque.
    bound, stateful = False, None
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == function:
            bound, stateful = True, any(_is_marker(d) for d in node.decorator_list)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == function for t in node.targets):
            value = node.value
            bound, stateful = True, (True if isinstance(value, ast.Call) and _is_marker(value.func) else None)
    if not bound or stateful is None:
        return None
    marker = f"@{_DECORATOR}" if stateful else f"no @{_DECORATOR}"
    return TransformTraits(reference=reference, stateful=stateful, evidence=f"{function} in {where}: {marker}")
