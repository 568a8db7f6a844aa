"""The pipeline spec as a JSON schema, for editors (completion, hover help, errors while typing).

Generated from :class:`~airflow_provider_eos.core.spec.pipeline_spec.PipelineSpec` so it cannot drift from
the model: pydantic gives the fields, types, defaults and enums; each field's description is its
``#:`` comment in the model's source (the one place a field is documented); and the few rules the
validators enforce that a schema can express (``bootstrap.servers`` required, the reserved Kafka
keys, non-empty unique topics, positive numbers) are added here. Everything else stays the
validators' job: a spec the schema accepts can still be refused on load, never the reverse.
The published copy is ``docs/pipeline-spec.schema.json`` (``python -m tools.docs_reference``).
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from typing import Any

from pydantic import BaseModel

from airflow_provider_eos.core.health.thresholds import HealthThresholds
from airflow_provider_eos.core.spec.field_rules import JAVA_INT_MAX, MIN_TRANSACTION_TIMEOUT_MS
from airflow_provider_eos.core.spec.kafka_keys import RESERVED_KAFKA_KEYS
from airflow_provider_eos.core.spec.observability import MetricsSettings
from airflow_provider_eos.core.spec.pipeline_spec import PipelineSpec
from airflow_provider_eos.core.spec.submission import Connector

__all__ = ["JSON_SCHEMA_DIALECT", "field_comments", "plain_text", "spec_json_schema"]

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
_SPEC_DESCRIPTION = (
    "One exactly-once Kafka -> Spark -> Kafka pipeline of airflow-provider-eos: every task of its DAGs "
    "and the Spark job read this one file. Reference: docs/spec.md."
)
# Sphinx roles (:class:`X`, :meth:`x`) read as their text outside Sphinx.
_ROLE = re.compile(r":[a-z]+:`~?([^`]+)`")
_POSITIVE_INTEGERS = ("max_offsets_per_trigger", "batch_budget_ms")


def plain_text(text: str) -> str:
    """A docstring or comment as Markdown-ish text: Sphinx roles dropped, RST literals as single backticks."""
    return _ROLE.sub(r"`\1`", text).replace("``", "`")


def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """The ``#:`` comment above each field of ``model``, joined into one line per field.

    :raises ValueError: naming a field of ``model`` that has no ``#:`` comment: every field is
        documented where it is declared.
    """
    source = textwrap.dedent(inspect.getsource(model))
    lines = source.splitlines()
    body = ast.parse(source).body[0]
    if not isinstance(body, ast.ClassDef):
        raise TypeError(f"{model!r} is not a class defined in Python source")
    comments: dict[str, str] = {}
    for node in body.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            above: list[str] = []
            index = node.lineno - 2  # the line above the field (lineno is 1-based)
            while index >= 0 and lines[index].strip().startswith("#:"):
                above.insert(0, lines[index].strip().removeprefix("#:").strip())
                index -= 1
            comments[node.target.id] = plain_text(" ".join(above))
    missing = [name for name in model.model_fields if not comments.get(name)]
    if missing:
        raise ValueError(f"{model.__name__} fields without a '#:' comment: {', '.join(missing)}")
    return comments


def _describe(schema: dict[str, Any], model: type[BaseModel]) -> None:
    for name, text in field_comments(model).items():
        schema["properties"][name]["description"] = text


def spec_json_schema() -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of a pipeline spec file, as a JSON-compatible dict."""
    schema = PipelineSpec.model_json_schema()
    _describe(schema, PipelineSpec)
    _describe(schema["$defs"]["Connector"], Connector)
    _describe(schema["$defs"]["MetricsSettings"], MetricsSettings)
    for name, definition in schema["$defs"].items():
        if "description" in definition:
            definition["description"] = plain_text(definition["description"])
        definition["title"] = name
    properties = schema["properties"]
    kafka = properties["kafka"]
    kafka["required"] = ["bootstrap.servers"]
    kafka["propertyNames"] = {"minLength": 1, "not": {"enum": sorted(RESERVED_KAFKA_KEYS)}}
    properties["input_topics"].update(minItems=1, uniqueItems=True)
    for name in _POSITIVE_INTEGERS:
        for option in properties[name].get("anyOf", [properties[name]]):
            if option.get("type") == "integer":
                option["exclusiveMinimum"] = 0
    properties["transaction_timeout_ms"].update(minimum=MIN_TRANSACTION_TIMEOUT_MS, maximum=JAVA_INT_MAX)
    # The names the health thresholds have, each a positive integer (min_samples at least 2).
    properties["health_thresholds"].update(
        propertyNames={"enum": list(HealthThresholds.model_fields)},
        additionalProperties={"type": "integer", "exclusiveMinimum": 0},
        properties={"min_samples": {"type": "integer", "minimum": 2}},
    )
    rest = {key: value for key, value in schema.items() if key not in ("title", "description")}
    return {
        "$schema": JSON_SCHEMA_DIALECT,
        "title": "airflow-provider-eos pipeline spec",
        "description": _SPEC_DESCRIPTION,
        **rest,
    }
