"""The generated parts of the docs (the spec reference, its JSON schema, the pre-flight rules) match the code."""

from __future__ import annotations

import json
from pathlib import Path

from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.spec.json_schema import field_comments, spec_json_schema
from tools import docs_reference


def test_the_committed_generated_files_are_current() -> None:
    stale = [str(path.relative_to(docs_reference.REPO)) for path in docs_reference.stale_files()]
    assert not stale, f"stale generated docs {stale}: run `python -m tools.docs_reference` (or `make docs`) and commit"


def test_every_spec_field_is_documented_in_the_schema() -> None:
    schema = spec_json_schema()
    assert set(schema["properties"]) == set(PipelineSpec.model_fields)
    assert all(prop.get("description") for prop in schema["properties"].values())
    assert set(field_comments(PipelineSpec)) == set(PipelineSpec.model_fields)


def test_the_example_pipeline_satisfies_the_schema_s_required_fields() -> None:
    """A light check without a JSON-schema library: the shipped example has every required field and no other."""
    import yaml

    schema = json.loads(docs_reference.SCHEMA_FILE.read_text())
    example = yaml.safe_load((Path(docs_reference.REPO) / "dags" / "pipelines" / "orders_enrich.yaml").read_text())
    assert set(schema["required"]) <= set(example)
    assert set(example) <= set(schema["properties"])
    assert "bootstrap.servers" in example["kafka"]
