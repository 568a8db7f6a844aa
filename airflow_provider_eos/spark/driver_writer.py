"""The driver writer (docs/architecture.md): one transaction per batch under ``<prefix>-0``, for any plan.

Per micro-batch: read the planned range from the checkpoint WAL, read the sink group's committed
offsets and markers, let the core decide produce / skip-replay / refuse, all before any Spark
work. To produce, the batch's Spark job writes the output to the spill (:mod:`.output_spill`: one
Arrow file per partition under the checkpoint); only then does the transaction begin ("as late
as possible"): the driver reads the files one Arrow record batch at a time and produces them,
adds the batch's end offsets with marker N and commits, so the whole batch becomes visible at
once and the driver's memory does not grow with the batch (``docs/design-notes.md`` item 12).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from airflow_provider_eos.core.errors import ExpiredOffsetsError, InconsistentOffsetsError
from airflow_provider_eos.core.sink_protocol import BatchAction, decide_batch, offsets_to_commit
from airflow_provider_eos.core.spec import ExecutorWriter
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
from airflow_provider_eos.kafka.transaction_actions import fence_each
from airflow_provider_eos.spark.output_spill import OutputSpill, PythonSpillTasks, SpillTasks, spill_summary
from airflow_provider_eos.spark.record_producer import (
    BatchStats,
    Stopwatch,
    produce_rows,
    require_dlq_topic,
)
from airflow_provider_eos.spark.sink_points import BatchPoints, SinkObserver, SinkPoint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from airflow_provider_eos.core.spec import PipelineSpec
    from airflow_provider_eos.core.topic_partition import OffsetMap
    from airflow_provider_eos.spark.sink_clients import SinkClients

__all__ = ["DriverWriter", "spill_tasks"]

log = logging.getLogger("airflow_provider_eos.sink")


def spill_tasks(spec: PipelineSpec) -> SpillTasks:
    """The spec's ``executor_writer``: the JVM writer's spill (``jvm/``, :mod:`.jvm_spill`), or the Python workers'."""
    if spec.executor_writer is ExecutorWriter.JVM:
        from airflow_provider_eos.spark.jvm_spill import JvmSpillTasks

        return JvmSpillTasks()
    return PythonSpillTasks()


class DriverWriter:
    """Writes each batch in one transaction of the driver's producer ``<prefix>-0``.

    :param clients: the driver's Kafka clients and checkpoint reader.
    :param spill: where the tasks leave the output for the driver (default: under the checkpoint, written
        by the spec's ``executor_writer``).
    :param observer: what the spill tasks announce their points to (:mod:`.sink_points`); by default nobody.
    """

    def __init__(self, clients: SinkClients, spill: OutputSpill | None = None,
                 observer: SinkObserver | None = None) -> None:
        self.clients = clients
        self.spill = spill or OutputSpill(clients.checkpoint, spill_tasks(clients.spec))
        self.observer = observer or SinkObserver()

    def take_over_from_executors(self, batch_id: int) -> None:
        """Before the driver writer's first batch after the executor writers': fence them and judge the batch.

        Each input partition's id (``<prefix>-<t>_<p>``) is fenced first, so a task of theirs still
        running somewhere can no longer commit beside this writer, and what it left open is
        aborted; then the batch's replay is decided as :meth:`write` will. A batch they left
        split between partitions is refused here, before the sink records the driver writer:
        verification keeps judging it by their rules, and only they can finish it.

        :raises InconsistentOffsetsError: the group disagrees with the checkpoint; the message says
            how to finish a batch the executor writers left half-written.
        """
        clients = self.clients
        spec, checkpoint = clients.spec, clients.checkpoint
        end = checkpoint.planned_offsets(batch_id)
        ids = [spec.partition_transactional_id(tp.topic, tp.partition) for tp in sorted(end)
               if tp.topic in spec.input_topics]
        log.info("EOS-WRITERS taking over from the executor writers at batch %d: fencing %d transactional id(s) "
                 "of theirs", batch_id, len(ids))
        fence_each(spec, ids, timeout_s=max(30.0, clients.driver_producer.timeout_s))
        clients.driver_producer.producer(batch_id)
        try:
            self._action(checkpoint.query_id(), batch_id, end)
        except ExpiredOffsetsError:
            raise  # its own fix applies whichever writer wrote the batch
        except InconsistentOffsetsError as err:
            raise InconsistentOffsetsError(
                f"{err.message}. The checkpoint records the executor writers (eos/writers.json): they wrote "
                f"batch {batch_id} one transaction per input partition, and this run's driver writer "
                "commits a batch in one transaction, so it cannot finish one they left split",
                fix=f"run the job once more with `writers: executors` (and the transform they ran) until batch "
                f"{batch_id} commits, then switch; `eos verify --spec <spec file>` judges the batch by their "
                "rules meanwhile",
            ) from err

    def _action(self, query_id: str, batch_id: int, end: OffsetMap) -> BatchAction:
        """Produce or skip the replay, from the group's committed offsets and markers (read stable)."""
        clients = self.clients
        spec, checkpoint = clients.spec, clients.checkpoint
        committed = read_committed_offsets(clients.admin, spec.group_id, end,
                                           transaction_timeout_ms=spec.transaction_timeout_ms, brokers=spec.brokers)
        return decide_batch(clients.planned_batch(query_id, batch_id, checkpoint.start_offsets(batch_id), end),
                            committed, spec.group_id)

    def write(self, batch: DataFrame, batch_id: int, points: BatchPoints) -> BatchStats:
        """Write the batch in one transaction, announcing the driver's points of the batch to ``points``."""
        clients = self.clients
        spec, checkpoint = clients.spec, clients.checkpoint
        query_id = checkpoint.query_id()
        end = checkpoint.planned_offsets(batch_id)
        # The producer first: its init_transactions resolves what a crashed predecessor left open,
        # so the group's offsets read next are stable (and fences a zombie before its spill goes).
        writer = clients.driver_producer
        writer.producer(batch_id)
        # What a driver that died mid-batch left (this batch's earlier attempt or an earlier batch's).
        self.spill.clear()
        if self._action(query_id, batch_id, end) is BatchAction.SKIP_REPLAY:
            return BatchStats(batch_id, "skip_replay")

        clock = Stopwatch()
        try:
            parts = self.spill.write(batch, batch_id, self.observer.for_tasks())
            require_dlq_topic(spec, sum(p.dead for p in parts))
            stats = BatchStats(batch_id, "produce", collect_ms=clock.lap(), extra=spill_summary(parts))
            with writer.transaction(batch_id) as producer:
                points.hit(SinkPoint.BEFORE_PRODUCE)
                for records in self.spill.read(parts):
                    rows_out, rows_dlq = produce_rows(producer, spec, records)
                    stats.rows_out += rows_out
                    stats.rows_dlq += rows_dlq
                producer.flush(writer.timeout_s)
                stats.produce_ms = clock.lap()
                points.hit(SinkPoint.AFTER_PRODUCE)
                points.hit(SinkPoint.SLOW_TRANSACTION)
                writer.send_offsets(producer, offsets_to_commit(query_id, batch_id, end), clients.group_metadata())
                clients.guard()  # a driver whose lease lapsed commits nothing (core/driver_lease.py)
                writer.commit(producer, batch_id)
                stats.commit_ms = clock.lap()
            points.hit(SinkPoint.AFTER_KAFKA_COMMIT)
        finally:
            self.spill.remove(batch_id)
        return stats

