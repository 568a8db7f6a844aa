"""The executor writers' driver side (docs/architecture.md): check the plan, run one write task per input partition.

The driver reads nothing but small values: the batch scan's input partitions (from the plan
reader), checked against the WAL; the tasks' ``EOS-TASK`` stats (one row each). Then it commits,
under ``<prefix>-0``, the input partitions that had no task (no new input) and that are not yet
at marker N, so every input partition ends the batch at its end offset with marker N.

The tasks themselves run in PySpark's Python workers (:class:`PythonTasks`, the spec's
``executor_writer: python``) or in the executor JVM (:class:`~.jvm_writer.JvmTasks`,
``executor_writer: jvm``): the same transactional ids, markers and order inside a task, and the
same ``EOS-TASK`` lines; everything on this page is shared.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from airflow_provider_eos.core.errors import ScanRangeMismatchError
from airflow_provider_eos.core.metrics.updates import ExecutorTaskTally, executor_task_tally
from airflow_provider_eos.core.offsets_expiry import OffsetsExpiry
from airflow_provider_eos.core.plan_alignment import (
    BatchPlan,
    InputPartitionMap,
    cross_check,
    decide_alignment,
    map_input_partitions,
)
from airflow_provider_eos.core.sink_protocol import (
    BatchAction,
    PlannedBatch,
    decide_partition,
    executor_batch_action,
    offsets_to_commit,
    task_committed_in_this_run,
)
from airflow_provider_eos.core.spec import ExecutorWriter, PipelineSpec
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
from airflow_provider_eos.spark.partition_writer import TASK_STATS_SCHEMA, PartitionWriteTask, ReportLines
from airflow_provider_eos.spark.record_producer import BatchStats, OutputColumns, Stopwatch
from airflow_provider_eos.spark.sink_points import BatchPoints, SinkObserver, SinkPoint, TaskObserver

if TYPE_CHECKING:
    from pyspark.accumulators import Accumulator
    from pyspark.sql import DataFrame

    from airflow_provider_eos.spark.sink_clients import SinkClients

__all__ = ["BatchTasks", "ExecutorWriters", "PythonTasks", "TaskRunner", "task_runner"]

log = logging.getLogger("airflow_provider_eos.sink")


@dataclass(frozen=True)
class BatchTasks:
    """What every write task of one batch is given: the batch's WAL range and the scan's checked input partitions.

    :param points: what the tasks announce their points to (:mod:`.sink_points`), given by the driver's observer.
    :param expiry: whether offsets an earlier attempt of the batch committed may have expired
        (:meth:`~.sink_clients.SinkClients.planned_batch`); ``None``: they cannot have.
    """

    spec: PipelineSpec
    query_id: str
    batch_id: int
    start: OffsetMap
    end: OffsetMap
    mapping: InputPartitionMap
    points: TaskObserver
    expiry: OffsetsExpiry | None = None

    @property
    def planned(self) -> PlannedBatch:
        """The batch as every task decides it (:func:`~airflow_provider_eos.core.sink_protocol.decide_partition`)."""
        return PlannedBatch.of(query_id=self.query_id, batch_id=self.batch_id, start=self.start, end=self.end,
                               expiry=self.expiry)


class TaskRunner(Protocol):
    """Runs one write task per input partition over the batch's output frame.

    ``run`` appends each task's ``EOS-TASK`` line to ``reports``, also those of the tasks that
    finished when the write fails: each committed its transaction for good, and the metrics count it
    now or never (a replay of the batch skips its partition).
    """

    def run(self, batch: DataFrame, tasks: BatchTasks, reports: list[str]) -> None: ...

    def close(self) -> None: ...


class PythonTasks:
    """The tasks in PySpark's Python workers (``mapInArrow``), confluent-kafka producers cached per worker."""

    def __init__(self) -> None:
        self._output = OutputColumns()
        self._finished: Accumulator | None = None

    def run(self, batch: DataFrame, tasks: BatchTasks, reports: list[str]) -> None:
        finished = self._accumulator(batch)
        finished.value = []
        task = PartitionWriteTask(tasks.spec, tasks.query_id, tasks.batch_id, tasks.start, tasks.end, tasks.mapping,
                                  tasks.points, tasks.expiry, finished)
        try:
            rows = self._output.frame(batch).mapInArrow(task, TASK_STATS_SCHEMA).collect()
        except BaseException:
            # The rows of the tasks that finished are lost with the job; their accumulator updates are not.
            reports += finished.value
            raise
        reports += [row.eos_task for row in rows]

    def _accumulator(self, batch: DataFrame) -> Accumulator:
        # One for the sink's life: the driver keeps every accumulator it made, so not one per batch.
        if self._finished is None:
            self._finished = batch.sparkSession.sparkContext.accumulator([], ReportLines())
        return self._finished

    def close(self) -> None:
        """The producers live in the Python workers, which Spark stops."""


def task_runner(spec: PipelineSpec) -> TaskRunner:
    """The spec's ``executor_writer``: the Python workers' tasks, or the JVM writer's (``jvm/``)."""
    if spec.executor_writer is ExecutorWriter.JVM:
        from airflow_provider_eos.spark.jvm_writer import JvmTasks

        return JvmTasks(spec)
    return PythonTasks()


