"""The plan reader against real Spark and the real broker: a Kafka source of 3 partitions, foreachBatch.

Each test runs one ``availableNow`` query whose batch function reads the batch's plan and scan
ranges (:func:`read_batch_plan`), decides alignment, maps and cross-checks the ranges against the
checkpoint's WAL, and, for aligned plans, looks at which rows each Spark partition really holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import EosError, PlanNotAlignedError, PlanReadError
from airflow_provider_eos.core.plan_alignment import (
    BatchPlan,
    Breach,
    InputPartitionMap,
    PlanAlignment,
    cross_check,
    decide_alignment,
    map_input_partitions,
)
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.spark.plan_reader import PlanReader, read_batch_plan
from spark_jobs.transforms import fraud_alerts, json_enrich

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 3
PER_PARTITION = 10


@dataclass
class Batch:
    """What the batch function saw for one micro-batch."""

    batch_plan: BatchPlan
    decision: PlanAlignment
    mapping: InputPartitionMap | None = None
    mapping_error: EosError | None = None
    # Spark partition index -> (rows, {(topic, partition)}, min offset, max offset), for aligned plans.
    held: dict[int, tuple[int, list, int | None, int | None]] = field(default_factory=dict)
    kept: BatchPlan | None = None  # read again through a PlanReader kept across batches, when one is given

    @property
    def operators(self) -> list[str]:
        return [node.name for node in self.batch_plan.plan.walk()]


def produce_events(bootstrap: str, topic: str) -> None:
    """PER_PARTITION JSON events into each partition, keyed ``p<partition>-<i>``."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition in range(PARTITIONS):
        for i in range(PER_PARTITION):
            event = {"id": f"e{partition}-{i}", "user": f"user{i % 2}", "amount": 50.0 * i,
                     "ts": f"2026-11-01T00:00:{i:02d}Z"}
            producer.produce(topic, key=f"p{partition}-{i}".encode(), value=json.dumps(event).encode(),
                             partition=partition)
    assert producer.flush(30) == 0, "records were not delivered"


def _rows_per_spark_partition(frame: Any) -> dict[int, tuple[int, list, int | None, int | None]]:
    def summarize(index: int, rows: Iterator[Any]) -> Iterator[tuple]:
        count, origins, offsets = 0, set(), []
        for row in rows:
            count += 1
            values = row.asDict()
            if "partition" in values and values["partition"] is not None:
                origins.add((values["topic"], values["partition"]))
                offsets.append(values["offset"])
        yield index, count, sorted(origins), min(offsets, default=None), max(offsets, default=None)

    return {index: rest for index, *rest in frame.rdd.mapPartitionsWithIndex(summarize).collect()}


