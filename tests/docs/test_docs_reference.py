"""The generated parts of the docs (the spec reference, its JSON schema, the pre-flight rules) match the code."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
import yaml

from airflow_provider_eos.core.errors import SpecError
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


def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(docs_reference.SCHEMA_FILE.read_text())
    validator_class = jsonschema.validators.validator_for(schema)
    validator_class.check_schema(schema)
    return validator_class(schema)


def test_the_shipped_example_spec_is_valid_under_the_schema() -> None:
    example = yaml.safe_load((docs_reference.REPO / "dags" / "pipelines" / "orders_enrich.yaml").read_text())
    errors = [error.message for error in _validator().iter_errors(example)]
    assert not errors, errors


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"writers": "everywhere"}, "an unknown writer"),
        ({"kafka": {"group.id": "x", "bootstrap.servers": "b:9092"}}, "a key the pipeline derives"),
        ({"kafka": {"security.protocol": "SSL"}}, "no bootstrap.servers"),
        ({"input_topics": []}, "no input topic"),
        ({"transaction_timeout_ms": 0}, "a timeout of 0"),
        ({"transaction_timeout_ms": 999}, "a timeout below librdkafka's least, 1000"),
        ({"triger": "10 seconds"}, "a misspelt field"),
    ],
)
def test_the_schema_refuses_what_the_model_refuses(change: dict[str, Any], reason: str) -> None:
    """An editor marks these while typing; loading the spec refuses them too."""
    example = yaml.safe_load((docs_reference.REPO / "dags" / "pipelines" / "orders_enrich.yaml").read_text())
    spec = {**example, **change}
    assert list(_validator().iter_errors(spec)), f"the schema accepts {reason}"
    with pytest.raises(SpecError):
        PipelineSpec.from_dict(spec)
