"""The executor writers' task against the real broker, without Spark: a zombie attempt of a
partition is fenced and its commit fails loudly; a producer cached by a Python worker that
another worker has since fenced is found stale before any row is read and replaced."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pyarrow as pa
import pytest
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.errors import ProducerFencedError
from airflow_provider_eos.core.plan_alignment import InputRange, map_input_partitions
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
from airflow_provider_eos.spark import partition_writer
from airflow_provider_eos.spark.partition_writer import PartitionWriteTask
from tests.support.faults.tasks import TaskFaults
from tests.support.kafka import consume_all

pytestmark = pytest.mark.integration

QUERY = "5f0c1b0e-0000-4000-8000-000000000001"


def _spec(bootstrap: str, topic_factory, tmp_path) -> PipelineSpec:
    name = f"w{uuid.uuid4().hex[:8]}"
    return PipelineSpec(
        name=name, kafka={"bootstrap.servers": bootstrap}, input_topics=[topic_factory("in")],
        output_topic=topic_factory("out"), group_id=f"{name}-sink", transactional_id_prefix=f"{name}-txn",
        checkpoint_location=str(tmp_path / "ckpt"), writers="executors",
    )


def _task(spec: PipelineSpec, batch_id: int) -> tuple[PartitionWriteTask, InputRange]:
    tp = TopicPartition(spec.input_topics[0], 0)
    span = InputRange(spark_partition=0, topic=tp.topic, partition=0, from_offset=batch_id * 10,
                      until_offset=(batch_id + 1) * 10)
    task = PartitionWriteTask(spec, QUERY, batch_id, {tp: span.from_offset} if batch_id else {},
                              {tp: span.until_offset}, map_input_partitions(batch_id, [span]), TaskFaults())
    return task, span


def _rows(batch_id: int, attempt: str) -> pa.RecordBatch:
    values = [f"{batch_id}-{i}-{attempt}".encode() for i in range(10)]
    return pa.RecordBatch.from_pydict({"key": [b"k"] * 10, "value": values})


def _committed(spec: PipelineSpec) -> tuple[int, int]:
    tp = TopicPartition(spec.input_topics[0], 0)
    found = read_committed_offsets(AdminClient({"bootstrap.servers": spec.kafka["bootstrap.servers"]}),
                                   spec.group_id, {tp: 0}, transaction_timeout_ms=spec.transaction_timeout_ms)[tp]
    return found.offset, found.marker.batch_id


@pytest.fixture
def workers(monkeypatch: pytest.MonkeyPatch):
    """Switch between the caches of two Python workers (each keeps its own clients and producers)."""
    caches: dict[str, dict] = {"a": {}, "b": {}}

    def use(worker: str) -> None:
        monkeypatch.setattr(partition_writer, "_WORKER_CLIENTS", caches[worker])

    return use


def test_a_zombie_attempt_is_fenced_and_only_the_newer_attempt_is_visible(bootstrap, topic_factory, tmp_path,
                                                                         workers):
    spec = _spec(bootstrap, topic_factory, tmp_path)
    task, span = _task(spec, 0)
    newer: list = []

    def zombie_rows() -> Iterator[pa.RecordBatch]:
        yield _rows(0, "zombie")
        # While the zombie's transaction is open, a second attempt of the task runs in another worker.
        workers("b")
        newer.append(task._write(span, iter([_rows(0, "newer")]), attempt=1))
        workers("a")

    workers("a")
    with pytest.raises(ProducerFencedError) as raised:
        task._write(span, zombie_rows(), attempt=0)
    assert "fenced by another writer" in raised.value.message
    assert newer[0].action == "produce" and newer[0].rows_out == 10
    visible = sorted(m.value() for m in consume_all(bootstrap, spec.output_topic))
    assert visible == sorted(_rows(0, "newer").column(1).to_pylist())
    assert _committed(spec) == (10, 0)


def test_a_cached_producer_fenced_by_another_worker_is_replaced_before_any_row_is_read(bootstrap, topic_factory,
                                                                                       tmp_path, workers):
    spec = _spec(bootstrap, topic_factory, tmp_path)
    workers("a")
    first, span0 = _task(spec, 0)
    assert first._write(span0, iter([_rows(0, "a")]), attempt=0).action == "produce"
    # A second attempt of batch 0 on worker b (speculative, or a retry after a lost report) finds it
    # written and skips, but its producer's init_transactions has fenced worker a's.
    workers("b")
    assert first._write(span0, iter([]), attempt=1).action == "skip_replay"
    workers("a")  # batch 1 is back on worker a, whose cached producer committed batch 0 yet is stale
    second, span1 = _task(spec, 1)
    stats = second._write(span1, iter([_rows(1, "a")]), attempt=0)
    assert stats.action == "produce" and stats.producer_replaced is True
    assert _committed(spec) == (20, 1)
    # Batch 2 is back on worker b, whose cached producer (created by the skipping task, never committed)
    # worker a's replacement has fenced: it is replaced as well, not taken for a zombie of this task.
    workers("b")
    third, span2 = _task(spec, 2)
    stats = third._write(span2, iter([_rows(2, "b")]), attempt=0)
    assert (stats.action, stats.producer_replaced, stats.producer_created) == ("produce", True, True)
    assert _committed(spec) == (30, 2)
    visible = [m.value() for m in consume_all(bootstrap, spec.output_topic)]
    assert len(visible) == 30 and len(set(visible)) == 30


def test_a_producer_counts_as_created_only_by_the_task_that_created_it(bootstrap, topic_factory, tmp_path,
                                                                       workers):
    spec = _spec(bootstrap, topic_factory, tmp_path)
    workers("a")
    first, span0 = _task(spec, 0)
    assert first._write(span0, iter([_rows(0, "a")]), attempt=0).producer_created is True
    workers("b")  # a retry of batch 0 creates worker b's producer and skips
    stats = first._write(span0, iter([]), attempt=1)
    assert (stats.action, stats.producer_created) == ("skip_replay", True)
    second, span1 = _task(spec, 1)  # nobody fenced worker b's producer since: batch 1 uses it as it is
    stats = second._write(span1, iter([_rows(1, "b")]), attempt=0)
    assert (stats.action, stats.producer_created, stats.producer_replaced) == ("produce", False, False)
    assert stats.init_ms == 0
    assert _committed(spec) == (20, 1)


def test_a_producer_cached_for_an_older_batch_is_renewed_without_asking(bootstrap, topic_factory, tmp_path,
                                                                       workers):
    spec = _spec(bootstrap, topic_factory, tmp_path)
    workers("a")
    first, span0 = _task(spec, 0)
    assert first._write(span0, iter([_rows(0, "a")]), attempt=0).producer_created is True
    second, span1 = _task(spec, 1)
    assert second._write(span1, iter([_rows(1, "a")]), attempt=0).producer_created is False  # kept: batch 0 was its
    workers("b")
    third, span2 = _task(spec, 2)
    assert third._write(span2, iter([_rows(2, "b")]), attempt=0).producer_created is True
    workers("a")  # worker a last wrote batch 1, so its producer for batch 3 is renewed up front
    fourth, span3 = _task(spec, 3)
    stats = fourth._write(span3, iter([_rows(3, "a")]), attempt=0)
    assert stats.producer_created is True and stats.producer_replaced is False
    assert _committed(spec) == (40, 3)


def test_a_replayed_task_skips_its_committed_partition(bootstrap, topic_factory, tmp_path, workers):
    spec = _spec(bootstrap, topic_factory, tmp_path)
    workers("a")
    task, span = _task(spec, 0)
    task._write(span, iter([_rows(0, "a")]), attempt=0)

    def untouched() -> Iterator[pa.RecordBatch]:
        raise AssertionError("a skipped partition must not read its rows")
        yield

    workers("b")
    assert task._write(span, untouched(), attempt=1).action == "skip_replay"
    assert len(consume_all(bootstrap, spec.output_topic)) == 10
