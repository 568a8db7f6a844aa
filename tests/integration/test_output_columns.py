"""The writers' selection of a batch, built once per query and reused for the batches that follow."""

from __future__ import annotations

import pytest

from airflow_provider_eos.spark import record_producer
from airflow_provider_eos.spark.record_producer import OutputColumns, output_frame

pytestmark = [pytest.mark.integration, pytest.mark.spark]

_SCHEMA = "key string, value string, headers array<struct<key:string,value:binary>>, dlq_reason string"


def _rows(frame) -> list[tuple]:
    return sorted((bytes(r.key), bytes(r.value), [(h.key, h.value) for h in r.headers], r.dlq_reason)
                  for r in frame.collect())


def test_a_querys_batches_share_their_columns_and_a_new_schema_gets_its_own(spark, monkeypatch) -> None:
    built: list[bool] = []
    build = record_producer._output_columns

    def counting(schema, *, arrow: bool):
        built.append(arrow)
        return build(schema, arrow=arrow)

    monkeypatch.setattr(record_producer, "_output_columns", counting)
    first = spark.createDataFrame([("k1", "v1", None, None), ("k2", "v2", [("h", b"x")], "bad")], _SCHEMA)
    second = spark.createDataFrame([("k3", "v3", None, None)], _SCHEMA)
    output = OutputColumns()
    assert _rows(output.frame(first)) == [(b"k1", b"v1", [], None), (b"k2", b"v2", [("h", b"x")], "bad")]
    assert _rows(output.frame(second)) == [(b"k3", b"v3", [], None)]
    assert built == [True], "the second batch of the same schema reuses the first's columns"

    plain = spark.createDataFrame([(b"k4", b"v4")], "key binary, value binary")
    assert output.frame(plain).columns == ["key", "value"]
    assert built == [True, True]
    # The same selection as output_frame's, which builds its columns on every call.
    assert _rows(output.frame(first)) == _rows(output_frame(first))
