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


@pytest.mark.parametrize(("name", "found", "wanted"), [
    ("partition", "string", "int"),
    ("partition", "bigint", "int"),
    ("topic", "int", "string"),
    ("offset", "int", "bigint"),
    ("dlq_reason", "binary", "string"),
    ("dlq_reason", "boolean", "string"),
])
def test_the_source_columns_and_dlq_reason_are_the_sources_types(name, found, wanted):
    # The JVM writer reads them as the source's columns: a string partition read as an int is its length.
    with pytest.raises(SpecError) as raised:
        require_output_columns(T, {"key": "binary", "value": "binary", name: found})
    assert f"returned column {name!r} of type {found}; {name!r} is a Kafka source column" in raised.value.message
    assert f"F.col({name!r}).cast({wanted!r})" in raised.value.fix and "rename the column" in raised.value.fix


def test_a_dlq_reason_that_is_null_on_every_row_is_taken():
    require_output_columns(T, {"key": "binary", "value": "binary", "dlq_reason": "void"})
