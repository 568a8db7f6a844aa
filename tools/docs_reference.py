"""The docs' reference parts generated from the code: ``python -m tools.docs_reference [--check]``.

- ``docs/pipeline-spec.schema.json``: the spec's JSON schema for editors
  (:func:`airflow_provider_eos.core.spec.json_schema.spec_json_schema`);
- the field tables of ``docs/spec.md`` and the rule table of ``docs/preflight-rules.md``, each
  between ``<!-- generated: NAME -->`` and ``<!-- end generated: NAME -->``: the prose around
  them is written by hand, the tables come from the model and the catalog.

Without ``--check`` the files are rewritten; with it nothing is written and the exit code is 1
when a committed file differs from what the code gives (``tests/docs`` checks the same), so a
new field, a changed default or a new rule cannot leave the docs behind.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from airflow_provider_eos.core.metrics import JOB_METRICS, TASK_METRICS
from airflow_provider_eos.core.preflight import RULES
from airflow_provider_eos.core.spec.json_schema import spec_json_schema

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
SCHEMA_FILE = DOCS / "pipeline-spec.schema.json"


# -- rendering helpers ---------------------------------------------------------------------------


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _table(header: tuple[str, ...], rows: Iterable[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_cell(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _type_of(prop: dict[str, Any], defs: dict[str, Any], field: str = "") -> str:
    """A JSON schema property's type as a reader of the spec file says it (``field``: the property's name)."""
    if "anyOf" in prop:
        options = [option for option in prop["anyOf"] if option.get("type") != "null"]
        nullable = len(options) < len(prop["anyOf"])
        text = " or ".join(_type_of(option, defs, field) for option in options)
        return f"{text} or null" if nullable else text
    if "$ref" in prop:
        name = prop["$ref"].rsplit("/", 1)[-1]
        target = defs[name]
        if "enum" in target:
            return " | ".join(f"`{value}`" for value in target["enum"])
        # A nested model is described in its own section of spec.md, "The `<field>` block".
        return f"[{field}](#the-{field}-block)"
    kind = prop.get("type")
    if kind == "array":
        return f"list of {_type_of(prop['items'], defs)}"
    if kind == "object":
        return f"mapping of string to {_type_of(prop['additionalProperties'], defs)}"
    return str(kind)


def _default(name: str, prop: dict[str, Any], required: list[str]) -> str:
    if name in required:
        return "required"
    return f"`{json.dumps(prop.get('default'))}`"


def _fields_table(definition: dict[str, Any], defs: dict[str, Any]) -> str:
    required = definition.get("required", [])
    rows = (
        (f"`{name}`", _type_of(prop, defs, name), _default(name, prop, required), prop.get("description", ""))
        for name, prop in definition["properties"].items()
    )
    return _table(("field", "type", "default", "meaning"), rows)


# -- the generated parts -------------------------------------------------------------------------


def schema_text() -> str:
    """``docs/pipeline-spec.schema.json`` as it must be committed."""
    return json.dumps(spec_json_schema(), indent=2) + "\n"


def spec_fields() -> str:
    """The table of the spec's top-level fields."""
    schema = spec_json_schema()
    return _fields_table(schema, schema["$defs"])


def connector_fields() -> str:
    """The table of the ``connector`` block's fields."""
    schema = spec_json_schema()
    return _fields_table(schema["$defs"]["Connector"], schema["$defs"])


def metrics_fields() -> str:
    """The table of the ``metrics`` block's fields."""
    schema = spec_json_schema()
    return _fields_table(schema["$defs"]["MetricsSettings"], schema["$defs"])


def job_metrics() -> str:
    """The driver exporter's metrics: one row each, in catalog order."""
    rows = ((f"`{m.name}`", m.kind.value, ", ".join(f"`{label}`" for label in m.labels), m.description)
            for m in JOB_METRICS)
    return _table(("metric", "type", "labels", "meaning"), rows)


def task_metrics() -> str:
    """The health and recovery tasks' metrics through Airflow's metrics layer."""
    rows = ((f"`{m.name}`", m.kind.value, m.description) for m in TASK_METRICS)
    return _table(("metric (after Airflow's prefix)", "type", "meaning"), rows)


def preflight_rules() -> str:
    """The pre-flight catalog: one row per rule, in code order."""
    ordered = sorted(RULES, key=lambda rule: rule.code)
    rows = ((f"`{rule.code}`", rule.severity.value, rule.title, rule.fix) for rule in ordered)
    return _table(("code", "severity", "checks", "fix"), rows)


#: Each generated region: (file, region name, generator).
REGIONS: tuple[tuple[Path, str, Callable[[], str]], ...] = (
    (DOCS / "spec.md", "spec-fields", spec_fields),
    (DOCS / "spec.md", "connector-fields", connector_fields),
    (DOCS / "spec.md", "metrics-fields", metrics_fields),
    (DOCS / "observability.md", "job-metrics", job_metrics),
    (DOCS / "observability.md", "task-metrics", task_metrics),
    (DOCS / "preflight-rules.md", "preflight-rules", preflight_rules),
)


def _region(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(<!-- generated: {re.escape(name)} [^>]*-->\n)(.*?)(<!-- end generated: {re.escape(name)} -->)", re.DOTALL
    )


def render_file(path: Path, text: str) -> str:
    """``text`` (the content of ``path``) with each of its generated regions filled in anew.

    :raises ValueError: when a region this tool owns in ``path`` is missing.
    """
    for file, name, generate in REGIONS:
        if file != path:
            continue
        pattern = _region(name)
        if not pattern.search(text):
            raise ValueError(f"{path.name} has no region '<!-- generated: {name} ... -->'")
        body = generate()
        text = pattern.sub(lambda match, body=body: match[1] + body + "\n" + match[3], text)
    return text


def expected_files() -> dict[Path, str]:
    """Every generated file's expected content."""
    files = {SCHEMA_FILE: schema_text()}
    for path in dict.fromkeys(file for file, _, _ in REGIONS):
        files[path] = render_file(path, path.read_text(encoding="utf-8"))
    return files


def stale_files() -> list[Path]:
    """The generated files whose committed content differs from what the code gives."""
    return [
        path
        for path, content in expected_files().items()
        if not path.exists() or path.read_text(encoding="utf-8") != content
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs_reference", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a generated file is stale")
    args = parser.parse_args(argv)
    if args.check:
        stale = stale_files()
        for path in stale:
            print(f"stale: {path.relative_to(REPO)} (run `python -m tools.docs_reference`)", file=sys.stderr)
        return 1 if stale else 0
    for path, content in expected_files().items():
        if not path.exists() or path.read_text(encoding="utf-8") != content:
            path.write_text(content, encoding="utf-8")
            print(f"wrote {path.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
