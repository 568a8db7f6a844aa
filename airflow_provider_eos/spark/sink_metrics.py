"""What the exactly-once sink tells the driver's exporter (:mod:`.metrics_exporter`), batch by batch.

Without ``metrics`` in the spec there is no exporter and every call here does nothing. The open
transaction's age is told by the sink's own named points (:class:`~.sink_points.SinkPoint`), the
same ones the tests' fault plug-in listens at; whatever else observes them still does. The input
lag is read by the driver itself (:class:`~.input_lag.InputLagWatch`) against the newest committed
batch: the checkpoint's at the driver's start, then each batch the sink finishes.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.metrics.failure_kind import failure_kind
from airflow_provider_eos.core.metrics.updates import (
    BatchReport,
    ExecutorTaskTally,
    TransactionCounts,
    batch_updates,
    checkpoint_updates,
    executor_task_tally,
    failure_updates,
)
from airflow_provider_eos.core.writers_choice import WritersChoice
from airflow_provider_eos.spark.sink_points import SinkObserver, SinkPoint, TaskObserver

if TYPE_CHECKING:
    from airflow_provider_eos.core.topic_partition import OffsetMap
    from airflow_provider_eos.spark.input_lag import InputLagWatch

    # prometheus_client is imported only where a spec asks for metrics.
    from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter
    from airflow_provider_eos.spark.record_producer import BatchStats
    from airflow_provider_eos.spark.sink_clients import SinkClients

__all__ = ["SinkMetrics"]

log = logging.getLogger("airflow_provider_eos.metrics")


class _TimingObserver(SinkObserver):
    """Passes every point on, and marks the transactions of the batch opened and committed."""

    def __init__(self, inner: SinkObserver, exporter: PrometheusExporter) -> None:
        self.inner, self.exporter = inner, exporter

    def hit(self, point: SinkPoint, batch_id: int) -> None:
        if point is SinkPoint.BEFORE_PRODUCE:
            self.exporter.transaction_opened()
        elif point is SinkPoint.AFTER_KAFKA_COMMIT:
            self.exporter.transaction_closed()
        self.inner.hit(point, batch_id)

    def for_tasks(self) -> TaskObserver:
        return self.inner.for_tasks()


class SinkMetrics:
    """The sink's reports to ``exporter`` (``None``: no metrics).

    :param clients: the sink's clients: the driver's producer, whose transactions (the driver writer's,
        and the executor writers' commits of partitions without a task) are counted by its own tally;
        the checkpoint (the newest commit, each batch's end offsets) and the admin client the lag is read with.
    """

    def __init__(self, exporter: PrometheusExporter | None, pipeline: str, clients: SinkClients) -> None:
        self.exporter, self.pipeline, self.clients = exporter, pipeline, clients
        self.driver_producer = clients.driver_producer
        self.writers = "driver"
        self._counts_before = TransactionCounts()
        self._lag: InputLagWatch | None = None

    def start(self) -> None:
        """At the driver's start: the checkpoint's newest commit, and the input lag read from now on."""
        if self.exporter is None:
            return
        from airflow_provider_eos.spark.input_lag import InputLagWatch

        self._lag = InputLagWatch(self.exporter, self.pipeline, self.clients.admin)
        checkpoint = self.clients.checkpoint
        try:
            last = checkpoint.latest_committed_batch() if checkpoint.exists() else None
            if last is not None:
                self.exporter.apply(checkpoint_updates(self.pipeline, last, checkpoint.commit_time(last).timestamp()))
                self._lag.committed(self._input_ends(last))
        except (CheckpointError, OSError) as exc:
            # The metrics wait for the first batch; the job itself reads the checkpoint and says what is wrong.
            log.warning("EOS-METRICS could not read the checkpoint's newest commit: %s", exc)
        self._lag.start()

    def close(self) -> None:
        if self._lag is not None:
            self._lag.stop()

    def _input_ends(self, batch_id: int) -> OffsetMap:
        topics = self.clients.spec.input_topics
        return {tp: offset for tp, offset in self.clients.checkpoint.planned_offsets(batch_id).items()
                if tp.topic in topics}

    def observer(self, inner: SinkObserver) -> SinkObserver:
        """``inner``, with the open transaction's age measured at its points when there is an exporter."""
        return inner if self.exporter is None else _TimingObserver(inner, self.exporter)

    def writer_chosen(self, choice: WritersChoice, executor_writer: str) -> None:
        self.writers = choice.writers.value
        if self.exporter is not None:
            self.exporter.writer_chosen(self.writers, executor_writer if self.writers == "executors" else "")

    def batch_started(self) -> None:
        self._counts_before = self.driver_producer.counts

    def batch_finished(self, stats: BatchStats) -> None:
        if self.exporter is None:
            return
        self.exporter.transaction_closed()
        tally = executor_task_tally(stats.task_reports) if stats.task_reports else ExecutorTaskTally()
        driver_side = self.driver_producer.counts - self._counts_before
        self.exporter.apply(batch_updates(BatchReport(
            pipeline=self.pipeline, batch_id=stats.batch_id, writers=self.writers, action=stats.action,
            rows_out=stats.rows_out, rows_dlq=stats.rows_dlq, produce_ms=stats.produce_ms,
            commit_ms=stats.commit_ms, finished_at=time.time(), transactions=driver_side + tally.transactions,
            tasks=tally,
        )))
        if self._lag is not None:
            self._lag.committed(self._input_ends(stats.batch_id))

    def batch_failed(self, error: BaseException, tasks: ExecutorTaskTally | None = None) -> None:
        """Count the failure, the driver producer's transactions and the executor writers' ``tasks``.

        :param tasks: the failed write's tasks (:meth:`~.executor_writers.ExecutorWriters.take_failed_write`);
            those that finished committed for good, and a replay skips their partitions.
        """
        if self.exporter is None:
            return
        self.exporter.transaction_closed()
        # A Python executor writer's task failure reaches here wrapped by Spark; its kind is the task's error.
        kind = failure_kind(type(error).__name__, str(error))
        self.exporter.apply(failure_updates(self.pipeline, kind, self.driver_producer.counts - self._counts_before,
                                            self.writers, tasks))
