"""The transform's output columns as the writers take them, with the session's real Spark.

The Arrow writers' selection of a batch is built once per query and reused for the batches that
follow; a key or value of a type no writer takes is refused when the query starts, and by the JVM
writer itself, on the driver, before any task.
"""

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

    def counting(schema):
        built.append(True)
        return build(schema)

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


def _typed_spec(tmp_path, transform: str):
    """A spec nothing connects with: the checks run on the transform's schema, before a query or broker."""
    from airflow_provider_eos.core.spec import PipelineSpec

    return PipelineSpec(name="typed", kafka={"bootstrap.servers": "127.0.0.1:9"}, input_topics=["in"],
                        output_topic="out", group_id="typed-sink", transactional_id_prefix="typed-txn",
                        checkpoint_location=str(tmp_path / "checkpoint"), transform=transform)


def test_the_query_refuses_a_key_of_another_type_before_it_starts(spark, tmp_path):
    from airflow_provider_eos.core.errors import SpecError
    from airflow_provider_eos.spark.job import start_query

    # Nothing connects: the check runs on the transform's schema, before the query (or a broker) is needed.
    spec = _typed_spec(tmp_path, "tests.support.transforms:numbered_keys")
    with pytest.raises(SpecError, match=r"returned column 'key' of type int; the Kafka writers take string or binary"):
        start_query(spark, spec)
    assert not spark.streams.active
    assert not (tmp_path / "checkpoint").exists()


def test_the_query_refuses_a_source_column_of_another_type_before_it_starts(spark, tmp_path):
    from airflow_provider_eos.core.errors import SpecError
    from airflow_provider_eos.spark.job import start_query

    # The JVM writer reads partition as the source's int: the string "0" read so is its length, 1.
    spec = _typed_spec(tmp_path, "tests.support.transforms:partition_as_text")
    with pytest.raises(SpecError, match=r"returned column 'partition' of type string; 'partition' is a Kafka source"):
        start_query(spark, spec)
    assert not spark.streams.active


def test_the_jvm_writer_refuses_a_key_of_another_type_on_the_driver_naming_it(spark, tmp_path):
    """The JVM writer reads the transform's rows as they are, so it checks their types itself, before any task."""
    from airflow_provider_eos.core.errors import SpecError
    from airflow_provider_eos.core.plan_alignment import InputRange, map_input_partitions
    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.core.topic_partition import TopicPartition
    from airflow_provider_eos.spark.executor_writers import BatchTasks
    from airflow_provider_eos.spark.jvm_writer import JvmTasks
    from airflow_provider_eos.spark.sink_points import SinkObserver

    spec = PipelineSpec(name="typed", kafka={"bootstrap.servers": "127.0.0.1:9"}, input_topics=["in"],
                        output_topic="out", group_id="typed-sink", transactional_id_prefix="typed-txn",
                        checkpoint_location=str(tmp_path), transform="jobs.t:numbered")
    mapping = map_input_partitions(3, [InputRange(spark_partition=0, topic="in", partition=0, from_offset=0,
                                                  until_offset=1)])
    tasks = BatchTasks(spec, "q", 3, {}, {TopicPartition("in", 0): 1}, mapping, SinkObserver().for_tasks())
    frame = spark.createDataFrame([(7, "v")], "key int, value string").coalesce(1)
    writer = JvmTasks(spec)
    try:
        with pytest.raises(SpecError) as raised:
            writer.run(frame, tasks, [])
    finally:
        writer.close()
    assert "transform 'jobs.t:numbered' returned column 'key' of type int" in raised.value.message
    assert "F.col('key').cast('string')" in raised.value.fix
