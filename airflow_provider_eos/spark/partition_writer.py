"""The executor writers' task (docs/architecture.md): one transaction per input partition, in the task holding its rows.

:class:`PartitionWriteTask` is what the driver ships to every task of the batch (through
``mapInArrow``): plain values only (the spec, the batch's WAL range and the scan's input
partitions). In the task it looks its Spark partition index up to learn its Kafka partition
``p`` and ``[start_p, end_p)``, takes ``p``'s producer from the Python worker's cache and:

1. reads the sink group's offset for ``p`` (``require_stable``; after the producer's
   ``init_transactions``, so nothing a predecessor left open is pending) and decides: write, skip
   (marker N already there: a retried or replayed task) or refuse;
2. begins the transaction and first adds ``p``'s end offset with marker N to it. That request
   reaches the transaction coordinator, which rejects a producer another worker has since
   fenced: a cached producer found stale is replaced (its ``init_transactions`` fences the other
   holder) and the decision is taken again, all before any input row is read;
3. produces the rows (and dead letters) as their Arrow batches arrive, then commits.

It yields one row: the task's ``EOS-TASK`` stats as JSON, which the driver logs (an executor's
own output stays on its host; the driver's log is the one an operator reads). It also adds the line
to the write's accumulator (:class:`ReportLines`): a task's commit is for good, and when another task
fails the write, its rows never reach the driver, while a finished task's accumulator update does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaException
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.errors import ScanRangeMismatchError, SinkError
from airflow_provider_eos.core.offsets_expiry import OffsetsExpiry
from airflow_provider_eos.core.plan_alignment import InputPartitionMap, InputRange
from airflow_provider_eos.core.sink_failures import FENCED_CODES
from airflow_provider_eos.core.sink_protocol import BatchAction, PlannedBatch, decide_partition, offsets_to_commit
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import OffsetMap
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
from airflow_provider_eos.kafka.retriable import kafka_error
from airflow_provider_eos.kafka.settings import admin_config, group_metadata_consumer_config, with_client_logger
from airflow_provider_eos.spark.record_producer import Stopwatch, dead_letters, produce_rows, require_dlq_topic
from airflow_provider_eos.spark.sink_points import TaskObserver, TaskPoint
from airflow_provider_eos.spark.transactional_producer import TransactionalProducer

if TYPE_CHECKING:
    from pyspark.accumulators import Accumulator

__all__ = ["TASK_STATS_SCHEMA", "PartitionWriteTask", "ReportLines", "TaskStats"]

#: The schema of the one row each task yields.
TASK_STATS_SCHEMA = "eos_task string"


@dataclass
class TaskStats:
    """One task's ``EOS-TASK`` line."""

    batch_id: int
    spark_partition: int
    attempt: int
    topic: str
    partition: int
    action: str
    rows_out: int = 0
    rows_dlq: int = 0
    #: From the task's start to its flush: ``open_ms``, then every row produced.
    produce_ms: int = 0
    commit_ms: int = 0
    #: Of ``produce_ms``, before the first row: the producer's init (``init_ms``), the group's stable
    #: offsets read, the transaction begun and its offsets added. Batch 0 pays the inits.
    open_ms: int = 0
    #: Of ``open_ms``, creating the producer and its ``init_transactions`` (0 with a cached producer).
    init_ms: int = 0
    #: Of ``open_ms``, what the task waited for before its first row: all of it here; the JVM writer opens
    #: while Spark reads the first rows and waits only for the rest.
    open_wait_ms: int = 0
    #: This task created its producer (first use in this worker, the cached one was another batch's, or it
    #: was replaced); ``False`` when it used one an earlier task of the worker created.
    producer_created: bool = False
    #: The cached producer turned out fenced by another worker and was replaced before any row was read.
    producer_replaced: bool = False
    #: The Python worker's interpreter: shows whether tasks ran a packed environment (``eos package``).
    python: str = field(default_factory=lambda: sys.executable)
    #: Which executor writer ran the task (the JVM writer's lines say ``jvm``).
    writer: str = "python"

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


