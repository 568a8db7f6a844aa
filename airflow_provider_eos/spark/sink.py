"""The exactly-once Kafka sink (DESIGN.md section 2, driver mode), used as ``foreachBatch``.

Per micro-batch: read the planned range from the checkpoint WAL, read the sink group's
committed offsets and markers, let the core decide produce / skip-replay / refuse, and produce
the output plus the batch's end offsets with marker N in ONE transaction.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.sink_protocol import BatchAction, decide_batch, offsets_to_commit
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.client_config import (
    admin_config,
    group_metadata_consumer_config,
    sink_producer_config,
)
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
from airflow_provider_eos.spark.faults import FaultInjector, FaultPoint

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame

log = logging.getLogger("airflow_provider_eos.sink")

DLQ_REASON_COLUMN = "dlq_reason"
_COMMIT_ATTEMPTS = 5


class SinkError(EosError):
    """A batch could not be written; its transaction was aborted (or fenced) and Spark will replay it."""


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
        self._admin = AdminClient(admin_config(spec))
        self._group_handle = Consumer(group_metadata_consumer_config(spec))

    def _transactional_producer(self) -> Producer:
        # init_transactions aborts whatever a previous instance with the same id left open and
        # fences it: this is what makes a restart after a crash safe.
        if self._producer is None:
            producer = Producer(sink_producer_config(self.spec))
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
        query_id = self.checkpoint.query_id()
        end = self.checkpoint.planned_offsets(batch_id)
        start = self.checkpoint.start_offsets(batch_id)
        producer = self._transactional_producer()
        committed = read_committed_offsets(self._admin, self.spec.group_id, end)
        action = decide_batch(
            query_id=query_id, batch_id=batch_id, start=start, end=end, committed=committed,
            group_id=self.spec.group_id,
        )
        if action is BatchAction.SKIP_REPLAY:
            self.replays_skipped += 1
            self._record(BatchStats(batch_id, "skip_replay", extra={"replays_skipped": self.replays_skipped}))
            return

        started = time.monotonic()
        table = collect_output(batch)
        stats = BatchStats(batch_id, "produce", collect_ms=_ms_since(started))
        offsets = [
            KafkaTopicPartition(tp.topic, tp.partition, offset, marker)
            for tp, (offset, marker) in offsets_to_commit(query_id, batch_id, end).items()
        ]
        try:
            producer.begin_transaction()
            self.faults.hit(FaultPoint.BEFORE_PRODUCE, batch_id)
            started = time.monotonic()
            stats.rows_out, stats.rows_dlq = self._produce(producer, table)
            producer.flush(self.spec.transaction_timeout_ms / 1000)
            stats.produce_ms = _ms_since(started)
            self.faults.hit(FaultPoint.AFTER_PRODUCE, batch_id)
            self.faults.hit(FaultPoint.SLOW_TRANSACTION, batch_id)
            started = time.monotonic()
            producer.send_offsets_to_transaction(offsets, self._group_handle.consumer_group_metadata(), 30)
            self._commit(producer)
            stats.commit_ms = _ms_since(started)
        except KafkaException as exc:
            self._abandon(producer, exc)
            raise SinkError(
                f"batch {batch_id} was not written: {exc}. Its transaction was aborted; Spark replays the batch "
                "on restart and the sink writes it once.",
                fix="see the broker error above; a fenced producer means another driver runs this pipeline",
            ) from exc
        self.faults.hit(FaultPoint.AFTER_KAFKA_COMMIT, batch_id)
        self._record(stats)

    def _produce(self, producer: Producer, table: pa.Table) -> tuple[int, int]:
        columns = table.to_pydict()
        keys, values = columns["key"], columns["value"]
        headers = columns.get("headers") or [None] * len(values)
        reasons = columns.get(DLQ_REASON_COLUMN) or [None] * len(values)
        origin = [columns.get(c) for c in ("topic", "partition", "offset")]
        dead = sum(r is not None for r in reasons)
        if dead and not self.spec.dlq_topic:
            raise SinkError(
                f"the transform returned {dead} dead-letter row(s) but the spec {self.spec.name!r} has no dlq_topic",
                fix="set dlq_topic in the spec (or make the transform drop or repair those rows)",
            )
        for i, value in enumerate(values):
            record_headers = [(h["key"], h["value"]) for h in headers[i]] if headers[i] else []
            topic = self.spec.output_topic
            if reasons[i] is not None:
                topic = self.spec.dlq_topic
                record_headers.append(("eos.dlq.reason", str(reasons[i]).encode()))
                for name, column in zip(("topic", "partition", "offset"), origin, strict=True):
                    if column is not None:
                        record_headers.append((f"eos.source.{name}", str(column[i]).encode()))
            while True:
                try:
                    producer.produce(topic, value=value, key=keys[i], headers=record_headers or None)
                    break
                except BufferError:
                    producer.poll(0.1)  # local queue full: let deliveries drain
        return len(values) - dead, dead

    def _commit(self, producer: Producer) -> None:
        for attempt in range(1, _COMMIT_ATTEMPTS + 1):
            try:
                producer.commit_transaction(self.spec.transaction_timeout_ms / 1000)
                return
            except KafkaException as exc:
                error: KafkaError = exc.args[0]
                if not error.retriable() or attempt == _COMMIT_ATTEMPTS:
                    raise
                log.warning("commit_transaction attempt %d failed with a retriable error: %s", attempt, error)
                time.sleep(min(2 ** attempt * 0.1, 2))

    def _abandon(self, producer: Producer, exc: KafkaException) -> None:
        error: KafkaError = exc.args[0]
        if error.txn_requires_abort():
            try:
                producer.abort_transaction(30)
                return
            except KafkaException as abort_exc:
                log.error("abort_transaction failed too: %s", abort_exc)
        # Fatal (fenced, epoch exhausted) or the abort failed: the next batch starts a new producer,
        # whose init_transactions aborts what is left.
        self._producer = None

    def _record(self, stats: BatchStats) -> None:
        self.stats[stats.batch_id] = stats
        log.info("EOS-BATCH %s", json.dumps(asdict(stats), sort_keys=True))

    def close(self) -> None:
        if self._producer is not None:
            self._producer.flush(10)
        self._group_handle.close()


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


def _ms_since(started: float) -> int:
    return int((time.monotonic() - started) * 1000)


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

        from airflow_provider_eos.kafka.client_config import spark_source_options

        self.in_batch = True
        try:
            started = time.monotonic()
            if DLQ_REASON_COLUMN in batch.columns:
                topic = F.when(F.col(DLQ_REASON_COLUMN).isNull(), F.lit(self.spec.output_topic)).otherwise(
                    F.lit(self.spec.dlq_topic or self.spec.output_topic))
            else:
                topic = F.lit(self.spec.output_topic)
            columns = [topic.alias("topic"), "key", "value"] + (["headers"] if "headers" in batch.columns else [])
            self.faults.hit(FaultPoint.BEFORE_PRODUCE, batch_id)
            batch.select(*columns).write.format("kafka").options(**spark_source_options(self.spec)).save()
            self.faults.hit(FaultPoint.AFTER_PRODUCE, batch_id)
            self._record(BatchStats(batch_id, "produce_at_least_once", produce_ms=_ms_since(started)))
        finally:
            self.in_batch = False

    def _record(self, stats: BatchStats) -> None:
        self.stats[stats.batch_id] = stats
        log.info("EOS-BATCH %s", json.dumps(asdict(stats), sort_keys=True))

    def close(self) -> None:
        """Nothing to release: Spark owns the writer's producers."""
