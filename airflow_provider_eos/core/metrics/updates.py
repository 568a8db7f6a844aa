"""What a finished batch and Spark's progress change in the job's metrics (:data:`~.catalog.JOB_METRICS`).

Pure: the driver's exporter (:mod:`airflow_provider_eos.spark.metrics_exporter`) hands in what the
sink and Spark reported and applies the :class:`MetricUpdate`\\ s this module returns.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from airflow_provider_eos.core.metrics.catalog import job_metric
from airflow_provider_eos.core.sink_protocol import task_committed_in_this_run
from airflow_provider_eos.core.topic_partition import TopicPartition

__all__ = ["BatchReport", "MetricUpdate", "Op", "TransactionCounts", "batch_updates", "checkpoint_updates",
           "executor_task_tally", "failure_updates", "input_lag_updates", "progress_updates"]


class Op(StrEnum):
    """How an update changes its metric."""

    INC = "inc"
    SET = "set"
    OBSERVE = "observe"


@dataclass(frozen=True)
class MetricUpdate:
    """One change to one series of a job metric."""

    metric: str
    labels: tuple[tuple[str, str], ...]
    value: float
    op: Op

    def __post_init__(self) -> None:
        expected = job_metric(self.metric).labels
        if tuple(name for name, _ in self.labels) != expected:
            raise ValueError(f"{self.metric}: labels {[n for n, _ in self.labels]} differ from {list(expected)}")


def _update(metric: str, op: Op, value: float, **labels: str) -> MetricUpdate:
    order = job_metric(metric).labels
    return MetricUpdate(metric, tuple((name, str(labels[name])) for name in order), float(value), op)


@dataclass(frozen=True)
class TransactionCounts:
    """Transactions begun, committed and aborted (or abandoned: they never commit)."""

    begun: int = 0
    committed: int = 0
    aborted: int = 0

    def __add__(self, other: TransactionCounts) -> TransactionCounts:
        return TransactionCounts(self.begun + other.begun, self.committed + other.committed,
                                 self.aborted + other.aborted)

    def __sub__(self, other: TransactionCounts) -> TransactionCounts:
        return TransactionCounts(self.begun - other.begun, self.committed - other.committed,
                                 self.aborted - other.aborted)


@dataclass(frozen=True)
class ExecutorTaskTally:
    """What one batch's executor write tasks reported (their ``EOS-TASK`` lines), summed."""

    transactions: TransactionCounts = TransactionCounts()
    fences: int = 0
    retries: int = 0
    #: Records committed (output and dead-letter) per input partition ``(topic, partition)``.
    partition_records: Mapping[tuple[str, int], int] = field(default_factory=dict)
    #: Records the producing tasks committed to the output and to the dead-letter topic.
    rows_out: int = 0
    rows_dlq: int = 0


def executor_task_tally(reports: Iterable[Mapping[str, Any]], failed_tasks: int = 0) -> ExecutorTaskTally:
    """Sum the tasks' reports: a committing task is one transaction; each attempt before it, one that failed.

    A report's ``attempt`` is Spark's attempt number of the task that succeeded: as many attempts
    failed (or were killed) before it, each may have begun its transaction, and the successful
    attempt's ``init_transactions`` of the same id aborted it. A retry that found its partition
    already committed by this batch (``skip_replay`` at attempt 1 or later) found one of those
    earlier attempts' commit, whose report was lost with it: that one committed, and its rows are
    unknown to the retry, so they are missing from the records counts.

    :param failed_tasks: tasks of a failed write that finished without a report (no attempt
        succeeded): each is one transaction begun and not committed. Its attempts' transactions
        are the broker's to abort (at their timeout) or the next attempt's ``init_transactions``';
        the driver learns of none of them one by one, so a task counts once however often Spark
        tried it.
    """
    produced = found_committed = retries = fences = rows_out = rows_dlq = 0
    records: dict[tuple[str, int], int] = {}
    for report in reports:
        attempt = int(report.get("attempt", 0))
        action = str(report.get("action"))
        retries += attempt
        fences += bool(report.get("producer_replaced"))
        if action == "produce":
            produced += 1
            out, dlq = int(report.get("rows_out", 0)), int(report.get("rows_dlq", 0))
            rows_out, rows_dlq = rows_out + out, rows_dlq + dlq
            key = (str(report["topic"]), int(report["partition"]))
            records[key] = records.get(key, 0) + out + dlq
        elif task_committed_in_this_run(action, attempt):
            found_committed += 1
    # The earlier attempts began `retries` transactions; `found_committed` of them committed, not aborted.
    transactions = TransactionCounts(produced + retries + failed_tasks, produced + found_committed,
                                     retries - found_committed + failed_tasks)
    return ExecutorTaskTally(transactions, fences, retries, records, rows_out, rows_dlq)


@dataclass(frozen=True)
class BatchReport:
    """One batch the sink finished, as its metrics see it.

    :param transactions: every transaction of the batch (the tasks' and the driver producer's).
    :param finished_at: Unix time in seconds.
    """

    pipeline: str
    batch_id: int
    writers: str
    action: str
    rows_out: int
    rows_dlq: int
    produce_ms: int
    commit_ms: int
    finished_at: float
    transactions: TransactionCounts
    tasks: ExecutorTaskTally = ExecutorTaskTally()