class ExecutorWriters:
    """Writes each batch in one transaction per input partition, in the Spark tasks.

    :param clients: the driver's clients (checkpoint, admin, the producer of partitions without a task).
    :param tasks: what runs the tasks; by default the spec's ``executor_writer``.
    :param observer: what the tasks announce their points to (:mod:`.sink_points`); by default nobody.
    """

    def __init__(self, clients: SinkClients, tasks: TaskRunner | None = None,
                 observer: SinkObserver | None = None) -> None:
        self.clients = clients
        self.tasks = tasks or task_runner(clients.spec)
        self.observer = observer or SinkObserver()
        self._failed: ExecutorTaskTally | None = None

    def take_failed_write(self) -> ExecutorTaskTally | None:
        """The tasks of the last write that failed after its tasks ran (``None``: none), once.

        What the finished tasks reported, and each task without a report (no attempt succeeded) as
        one transaction begun and not committed
        (:func:`~airflow_provider_eos.core.metrics.updates.executor_task_tally`).
        """
        failed, self._failed = self._failed, None
        return failed

    def write(self, batch: DataFrame, batch_id: int, plan: BatchPlan, points: BatchPoints) -> BatchStats:
        """Run the batch's write tasks, announcing the driver's points of the batch to ``points``."""
        checkpoint = self.clients.checkpoint
        query_id = checkpoint.query_id()
        start, end = checkpoint.start_offsets(batch_id), checkpoint.planned_offsets(batch_id)
        # Checked every batch, not only at the start: a plan that stopped being aligned must not write.
        decide_alignment(plan.plan).require_aligned()
        mapping = map_input_partitions(batch_id, plan.input_ranges)
        cross_check(mapping, start=start, end=end)
        clock = Stopwatch()
        spec = self.clients.spec
        planned = self.clients.planned_batch(query_id, batch_id, start, end)
        tasks = BatchTasks(spec, query_id, batch_id, start, end, mapping, self.observer.for_tasks(), planned.expiry)
        points.hit(SinkPoint.BEFORE_PRODUCE)
        self._failed = None
        lines: list[str] = []
        reports: list[dict] = []
        try:
            try:
                self.tasks.run(batch, tasks, lines)
            finally:
                # Also a failed write's finished tasks: each committed (or skipped) its partition for good.
                reports = [json.loads(line) for line in lines]
                for line in lines:
                    log.info("EOS-TASK %s", line)
            tasks_ms = clock.lap()
            _require_one_report_per_task(batch_id, mapping, reports)
            driver_committed = self._commit_partitions_without_task(tasks.planned, mapping)
        except BaseException:
            unreported = len(mapping.ranges) - len({r["spark_partition"] for r in reports})
            self._failed = executor_task_tally(reports, failed_tasks=max(0, unreported))
            raise
        points.hit(SinkPoint.AFTER_KAFKA_COMMIT)
        # A retry's skip after its earlier attempt committed is this run's commit, not a replay.
        produced = [r for r in reports if task_committed_in_this_run(r["action"], int(r.get("attempt", 0)))]
        return BatchStats(
            batch_id,
            executor_batch_action(len(produced), len(driver_committed)).value,
            rows_out=sum(r["rows_out"] for r in reports),
            rows_dlq=sum(r["rows_dlq"] for r in reports),
            produce_ms=max((r["produce_ms"] for r in reports), default=0),
            commit_ms=max((r["commit_ms"] for r in reports), default=0) + clock.lap(),
            extra={
                "writers": "executors",
                "executor_writer": spec.executor_writer.value,
                "tasks": len(reports),
                "tasks_ms": tasks_ms,
                "partitions_produced": len(produced),
                "partitions_skipped": len(reports) - len(produced),
                "partitions_committed_by_driver": len(driver_committed),
                "producers_created": sum(1 for r in reports if r["producer_created"]),
                "producers_replaced": sum(1 for r in reports if r["producer_replaced"]),
            },
            task_reports=reports,
        )

    def close(self) -> None:
        self.tasks.close()

    def _commit_partitions_without_task(self, planned: PlannedBatch,
                                        mapping: InputPartitionMap) -> list[TopicPartition]:
        query_id, batch_id, end = planned.query_id, planned.batch_id, planned.end
        without = mapping.partitions_without_task(end)
        if not without:
            return []
        clients = self.clients
        spec, writer = clients.spec, clients.driver_producer
        writer.producer(batch_id)
        committed = read_committed_offsets(clients.admin, spec.group_id, {tp: end[tp] for tp in without},
                                           transaction_timeout_ms=spec.transaction_timeout_ms, brokers=spec.brokers)
        pending = [
            tp for tp in without
            if decide_partition(tp, planned, committed.get(tp), spec.group_id) is BatchAction.PRODUCE
        ]
        if pending:
            offsets = offsets_to_commit(query_id, batch_id, {tp: end[tp] for tp in pending})
            with writer.transaction(batch_id) as producer:
                writer.send_offsets(producer, offsets, clients.group_metadata())
                clients.guard()  # a driver whose lease lapsed commits nothing (core/driver_lease.py)
                writer.commit(producer, batch_id)
        return pending


def _require_one_report_per_task(batch_id: int, mapping: InputPartitionMap, reports: list[dict]) -> None:
    reported = sorted(r["spark_partition"] for r in reports)
    expected = list(range(len(mapping.ranges)))
    if reported != expected:
        raise ScanRangeMismatchError(
            f"batch {batch_id}: the write tasks reported Spark partitions {reported}, expected {expected} "
            f"(one per input partition: {', '.join(r.describe() for r in mapping.ranges)})",
            fix="the batch is not complete; Spark replays it on restart (committed partitions skip). "
            "If this repeats, set `writers: driver` and report the plan",
        )