class _WorkerClients:
    """What one Python worker keeps between tasks: an admin client, a group handle, a producer per id."""

    def __init__(self, spec: PipelineSpec) -> None:
        self.spec = spec
        self.admin = AdminClient(with_client_logger("task-admin", admin_config(spec)))
        self._group_handle = Consumer(
            with_client_logger("task-group-metadata", group_metadata_consumer_config(spec))
        )
        self.producers: dict[str, TransactionalProducer] = {}

    def producer(self, transactional_id: str) -> TransactionalProducer:
        if transactional_id not in self.producers:
            self.producers[transactional_id] = TransactionalProducer(self.spec, transactional_id, "task-producer")
        return self.producers[transactional_id]

    def group_metadata(self) -> object:
        return self._group_handle.consumer_group_metadata()


#: Per Python worker (Spark reuses workers between tasks), keyed by the spec's JSON.
_WORKER_CLIENTS: dict[str, _WorkerClients] = {}


def _worker_clients(spec: PipelineSpec) -> _WorkerClients:
    key = spec.to_json()
    if key not in _WORKER_CLIENTS:
        _WORKER_CLIENTS[key] = _WorkerClients(spec)
    return _WORKER_CLIENTS[key]


def _is_fenced(exc: KafkaException) -> bool:
    error = kafka_error(exc)
    return error is not None and error.name() in FENCED_CODES


class ReportLines:
    """An accumulator of ``EOS-TASK`` lines: Spark merges a task's additions when the task succeeds.

    PySpark's ``AccumulatorParam`` by its two methods (PySpark is imported only where Spark runs).
    """

    def zero(self, value: list[str]) -> list[str]:
        return []

    def addInPlace(self, value1: list[str], value2: list[str]) -> list[str]:  # PySpark names it
        value1.extend(value2)
        return value1


