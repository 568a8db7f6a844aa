"""The exactly-once Kafka sink (DESIGN.md section 2, driver mode), used as ``foreachBatch``.

Per micro-batch: read the planned range from the checkpoint WAL, read the sink group's
committed offsets and markers, let the core decide produce / skip-replay / refuse, and produce
the output plus the batch's end offsets with marker N in ONE transaction. A Kafka failure
aborts the transaction and raises the :class:`SinkError` subclass that says what it was
(:mod:`airflow_provider_eos.core.sink_failures`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import RetryExhaustedError, SinkError
from airflow_provider_eos.core.sink_failures import KafkaFailure, must_recreate_producer, sink_failure_error
from airflow_provider_eos.core.sink_protocol import BatchAction, decide_batch, offsets_to_commit
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import OffsetMap
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
from airflow_provider_eos.kafka.retriable import LOCAL_QUEUE_FULL, TRANSACTION_COMMIT, kafka_error
from airflow_provider_eos.kafka.settings import (
    admin_config,
    group_metadata_consumer_config,
    sink_producer_config,
    with_client_logger,
)
from airflow_provider_eos.spark.faults import FaultInjector, FaultPoint

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

__all__ = ["DLQ_REASON_COLUMN", "AtLeastOnceKafkaSink", "BatchStats", "ExactlyOnceKafkaSink", "SinkError",
           "collect_output"]

log = logging.getLogger("airflow_provider_eos.sink")

DLQ_REASON_COLUMN = "dlq_reason"


@dataclass
class BatchStats:
    """What the sink did in one batch; logged as one ``EOS-BATCH`` JSON line."""

    batch_id: int
    action: str
    rows_out: int = 0
    rows_dlq: int = 0
    collect_ms: int = 0
    produce_ms: int = 0
    commit_ms: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


class ExactlyOnceKafkaSink:
    """``foreachBatch`` function with one long-lived transactional producer ``<prefix>-0``.

    :param spec: the pipeline spec (topics, group, prefix, checkpoint, timeouts).
    :param faults: test-only fault injector; inert unless armed (see :mod:`.faults`).
    """

    def __init__(self, spec: PipelineSpec, faults: FaultInjector | None = None) -> None:
        self.spec = spec
        self.faults = faults or FaultInjector()
        self.checkpoint = CheckpointReader(spec.checkpoint_location)
        self.stats: dict[int, BatchStats] = {}
        self.replays_skipped = 0
        self.in_batch = False
        self._producer: Producer | None = None
        self._admin = AdminClient(with_client_logger("admin", admin_config(spec)))
        self._group_handle = Consumer(
            with_client_logger("group-metadata-consumer", group_metadata_consumer_config(spec))
        )

    def _transactional_producer(self) -> Producer:
        # init_transactions aborts whatever a previous instance with the same id left open and
        # fences it: this is what makes a restart after a crash safe.
        if self._producer is None:
            producer = Producer(with_client_logger("sink-producer", sink_producer_config(self.spec)))
            producer.init_transactions(max(30, self.spec.transaction_timeout_ms / 1000))
            self._producer = producer
        return self._producer

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.in_batch = True
        try:
            self._write_batch(batch, batch_id)
        finally:
            self.in_batch = False

    def _write_batch(self, batch: DataFrame, batch_id: int) -> None:
        faults = self.faults.for_batch(batch_id)
        query_id = self.checkpoint.query_id()
        end = self.checkpoint.planned_offsets(batch_id)
        # The producer first: its init_transactions resolves what a crashed predecessor left open,
        # so the group's offsets read next are stable.
        producer = self._transactional_producer()
        if self._decide(query_id, batch_id, end) is BatchAction.SKIP_REPLAY:
            self._skip_replay(batch_id)
            return

        clock = _Stopwatch()
        table = collect_output(batch)
        self._require_dlq_topic(table)
        stats = BatchStats(batch_id, "produce", collect_ms=clock.lap())
        offsets = [
            KafkaTopicPartition(tp.topic, tp.partition, offset, marker)
            for tp, (offset, marker) in offsets_to_commit(query_id, batch_id, end).items()
        ]
        with self._kafka_failures_as_sink_error(producer, batch_id):
            producer.begin_transaction()
            faults.hit(FaultPoint.BEFORE_PRODUCE)
            stats.rows_out, stats.rows_dlq = self._produce(producer, table)
            stats.produce_ms = clock.lap()
            faults.hit(FaultPoint.AFTER_PRODUCE)
            faults.hit(FaultPoint.SLOW_TRANSACTION)
            producer.send_offsets_to_transaction(offsets, self._group_handle.consumer_group_metadata(), 30)
            self._commit(producer, batch_id)
            stats.commit_ms = clock.lap()
        faults.hit(FaultPoint.AFTER_KAFKA_COMMIT)
        self._record(stats)

    def _decide(self, query_id: str, batch_id: int, end: OffsetMap) -> BatchAction:
        return decide_batch(
            query_id=query_id, batch_id=batch_id, start=self.checkpoint.start_offsets(batch_id), end=end,
            committed=read_committed_offsets(self._admin, self.spec.group_id, end), group_id=self.spec.group_id,
        )

    def _skip_replay(self, batch_id: int) -> None:
        self.replays_skipped += 1
        self._record(BatchStats(batch_id, "skip_replay", extra={"replays_skipped": self.replays_skipped}))

    def _require_dlq_topic(self, table: pa.Table) -> None:
        # Checked before the transaction opens: refusing the batch then leaves nothing to abort.
        if DLQ_REASON_COLUMN not in table.column_names or self.spec.dlq_topic:
            return
        dead = len(table) - table.column(DLQ_REASON_COLUMN).null_count
        if dead:
            raise SinkError(
                f"the transform returned {dead} dead-letter row(s) but the spec {self.spec.name!r} has no dlq_topic",
                fix="set dlq_topic in the spec (or make the transform drop or repair those rows)",
            )

    def _produce(self, producer: Producer, table: pa.Table) -> tuple[int, int]:
        """Produce every row (output or dead letter) and wait for their delivery; returns the two counts."""
        columns = table.to_pydict()
        keys, values = columns["key"], columns["value"]
        headers = columns.get("headers") or [None] * len(values)
        reasons = columns.get(DLQ_REASON_COLUMN) or [None] * len(values)
        origin = [columns.get(c) for c in ("topic", "partition", "offset")]
        timeout_s = self.spec.transaction_timeout_ms / 1000
        queue_full = LOCAL_QUEUE_FULL.bounded(timeout_s=timeout_s)
        dead = 0
        for i, value in enumerate(values):
            record_headers = [(h["key"], h["value"]) for h in headers[i]] if headers[i] else []
            topic = self.spec.output_topic
            if reasons[i] is not None:
                dead += 1
                topic = self.spec.dlq_topic
                record_headers.append(("eos.dlq.reason", str(reasons[i]).encode()))
                for name, column in zip(("topic", "partition", "offset"), origin, strict=True):
                    if column is not None:
                        record_headers.append((f"eos.source.{name}", str(column[i]).encode()))
            send = partial(producer.produce, topic, value=value, key=keys[i], headers=record_headers or None)
            try:
                send()
            except BufferError:  # the local queue is full: serve delivery reports until it has room
                queue_full.call(send, what=f"produce to {topic!r}", sleep=producer.poll)
        producer.flush(timeout_s)
        return len(values) - dead, dead

    def _commit(self, producer: Producer, batch_id: int) -> None:
        TRANSACTION_COMMIT.call(
            partial(producer.commit_transaction, self.spec.transaction_timeout_ms / 1000),
            what=f"commit the transaction of batch {batch_id}",
        )

    @contextmanager
    def _kafka_failures_as_sink_error(self, producer: Producer, batch_id: int) -> Iterator[None]:
        """Abort (or give up) the transaction a failure left and raise the typed error saying what it was."""
        opened = time.monotonic()
        try:
            yield
        except (KafkaException, RetryExhaustedError) as exc:
            outlived = (time.monotonic() - opened) * 1000 >= self.spec.transaction_timeout_ms
            failure = kafka_failure(exc, outlived_timeout=outlived)
            self._abandon(producer, failure)
            raise sink_failure_error(failure, batch_id=batch_id, spec=self.spec) from exc
        except BaseException:
            # Whatever else went wrong left a transaction open: the next batch's new producer aborts it.
            self._producer = None
            raise

    def _abandon(self, producer: Producer, failure: KafkaFailure) -> None:
        if failure.txn_requires_abort:
            try:
                producer.abort_transaction(30)
            except KafkaException as abort_exc:
                log.error("abort_transaction failed too: %s", abort_exc)
                self._producer = None
                return
        if must_recreate_producer(failure):
            # The next batch starts a new producer, whose init_transactions aborts what is left.
            self._producer = None

    def _record(self, stats: BatchStats) -> None:
        self.stats[stats.batch_id] = stats
        log.info("EOS-BATCH %s", json.dumps(asdict(stats), sort_keys=True))

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)
        self._group_handle.close()


def kafka_failure(exc: KafkaException | RetryExhaustedError, *, outlived_timeout: bool) -> KafkaFailure:
    """The classification's view of a client error (a retry policy's error: of its last attempt)."""
    exhausted = isinstance(exc, RetryExhaustedError)
    error = kafka_error(exc.last_error if isinstance(exc, RetryExhaustedError) else exc)
    if error is None:  # only the local queue's BufferError carries no KafkaError
        return KafkaFailure("_QUEUE_FULL", retriable=True, detail=str(exc), outlived_timeout=outlived_timeout)
    return KafkaFailure(
        error.name(),
        fatal=error.fatal(),
        retriable=error.retriable(),
        txn_requires_abort=error.txn_requires_abort(),
        detail=exc.message if exhausted else error.str(),
        outlived_timeout=outlived_timeout,
    )


class _Stopwatch:
    """Milliseconds between laps, for the batch's stats."""

    def __init__(self) -> None:
        self._last = time.monotonic()

    def lap(self) -> int:
        now = time.monotonic()
        elapsed, self._last = now - self._last, now
        return int(elapsed * 1000)


