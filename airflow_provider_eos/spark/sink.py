"""The exactly-once Kafka sink (docs/architecture.md), used as ``foreachBatch``: picks a writer and runs it.

At its first batch the sink decides which writer runs the query (``writers`` in the spec; for
``auto`` from the executed plan: executors when it is partition-aligned with the Kafka source,
the driver otherwise), logs the decision in one ``EOS-WRITERS`` line and records it in the
checkpoint (:mod:`airflow_provider_eos.core.writers_choice`) for verification and health. Every
batch then goes to :class:`~.driver_writer.DriverWriter` (one transaction per batch) or
:class:`~.executor_writers.ExecutorWriters` (one transaction per input partition).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from airflow_provider_eos.core.errors import CheckpointError, PlanReadError
from airflow_provider_eos.core.plan_alignment import BatchPlan, decide_alignment
from airflow_provider_eos.core.spec import PipelineSpec, Writers
from airflow_provider_eos.core.writers_choice import (
    WritersChoice,
    WritersSwitch,
    read_writers_choice,
    record_writers_choice,
    writers_switch,
)
from airflow_provider_eos.spark.at_least_once import AtLeastOnceKafkaSink
from airflow_provider_eos.spark.driver_writer import DriverWriter
from airflow_provider_eos.spark.executor_writers import ExecutorWriters
from airflow_provider_eos.spark.plan_reader import PlanReader
from airflow_provider_eos.spark.record_producer import DLQ_REASON_COLUMN, BatchStats
from airflow_provider_eos.spark.sink_clients import SinkClients, driver_checkpoint
from airflow_provider_eos.spark.sink_metrics import SinkMetrics
from airflow_provider_eos.spark.sink_points import SinkObserver

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter

__all__ = ["DLQ_REASON_COLUMN", "AtLeastOnceKafkaSink", "BatchStats", "ExactlyOnceKafkaSink"]

log = logging.getLogger("airflow_provider_eos.sink")


class ExactlyOnceKafkaSink:
    """``foreachBatch`` function of the exactly-once sink.

    :param spec: the pipeline spec (topics, group, prefix, checkpoint, timeouts, writers).
    :param session: the SparkSession that runs the query (the executor writers read its plan).
    :param observer: what the writers announce their points to (:mod:`.sink_points`); by default nobody.
    :param guard: raises when the driver may no longer commit (:class:`~.sink_clients.SinkClients`).
    :param exporter: the driver's metrics exporter (the spec's ``metrics``); ``None``: no metrics.
    """

    def __init__(self, spec: PipelineSpec, session: SparkSession | None = None,
                 observer: SinkObserver | None = None, guard: Callable[[], None] | None = None,
                 exporter: PrometheusExporter | None = None) -> None:
        self.spec, self.session = spec, session
        self.clients = SinkClients(spec, driver_checkpoint(spec, session), guard)
        self.metrics = SinkMetrics(exporter, spec.name, self.clients)
        self.metrics.start()
        self.observer = self.metrics.observer(observer or SinkObserver())
        self.driver_writer = DriverWriter(self.clients, observer=self.observer)
        self.executor_writers = ExecutorWriters(self.clients, observer=self.observer)
        self.choice: WritersChoice | None = None
        self._plan_reader: PlanReader | None = None
        self.stats: dict[int, BatchStats] = {}
        self.replays_skipped = 0
        self.in_batch = False

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        self.in_batch = True
        self.metrics.batch_started()
        try:
            points = self.observer.for_batch(batch_id)
            plan = self._plan(batch, batch_id)
            if self.choice is None:
                self.choice = self._start(plan, batch_id)
                self.metrics.writer_chosen(self.choice, self.spec.executor_writer.value)
            if self.choice.writers is Writers.EXECUTORS:
                stats = self.executor_writers.write(batch, batch_id, plan or self._read_plan(batch, batch_id), points)
            else:
                stats = self.driver_writer.write(batch, batch_id, points)
        except BaseException as error:
            self.metrics.batch_failed(error, self.executor_writers.take_failed_write())
            raise
        finally:
            self.in_batch = False
        self.metrics.batch_finished(stats)
        self._record(stats)

    def _plan(self, batch: DataFrame, batch_id: int) -> BatchPlan | None:
        """The batch's plan when a writer needs it: to decide at the start, and every batch of the executors."""
        if self.choice is None and self.spec.writers is not Writers.DRIVER:
            try:
                return self._read_plan(batch, batch_id)
            except PlanReadError as err:
                if self.spec.writers is Writers.EXECUTORS:
                    raise
                log.warning("EOS-WRITERS the plan cannot be read (%s); using the driver writer", err.message)
                return None
        return None

    def _read_plan(self, batch: DataFrame, batch_id: int) -> BatchPlan:
        if self._plan_reader is None:
            self._plan_reader = PlanReader(self.session or batch.sparkSession)
        return self._plan_reader.read(batch, batch_id)

    def _choose(self, plan: BatchPlan | None, batch_id: int) -> WritersChoice:
        requested = self.spec.writers
        operator = None
        if requested is Writers.DRIVER:
            writers, reason = Writers.DRIVER, "the spec asks for `writers: driver`"
        elif plan is None:
            writers, operator = Writers.DRIVER, "unreadable-plan"
            reason = "the executed plan could not be read, so alignment cannot be proven"
        else:
            alignment = decide_alignment(plan.plan)
            if requested is Writers.EXECUTORS:
                alignment.require_aligned()
            writers = Writers.EXECUTORS if alignment.aligned else Writers.DRIVER
            operator, reason = alignment.operator_name, alignment.reason
        return WritersChoice(writers=writers, requested=requested, reason=reason, operator=operator,
                             query_id=self.clients.checkpoint.query_id(), batch_id=batch_id,
                             decided_at=dt.datetime.now(dt.UTC))

    def _start(self, plan: BatchPlan | None, batch_id: int) -> WritersChoice:
        """Choose the run's writer, settle what the recorded one may have left, then record the choice.

        The record is replaced before the first batch is written (the executor writers' tasks may
        leave it half-written), except where the batch proves not writable by the new writer.
        """
        choice = self._choose(plan, batch_id)
        log.info(choice.log_line())
        checkpoint = self.clients.checkpoint
        try:
            recorded = read_writers_choice(checkpoint)
        except CheckpointError as err:
            log.warning("EOS-WRITERS the recorded writer is unreadable (%s); it is replaced", err.message)
            recorded = None
        switch = writers_switch(recorded, choice.writers)
        if switch is WritersSwitch.FROM_EXECUTORS:
            self.driver_writer.take_over_from_executors(batch_id)
        elif switch is WritersSwitch.FROM_DRIVER:
            # Its init fences the driver writer's id, so a lost driver's transaction cannot commit beside the tasks.
            log.info("EOS-WRITERS taking over from the driver writer at batch %d: fencing its transactional id",
                     batch_id)
            self.clients.driver_producer.producer(batch_id)
        record_writers_choice(checkpoint, choice)
        return choice

    def _record(self, stats: BatchStats) -> None:
        if stats.action == "skip_replay":
            self.replays_skipped += 1
            stats.extra["replays_skipped"] = self.replays_skipped
        self.stats[stats.batch_id] = stats
        log.info("EOS-BATCH %s", json.dumps(stats.log_fields(), sort_keys=True))

    def close(self) -> None:
        try:
            self.metrics.close()
            self.executor_writers.close()
        finally:
            self.clients.close()