def run_query(
    spark: Any,
    bootstrap: str,
    topic: str,
    checkpoint: Path,
    transform: Callable[[Any], Any],
    kept_reader: PlanReader | None = None,
    **source_options: str,
) -> list[Batch]:
    """Run ``transform`` over ``topic`` to the end of its input and return what every batch saw.

    With ``kept_reader``, every batch's plan is also read through it, after the read of a fresh reader.
    """
    reader = CheckpointReader(str(checkpoint))
    seen: list[Batch] = []

    def on_batch(frame: Any, batch_id: int) -> None:
        batch_plan = read_batch_plan(frame, batch_id, spark)
        batch = Batch(batch_plan, decide_alignment(batch_plan.plan))
        if kept_reader is not None:
            batch.kept = kept_reader.read(frame, batch_id)
        try:
            batch.mapping = map_input_partitions(batch_id, batch_plan.input_ranges)
            cross_check(batch.mapping, start=reader.start_offsets(batch_id), end=reader.planned_offsets(batch_id))
        except EosError as err:
            batch.mapping_error = err
        if batch.decision.aligned:
            batch.held = _rows_per_spark_partition(frame)
        else:
            # Spark 4.2 fails a stateful batch whose function did not run every partition (state
            # store commit validation); a sink always does, so the harness does too.
            frame.write.format("noop").mode("overwrite").save()
        seen.append(batch)

    stream = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
    )
    for key, value in source_options.items():
        stream = stream.option(key, value)
    query = (
        transform(stream.load()).writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        finished = query.awaitTermination(300)
    finally:
        if query.isActive:
            query.stop()
    assert finished, "the query did not end within 300 s"
    assert query.exception() is None, f"the query failed: {query.exception()}"
    assert seen, "no batch ran"
    return seen


def wal_ranges(checkpoint: Path, batch_id: int) -> dict[TopicPartition, tuple[int, int]]:
    """``offsets/N-1..offsets/N`` of batch ``batch_id`` (initial offsets for batch 0), partitions with input only."""
    reader = CheckpointReader(str(checkpoint))
    start, end = reader.start_offsets(batch_id), reader.planned_offsets(batch_id)
    return {tp: (start[tp], end[tp]) for tp in end if end[tp] > start[tp]}


def mapped_ranges(batch: Batch) -> dict[TopicPartition, tuple[int, int]]:
    assert batch.mapping is not None, f"no mapping: {batch.mapping_error}"
    return {r.tp: (r.from_offset, r.until_offset) for r in batch.mapping.ranges}


def assert_rows_stay_in_their_partition(batch: Batch) -> None:
    """Spark partition i holds only rows of the Kafka range the mapping gives index i."""
    assert batch.mapping is not None
    assert sorted(batch.held) == list(range(len(batch.mapping.ranges)))
    for index, (_rows, origins, low, high) in batch.held.items():
        expected = batch.mapping.for_spark_partition(index)
        assert origins in ([], [(expected.topic, expected.partition)]), (index, origins, expected)
        if low is not None:
            assert expected.from_offset <= low <= high < expected.until_offset, (index, low, high, expected)


@pytest.fixture
def events_topic(bootstrap: str, topic_factory: Callable[..., str]) -> str:
    topic = topic_factory("plan", partitions=PARTITIONS)
    produce_events(bootstrap, topic)
    return topic


def test_json_enrich_is_aligned_and_its_ranges_are_the_wal_s(spark, bootstrap, events_topic, tmp_path) -> None:
    checkpoint = tmp_path / "checkpoint"
    batches = run_query(spark, bootstrap, events_topic, checkpoint, json_enrich.transform,
                        maxOffsetsPerTrigger=str(PARTITIONS * PER_PARTITION // 2))

    assert [b.batch_plan.batch_id for b in batches] == [0, 1]
    for batch in batches:
        assert batch.decision.aligned, batch.decision.reason
        assert batch.mapping_error is None, batch.mapping_error
        assert "MicroBatchScanExec" in batch.operators and "ProjectExec" in batch.operators
        ranges = mapped_ranges(batch)
        assert ranges == wal_ranges(checkpoint, batch.batch_plan.batch_id)
        assert sorted(tp.partition for tp in ranges) == [0, 1, 2]
        assert_rows_stay_in_their_partition(batch)
        assert sum(rows for rows, *_ in batch.held.values()) == PARTITIONS * PER_PARTITION // 2


def test_fraud_alerts_is_not_aligned_naming_the_stateful_operator(spark, bootstrap, events_topic, tmp_path) -> None:
    batches = run_query(spark, bootstrap, events_topic, tmp_path / "checkpoint", fraud_alerts.transform)

    first = batches[0]
    assert first.batch_plan.batch_id == 0
    assert not first.decision.aligned
    assert first.decision.offenders[0].breach is Breach.STATEFUL
    assert "StateStoreSaveExec" in first.decision.operator
    assert {"StateStoreSaveExec", "StateStoreRestoreExec", "ShuffleExchangeExec", "UnionExec"} <= set(first.operators)
    assert "writers: driver" in first.decision.fix


def test_repartition_is_not_aligned_naming_the_exchange(spark, bootstrap, events_topic, tmp_path) -> None:
    batches = run_query(spark, bootstrap, events_topic, tmp_path / "checkpoint",
                        lambda frame: json_enrich.transform(frame).repartition(4))

    decision = batches[0].decision
    assert [o.breach for o in decision.offenders] == [Breach.EXCHANGE]
    assert "ShuffleExchangeExec" in decision.operator and "RoundRobinPartitioning(4)" in decision.operator
    # The scan itself is still one range per Kafka partition, equal to the WAL's.
    assert mapped_ranges(batches[0]) == wal_ranges(tmp_path / "checkpoint", 0)


def test_min_partitions_is_not_aligned_naming_the_option(spark, bootstrap, events_topic, tmp_path) -> None:
    batches = run_query(spark, bootstrap, events_topic, tmp_path / "checkpoint", json_enrich.transform,
                        minPartitions="6")

    first = batches[0]
    assert [o.breach for o in first.decision.offenders] == [Breach.SOURCE_SPLIT]
    assert first.decision.operator == "Kafka source option minPartitions=6"
    # Spark really split the partitions: the range map refuses two tasks for one Kafka partition.
    assert len(first.batch_plan.input_ranges) > PARTITIONS
    assert isinstance(first.mapping_error, PlanNotAlignedError), first.mapping_error
    assert "by Spark partitions" in first.mapping_error.message


def test_transform_dropping_every_source_column_is_aligned(spark, bootstrap, events_topic, tmp_path) -> None:
    from pyspark.sql import functions as F

    checkpoint = tmp_path / "checkpoint"
    batches = run_query(spark, bootstrap, events_topic, checkpoint,
                        lambda frame: frame.select((F.length("value") * 2).alias("size")))

    batch = batches[0]
    assert batch.decision.aligned, batch.decision.reason
    assert batch.mapping_error is None, batch.mapping_error
    assert mapped_ranges(batch) == wal_ranges(checkpoint, 0)
    # No source column is left, yet each Spark partition holds exactly its range's rows.
    assert {i: rows for i, (rows, *_) in batch.held.items()} == {
        r.spark_partition: r.until_offset - r.from_offset for r in batch.mapping.ranges
    }


def test_partition_whose_rows_are_all_filtered_out_stays_in_the_map(spark, bootstrap, events_topic, tmp_path) -> None:
    from pyspark.sql import functions as F

    def without_partition_1(frame: Any) -> Any:
        return json_enrich.transform(frame.where(~F.col("key").cast("string").startswith("p1-")))

    checkpoint = tmp_path / "checkpoint"
    batches = run_query(spark, bootstrap, events_topic, checkpoint, without_partition_1)

    batch = batches[0]
    assert batch.decision.aligned, batch.decision.reason
    assert batch.mapping_error is None, batch.mapping_error
    assert mapped_ranges(batch) == wal_ranges(checkpoint, 0)
    emptied = batch.mapping.by_partition()[TopicPartition(events_topic, 1)]
    assert emptied.until_offset - emptied.from_offset == PER_PARTITION
    assert batch.held[emptied.spark_partition][0] == 0
    assert_rows_stay_in_their_partition(batch)


def test_a_reader_kept_across_batches_and_queries_reads_each_batchs_own_plan(
    spark, bootstrap, events_topic, tmp_path
) -> None:
    reader, per_batch = PlanReader(spark), str(PARTITIONS * PER_PARTITION // 3)
    aligned = run_query(spark, bootstrap, events_topic, tmp_path / "aligned", json_enrich.transform, reader,
                        maxOffsetsPerTrigger=per_batch)

    assert [b.batch_plan.batch_id for b in aligned] == list(range(len(aligned))) and len(aligned) >= 3
    assert [b.kept for b in aligned] == [b.batch_plan for b in aligned]
    assert len({b.batch_plan.input_ranges for b in aligned}) == len(aligned), "the ranges are each batch's own"

    # Another query with another plan, through the same reader: its own tree, every batch.
    shuffled = run_query(spark, bootstrap, events_topic, tmp_path / "shuffled",
                         lambda frame: json_enrich.transform(frame).repartition(4), reader,
                         maxOffsetsPerTrigger=per_batch)
    assert [b.kept for b in shuffled] == [b.batch_plan for b in shuffled]
    for batch in shuffled:
        assert [o.breach for o in decide_alignment(batch.kept.plan).offenders] == [Breach.EXCHANGE]


def test_a_dataframe_that_is_not_a_micro_batch_is_refused_naming_its_plan(spark) -> None:
    frame = spark.range(3).union(spark.range(2))
    with pytest.raises(PlanReadError, match=r"its plan has 0 scans of an existing RDD") as raised:
        read_batch_plan(frame, 0, spark)
    assert "Union" in raised.value.message


def test_a_batch_read_outside_its_query_names_the_missing_query_id(spark) -> None:
    frame = spark.createDataFrame(spark.sparkContext.parallelize([(1,)]), "n int")
    with pytest.raises(PlanReadError, match=r"batch 4: no streaming query id on this thread"):
        read_batch_plan(frame, 4, spark)