def _written_updates(p: str, w: str, rows_out: int, rows_dlq: int, transactions: TransactionCounts,
                     tasks: ExecutorTaskTally) -> list[MetricUpdate]:
    """What a batch wrote and committed, finished or failed: records, transactions, the tasks' retries and fences."""
    return [
        _update("eos_records_out_total", Op.INC, rows_out, pipeline=p, writers=w),
        _update("eos_records_dlq_total", Op.INC, rows_dlq, pipeline=p, writers=w),
        _update("eos_transactions_begun_total", Op.INC, transactions.begun, pipeline=p, writers=w),
        _update("eos_transactions_committed_total", Op.INC, transactions.committed, pipeline=p, writers=w),
        _update("eos_transactions_aborted_total", Op.INC, transactions.aborted, pipeline=p, writers=w),
        _update("eos_producer_fences_total", Op.INC, tasks.fences, pipeline=p, writers=w),
        _update("eos_write_task_retries_total", Op.INC, tasks.retries, pipeline=p),
        *(_update("eos_partition_records_out_total", Op.INC, count, pipeline=p, topic=topic,
                  partition=str(partition))
          for (topic, partition), count in sorted(tasks.partition_records.items())),
    ]


def batch_updates(report: BatchReport) -> list[MetricUpdate]:
    """The metric changes of one finished batch."""
    p, w = report.pipeline, report.writers
    updates = [
        _update("eos_batches_total", Op.INC, 1, pipeline=p, writers=w, action=report.action),
        _update("eos_last_committed_batch", Op.SET, report.batch_id, pipeline=p),
        _update("eos_last_commit_timestamp_seconds", Op.SET, report.finished_at, pipeline=p),
    ]
    if report.action == "produce":
        updates += [
            _update("eos_produce_seconds", Op.OBSERVE, report.produce_ms / 1000, pipeline=p, writers=w),
            _update("eos_commit_seconds", Op.OBSERVE, report.commit_ms / 1000, pipeline=p, writers=w),
        ]
    return updates + _written_updates(p, w, report.rows_out, report.rows_dlq, report.transactions, report.tasks)


def failure_updates(pipeline: str, kind: str, transactions: TransactionCounts, writers: str,
                    tasks: ExecutorTaskTally | None = None) -> list[MetricUpdate]:
    """The metric changes of a batch the sink failed or refused (``kind``: the error's type).

    :param transactions: the driver producer's transactions of the batch.
    :param tasks: the executor writers' tasks of the failed write (:func:`executor_task_tally` of the
        reports of those that finished, and those that did not): a task's commit is for good, and a
        replay of the batch skips its partition, so what it committed is counted now or never.
    """
    tasks = tasks or ExecutorTaskTally()
    return [
        _update("eos_batch_failures_total", Op.INC, 1, pipeline=pipeline, kind=kind),
        *_written_updates(pipeline, writers, tasks.rows_out, tasks.rows_dlq, transactions + tasks.transactions,
                          tasks),
    ]


def _kafka_offsets(value: Any) -> dict[tuple[str, int], int]:
    """A Kafka source's offsets in Spark's progress (``{"topic": {"0": 42}}``, possibly as JSON text)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    if not isinstance(value, Mapping):
        return {}
    return {
        (str(topic), int(partition)): int(offset)
        for topic, partitions in value.items() if isinstance(partitions, Mapping)
        for partition, offset in partitions.items() if str(partition).lstrip("-").isdigit()
    }


def progress_updates(pipeline: str, progress: Mapping[str, Any]) -> list[MetricUpdate]:
    """The metric changes of one ``StreamingQueryProgress`` (its JSON as a mapping).

    The lag is not Spark's: its progress comes only with a finished batch (none while the query
    idles or is stuck), so the driver measures it itself (:func:`input_lag_updates`).
    """
    p = pipeline
    updates = [_update("eos_input_rows_total", Op.INC, int(progress.get("numInputRows") or 0), pipeline=p)]
    trigger_ms = (progress.get("durationMs") or {}).get("triggerExecution")
    if trigger_ms is not None:
        updates.append(_update("eos_batch_duration_seconds", Op.OBSERVE, trigger_ms / 1000, pipeline=p))
    for source in progress.get("sources") or ():
        for (topic, partition), offset in sorted(_kafka_offsets(source.get("endOffset")).items()):
            updates.append(_update("eos_input_end_offset", Op.SET, offset, pipeline=p, topic=topic,
                                   partition=str(partition)))
    return updates


def input_lag_updates(pipeline: str, stable: Mapping[TopicPartition, int],
                      committed: Mapping[TopicPartition, int]) -> list[MetricUpdate]:
    """``eos_input_lag_records`` per input partition: its last stable offset now minus the last committed batch's end.

    :param stable: the input partitions' last stable offsets (ListOffsets ``read_committed``, where the
        source reads), read after ``committed`` was taken, so a lag is never understated.
    :param committed: the end offsets of the newest batch the sink committed; a partition missing
        from it (new since) has no lag series until a batch commits it.
    """
    return [
        _update("eos_input_lag_records", Op.SET, max(0, stable[tp] - end), pipeline=pipeline, topic=tp.topic,
                partition=str(tp.partition))
        for tp, end in sorted(committed.items()) if tp in stable
    ]


def checkpoint_updates(pipeline: str, batch_id: int, committed_at: float) -> list[MetricUpdate]:
    """The newest batch a starting driver finds committed in the checkpoint (``commits/N``, at Unix time
    ``committed_at``): the last commit's age is known before this driver's first batch, or without one."""
    return [
        _update("eos_last_committed_batch", Op.SET, batch_id, pipeline=pipeline),
        _update("eos_last_commit_timestamp_seconds", Op.SET, committed_at, pipeline=pipeline),
    ]