def collect_output(batch: DataFrame) -> pa.Table:
    """The transform's output as one Arrow table (no per-row Py4J round trips).

    key/value are cast to binary: a transform may return strings, Kafka wants bytes.
    """
    from pyspark.sql import functions as F

    wanted = [F.col("key").cast("binary").alias("key"), F.col("value").cast("binary").alias("value")]
    for optional in ("headers", DLQ_REASON_COLUMN, "topic", "partition", "offset"):
        if optional in batch.columns:
            wanted.append(F.col(optional))
    return batch.select(*wanted).toArrow()


class AtLeastOnceKafkaSink:
    """Baseline only, clearly NOT exactly-once: Spark's built-in Kafka writer inside ``foreachBatch``.

    This is the same ``KafkaWriter`` Spark's streaming Kafka sink uses; a batch replayed after a
    crash between the write and Spark's commit log is written again (duplicates). It exists to
    measure the cost of exactly-once and to prove the duplicate checks can see duplicates.
    """

    def __init__(self, spec: PipelineSpec, faults: FaultInjector | None = None) -> None:
        self.spec = spec
        self.faults = faults or FaultInjector()
        self.stats: dict[int, BatchStats] = {}
        self.in_batch = False

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F

        from airflow_provider_eos.kafka.settings import spark_sink_options

        self.in_batch = True
        try:
            faults = self.faults.for_batch(batch_id)
            clock = _Stopwatch()
            if DLQ_REASON_COLUMN in batch.columns:
                topic = F.when(F.col(DLQ_REASON_COLUMN).isNull(), F.lit(self.spec.output_topic)).otherwise(
                    F.lit(self.spec.dlq_topic or self.spec.output_topic))
            else:
                topic = F.lit(self.spec.output_topic)
            columns = [topic.alias("topic"), "key", "value"] + (["headers"] if "headers" in batch.columns else [])
            faults.hit(FaultPoint.BEFORE_PRODUCE)
            batch.select(*columns).write.format("kafka").options(**spark_sink_options(self.spec)).save()
            faults.hit(FaultPoint.AFTER_PRODUCE)
            self._record(BatchStats(batch_id, "produce_at_least_once", produce_ms=clock.lap()))
        finally:
            self.in_batch = False

    def _record(self, stats: BatchStats) -> None:
        self.stats[stats.batch_id] = stats
        log.info("EOS-BATCH %s", json.dumps(asdict(stats), sort_keys=True))

    def close(self) -> None:
        """Nothing to release: Spark owns the writer's producers."""
