"""The transform's output columns the Kafka writers take (``core/output_columns.py``): names and types."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.output_columns import HEADERS_TYPE, column_type_error, require_output_columns

T = "jobs.enrich:transform"


@pytest.mark.parametrize("types", [
    {"key": "binary", "value": "binary"},
    {"value": "string", "key": "string", "headers": HEADERS_TYPE, "dlq_reason": "string", "topic": "string",
     "partition": "int", "offset": "bigint", "timestamp": "timestamp", "extra": "map<string,int>"},
])
def test_string_or_binary_keys_and_values_and_kafkas_headers_pass(types):
    require_output_columns(T, types)


def test_a_missing_key_or_value_names_what_the_transform_returned():
    with pytest.raises(SpecError, match=r"returned no \['value'\] column\(s\); it has \['key', 'payload'\]"):
        require_output_columns(T, {"key": "binary", "payload": "binary"})


@pytest.mark.parametrize(("name", "found", "fix"), [
    ("key", "int", "F.col('key').cast('string')"),
    ("value", "struct<a:int>", "F.col('value').cast('string')"),
    ("headers", "array<string>", "return the Kafka source's headers column"),
    ("headers", "map<string,binary>", "or drop the column"),
])
def test_another_type_is_refused_naming_the_column_its_type_and_the_fix(name, found, fix):
    types = {"key": "binary", "value": "binary", name: found}
    with pytest.raises(SpecError) as raised:
        require_output_columns(T, types)
    assert f"transform {T!r} returned column {name!r} of type {found}" in raised.value.message
    assert fix in raised.value.fix
    assert column_type_error(T, name, found) is not None
    assert column_type_error(T, "payload", found) is None, "columns the writers do not read are not checked"
