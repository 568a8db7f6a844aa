"""A run whose writer is not the one the checkpoint records, against the real broker (no Spark).

The sink settles the switch at its first batch, before any Spark work (so these tests call it with
no DataFrame): the driver writer taking over from the executor writers fences every input
partition's transactional id, then judges the batch in flight, and records itself only if it can
write it; the executor writers taking over from the driver writer fence ``<prefix>-0``. A "zombie"
here is a transaction left open under the earlier writer's id, as a task or driver of a lost
application leaves it: after the take-over its commit must fail, and its output never be read.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import InconsistentOffsetsError
from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.spec import PipelineSpec, Writers
from airflow_provider_eos.core.writers_choice import WritersChoice, read_writers_choice
from airflow_provider_eos.spark.sink import ExactlyOnceKafkaSink
from tests.support.checkpointed_pipeline import (
    LAST_COMMITTED,
    CheckpointedPipeline,
    checkpointed_pipeline,
    leave_batch_half_written,
)
from tests.support.kafka import consume_all

pytestmark = pytest.mark.integration

IN_FLIGHT = LAST_COMMITTED + 1
#: Beyond the group's stable read (60 s at most): only a fence, never the broker's timeout, ends the zombies here.
ZOMBIE_TIMEOUT_MS = 300_000


@pytest.fixture
def pipeline(tmp_path: Path, bootstrap: str, topic_factory) -> CheckpointedPipeline:
    return checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="takeover")


def sink_with(pipeline: CheckpointedPipeline, writers: Writers) -> ExactlyOnceKafkaSink:
    spec = json.loads(pipeline.spec_path.read_text())
    return ExactlyOnceKafkaSink(PipelineSpec.from_dict({**spec, "writers": writers.value}))


def recorded(pipeline: CheckpointedPipeline) -> WritersChoice | None:
    return read_writers_choice(CheckpointReader(str(pipeline.checkpoint)))


def assert_fenced(zombie: Producer) -> None:
    with pytest.raises(KafkaException) as refused:
        zombie.commit_transaction(30)
    assert refused.value.args[0].name() in {"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"}, refused.value


def output(pipeline: CheckpointedPipeline) -> list[tuple[bytes, bytes]]:
    return sorted((m.key(), m.value()) for m in consume_all(pipeline.bootstrap, pipeline.output_topic))


def test_the_driver_writer_refuses_a_batch_the_executor_writers_left_split_and_keeps_their_record(
    pipeline: CheckpointedPipeline,
) -> None:
    leave_batch_half_written(pipeline)
    theirs = pipeline.record_writers(Writers.EXECUTORS)
    # Partition 1's task of the batch in flight still runs somewhere, its offsets pending: unfenced, the group's
    # stable read would wait for its transaction, and its commit could land beside the driver writer's.
    zombie = pipeline.open_partition_transaction(1, IN_FLIGHT, timeout_ms=ZOMBIE_TIMEOUT_MS)

    sink = sink_with(pipeline, Writers.DRIVER)
    try:
        with pytest.raises(InconsistentOffsetsError) as refused:
            sink(None, IN_FLIGHT)  # type: ignore[arg-type]  # refused before any Spark work
    finally:
        sink.close()

    error = refused.value
    assert f"split between batch {IN_FLIGHT} and the state before it" in error.message
    assert "The checkpoint records the executor writers (eos/writers.json)" in error.message
    assert error.fix is not None and "`writers: executors`" in error.fix and f"until batch {IN_FLIGHT}" in error.fix
    # Verification keeps judging the batch by the executor writers' rules (a normal mid-batch stop, not DIVERGED).
    assert recorded(pipeline) == theirs
    assert_fenced(zombie)
    marker = {batch: BatchMarker(pipeline.query_id, batch).encode() for batch in (LAST_COMMITTED, IN_FLIGHT)}
    assert pipeline.group() == {
        tp: (offset, marker[batch])
        for batch, partition in ((IN_FLIGHT, 0), (LAST_COMMITTED, 1))
        for tp, offset in pipeline.end_offsets(batch).items()
        if tp.partition == partition
    }
    assert output(pipeline) == [(b"p0", b"batch 4"), (b"p1", b"batch 3")]


def test_the_driver_writer_takes_over_a_batch_the_executor_writers_finished_after_fencing_their_ids(
    pipeline: CheckpointedPipeline,
) -> None:
    leave_batch_half_written(pipeline)
    pipeline.commit_partition(1, IN_FLIGHT)  # the batch is whole; Spark had not recorded commits/4
    pipeline.record_writers(Writers.EXECUTORS)
    # A second attempt of partition 0's task, still running, has produced the partition again, offsets pending.
    zombie = pipeline.open_partition_transaction(0, IN_FLIGHT, timeout_ms=ZOMBIE_TIMEOUT_MS)

    sink = sink_with(pipeline, Writers.DRIVER)
    try:
        sink(None, IN_FLIGHT)  # type: ignore[arg-type]  # a replay to skip: no Spark work
    finally:
        sink.close()

    assert sink.stats[IN_FLIGHT].action == "skip_replay"
    choice = recorded(pipeline)
    assert choice is not None and choice.writers is Writers.DRIVER and choice.batch_id == IN_FLIGHT
    assert_fenced(zombie)
    assert output(pipeline) == [(b"p0", b"batch 4"), (b"p1", b"batch 3"), (b"p1", b"batch 4")]


def test_the_executor_writers_take_over_from_the_driver_writer_after_fencing_its_id(
    pipeline: CheckpointedPipeline, monkeypatch: pytest.MonkeyPatch,
) -> None:
    pipeline.commit_group(LAST_COMMITTED)
    pipeline.record_writers(Writers.DRIVER)
    # A lost driver's transaction of the next batch, open under the driver writer's id.
    zombie = pipeline.open_partition_transaction(0, IN_FLIGHT, transactional_id=pipeline.spec.transactional_id(0),
                                                timeout_ms=ZOMBIE_TIMEOUT_MS)

    sink = sink_with(pipeline, Writers.EXECUTORS)
    theirs = WritersChoice(writers=Writers.EXECUTORS, requested=Writers.EXECUTORS, reason="the spec asks for it",
                           query_id=pipeline.query_id, batch_id=IN_FLIGHT, decided_at=dt.datetime.now(dt.UTC))
    # The executor writers decide from the batch's executed plan, which only a Spark run has.
    monkeypatch.setattr(sink, "_choose", lambda plan, batch_id: theirs)
    try:
        assert sink._start(None, IN_FLIGHT) == theirs
    finally:
        sink.close()

    assert recorded(pipeline) == theirs
    assert_fenced(zombie)
    assert output(pipeline) == []