@dataclass(frozen=True)
class PartitionWriteTask:
    """The batch's write, as shipped to each task: call it with the partition's Arrow batches.

    :param spec: the pipeline spec.
    :param query_id: the checkpoint's query id.
    :param batch_id: the micro-batch id N.
    :param start: the WAL's start offsets of the batch.
    :param end: the WAL's end offsets of the batch.
    :param partitions: the batch scan's input partitions, checked against the WAL on the driver.
    :param points: what the task announces its points to (:mod:`.sink_points`).
    :param expiry: whether offsets an earlier attempt of the batch committed may have expired (judged on the
        driver: :meth:`~.sink_clients.SinkClients.planned_batch`); ``None``: they cannot have.
    :param finished: the write's accumulator of ``EOS-TASK`` lines (:class:`ReportLines`); ``None``: none.
    """

    spec: PipelineSpec
    query_id: str
    batch_id: int
    start: OffsetMap
    end: OffsetMap
    partitions: InputPartitionMap
    points: TaskObserver
    expiry: OffsetsExpiry | None = None
    finished: Accumulator | None = None

    def __call__(self, batches: Iterator) -> Iterator:
        import pyarrow as pa
        from pyspark import TaskContext

        context = TaskContext.get()
        input_range = self.partitions.for_spark_partition(context.partitionId())
        stats = self._write(input_range, batches, context.attemptNumber())
        if self.finished is not None:
            self.finished.add([stats.to_json()])
        yield pa.RecordBatch.from_pylist([{"eos_task": stats.to_json()}])

    def _write(self, input_range: InputRange, batches: Iterator, attempt: int) -> TaskStats:
        tp, spec = input_range.tp, self.spec
        clients = _worker_clients(spec)
        writer = clients.producer(spec.partition_transactional_id(tp.topic, tp.partition))
        stats = TaskStats(self.batch_id, input_range.spark_partition, attempt, tp.topic, tp.partition, "produce")
        clock = Stopwatch()
        offsets = offsets_to_commit(self.query_id, self.batch_id, {tp: self.end[tp]})
        written_elsewhere = writer.last_committed_batch not in (None, self.batch_id - 1)
        if attempt > 0 or written_elsewhere:
            # A retry: the earlier attempt (maybe in another worker) may have died inside its transaction,
            # its offsets still pending in the group, so a stable read would wait for the transaction
            # timeout; a fresh producer's init fences it and aborts its transaction first. Otherwise another
            # worker wrote this partition since (Spark does not pin partitions to workers): the cached
            # producer is fenced for sure, so start afresh instead of asking the broker.
            writer.drop()
        created = False  # whether this task created the producer it holds
        for _ in range(2):
            if not writer.has_producer:
                # This task's own producer: its init fenced every earlier holder of the id. A fence of the
                # producer an earlier task of this worker created (even one that skipped and so never
                # committed) only says another worker wrote since; a fence of this one, a live zombie.
                before_init = clock.peek()
                writer.producer(self.batch_id)
                stats.init_ms += clock.peek() - before_init
                created = stats.producer_created = True
            if self._decide(clients, input_range) is BatchAction.SKIP_REPLAY:
                stats.action = "skip_replay"
                return stats
            with writer.transaction(self.batch_id) as producer:
                try:
                    # First, so a producer another worker fenced is found before any row is read.
                    writer.send_offsets(producer, offsets, clients.group_metadata())
                except KafkaException as exc:
                    if created or not _is_fenced(exc):
                        raise
                    writer.drop()
                    stats.producer_replaced = True
                    continue
                stats.open_ms = stats.open_wait_ms = clock.peek()
                for rows in batches:
                    self._check_rows(rows, input_range)
                    require_dlq_topic(spec, dead_letters(rows))
                    out, dead = produce_rows(producer, spec, rows)
                    stats.rows_out += out
                    stats.rows_dlq += dead
                producer.flush(writer.timeout_s)
                stats.produce_ms = clock.lap()
                self.points.reached(TaskPoint.TASK_AFTER_PRODUCE, self.batch_id, tp.partition)
                writer.commit(producer, self.batch_id)
                stats.commit_ms = clock.lap()
            self.points.reached(TaskPoint.TASK_AFTER_COMMIT, self.batch_id, tp.partition)
            return stats
        raise SinkError(
            f"batch {self.batch_id}: the producer of {writer.transactional_id} was fenced twice before it wrote; "
            "another task attempt is writing the same input partition",
            fix="Spark retries the task; if this repeats, check that no second job runs this pipeline",
        )

    def _decide(self, clients: _WorkerClients, input_range: InputRange) -> BatchAction:
        tp = input_range.tp
        committed = read_committed_offsets(clients.admin, self.spec.group_id, {tp: self.end[tp]},
                                           transaction_timeout_ms=self.spec.transaction_timeout_ms,
                                           brokers=self.spec.brokers)
        planned = PlannedBatch.of(query_id=self.query_id, batch_id=self.batch_id, start=self.start, end=self.end,
                                  expiry=self.expiry)
        return decide_partition(tp, planned, committed.get(tp), self.spec.group_id)

    def _check_rows(self, rows, input_range: InputRange) -> None:
        # Where the transform kept the source columns, every row must come from the task's partition.
        import pyarrow.compute as pc

        names = rows.schema.names
        for column, expected in (("topic", input_range.topic), ("partition", input_range.partition)):
            if column in names:
                found = set(pc.unique(rows.column(names.index(column))).to_pylist()) - {expected}
                if found:
                    raise ScanRangeMismatchError(
                        f"batch {self.batch_id}: Spark partition {input_range.spark_partition} reads "
                        f"{input_range.describe()} but holds rows with {column} {sorted(found)[:5]}",
                        fix="the plan moved rows between partitions; set `writers: driver` and report the plan",
                    )

