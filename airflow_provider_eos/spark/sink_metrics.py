"""What the exactly-once sink tells the driver's exporter (:mod:`.metrics_exporter`), batch by batch.

Without ``metrics`` in the spec there is no exporter and every call here does nothing. The open
transaction's age is told by the sink's own named points (:class:`~.sink_points.SinkPoint`), the
same ones the tests' fault plug-in listens at; whatever else observes them still does.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from airflow_provider_eos.core.metrics.updates import (
    BatchReport,
    ExecutorTaskTally,
    TransactionCounts,
    batch_updates,
    executor_task_tally,
    failure_updates,
)
from airflow_provider_eos.core.writers_choice import WritersChoice
from airflow_provider_eos.spark.sink_points import SinkObserver, SinkPoint, TaskObserver

if TYPE_CHECKING:
    # prometheus_client is imported only where a spec asks for metrics.
    from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter
    from airflow_provider_eos.spark.record_producer import BatchStats
    from airflow_provider_eos.spark.transactional_producer import TransactionalProducer

__all__ = ["SinkMetrics"]


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

    :param driver_producer: the driver's producer, whose transactions (the driver writer's, and the
        executor writers' commits of partitions without a task) are counted by its own tally.
    """

    def __init__(self, exporter: PrometheusExporter | None, pipeline: str,
                 driver_producer: TransactionalProducer) -> None:
        self.exporter, self.pipeline, self.driver_producer = exporter, pipeline, driver_producer
        self.writers = "driver"
        self._counts_before = TransactionCounts()

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

    def batch_failed(self, error: BaseException, tasks: ExecutorTaskTally | None = None) -> None:
        """Count the failure, the driver producer's transactions and the executor writers' ``tasks``.

        :param tasks: the failed write's tasks (:meth:`~.executor_writers.ExecutorWriters.take_failed_write`);
            those that finished committed for good, and a replay skips their partitions.
        """
        if self.exporter is None:
            return
        self.exporter.transaction_closed()
        self.exporter.apply(failure_updates(self.pipeline, type(error).__name__,
                                            self.driver_producer.counts - self._counts_before, self.writers, tasks))
