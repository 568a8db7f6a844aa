"""Every metric the package emits: its name, type, labels and meaning, in one place.

Two families, documented in docs/observability.md (generated from this module):

- :data:`JOB_METRICS`, the streaming job's, served by its driver in the Prometheus text format
  (``metrics: {prometheus_port: PORT}`` in the spec). The pipeline is a label on every one.
- :data:`TASK_METRICS`, the health check's and the recovery tasks', emitted through Airflow's own
  metrics layer (StatsD or OpenTelemetry, as Airflow is configured), under Airflow's prefix
  (``[metrics] statsd_prefix``, ``airflow`` by default); the pipeline (and the partition) is part of the name,
  as StatsD has no labels.

The alert rules and the dashboard (``observability/``) use only names from here; the tests prove it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["HISTOGRAM_BUCKETS", "JOB_METRICS", "TASK_METRICS", "MetricDefinition", "MetricKind", "histogram_buckets",
           "job_metric", "task_metric"]


class MetricKind(StrEnum):
    """A metric's type, in Prometheus's words (StatsD: a counter is ``incr``, a gauge ``gauge``, a timer ``timing``)."""

    COUNTER = "counter"
    GAUGE = "gauge"
    HISTOGRAM = "histogram"
    TIMER = "timer"


@dataclass(frozen=True)
class MetricDefinition:
    """One metric.

    :param name: as exposed: a Prometheus counter ends in ``_total``; a task metric's ``{placeholders}``
        are filled per pipeline or partition.
    :param kind: its type.
    :param description: what it counts or measures, for the docs and Prometheus's ``# HELP``.
    :param labels: its Prometheus labels (job metrics only).
    """

    name: str
    kind: MetricKind
    description: str
    labels: tuple[str, ...] = ()

    @property
    def series(self) -> tuple[str, ...]:
        """The sample names Prometheus stores for it (a histogram's ``_bucket``, ``_sum`` and ``_count``)."""
        if self.kind is MetricKind.HISTOGRAM:
            return (f"{self.name}_bucket", f"{self.name}_sum", f"{self.name}_count")
        return (self.name,)


_P, _W = "pipeline", "writers"
_TP = (_P, "topic", "partition")

JOB_METRICS: tuple[MetricDefinition, ...] = (
    MetricDefinition("eos_writer_info", MetricKind.GAUGE,
                     "1 for the writer the exactly-once sink runs (`writers`: driver or executors; `executor_writer`: "
                     "jvm or python, empty for the driver writer), set at the query's first batch",
                     (_P, _W, "executor_writer")),
    MetricDefinition("eos_batches_total", MetricKind.COUNTER,
                     "micro-batches the sink finished: `action` produce (its transactions committed) or skip_replay "
                     "(Spark replayed a batch whose transactions had committed: nothing written twice)",
                     (_P, _W, "action")),
    MetricDefinition("eos_batch_failures_total", MetricKind.COUNTER,
                     "micro-batches the sink refused or failed, by the error's type (`kind`, e.g. "
                     "InconsistentOffsetsError, ProducerFencedError; for a failed write task, the error the task "
                     "raised, with either executor writer); the query stops on each",
                     (_P, "kind")),
    MetricDefinition("eos_last_committed_batch", MetricKind.GAUGE,
                     "the id of the last batch whose output and offsets are committed in Kafka (produced or found "
                     "committed on replay); from the start of a driver, the checkpoint's newest commit", (_P,)),
    MetricDefinition("eos_last_commit_timestamp_seconds", MetricKind.GAUGE,
                     "Unix time at which the sink last finished a batch (produced or skipped as a replay); from the "
                     "start of a driver, the time of the checkpoint's newest commit (`commits/N`) until then", (_P,)),
    MetricDefinition("eos_records_out_total", MetricKind.COUNTER,
                     "records committed to the output topic, also by the tasks of a batch that failed (executor "
                     "writers: less those of a task attempt that committed and was lost before reporting, which its "
                     "retry cannot count)", (_P, _W)),
    MetricDefinition("eos_records_dlq_total", MetricKind.COUNTER,
                     "records committed to the dead-letter topic", (_P, _W)),
    MetricDefinition("eos_transactions_begun_total", MetricKind.COUNTER,
                     "Kafka transactions the sink's writers began: the driver writer's, counted by its producer; the "
                     "executor writers', one per committing task, one per task attempt that was retried and one per "
                     "task of a failed batch that never succeeded",
                     (_P, _W)),
    MetricDefinition("eos_transactions_committed_total", MetricKind.COUNTER,
                     "Kafka transactions the sink's writers committed (the executor writers: one per input partition "
                     "with new input, plus the driver's for partitions without a task)", (_P, _W)),
    MetricDefinition("eos_transactions_aborted_total", MetricKind.COUNTER,
                     "Kafka transactions that did not commit: aborted or abandoned by the driver writer's producer, "
                     "or of an executor writer's task attempt that failed before its commit (the retry's "
                     "init_transactions aborts it; a task of a failed batch that never succeeded counts once, the "
                     "broker aborting it at the transaction timeout)",
                     (_P, _W)),
    MetricDefinition("eos_producer_fences_total", MetricKind.COUNTER,
                     "times an executor writer's cached producer found itself fenced (another holder of its "
                     "transactional id initialised after it) and was replaced before writing", (_P, _W)),
    MetricDefinition("eos_write_task_retries_total", MetricKind.COUNTER,
                     "executor writer task attempts beyond the first (Spark retried or speculated the task)", (_P,)),
    MetricDefinition("eos_produce_seconds", MetricKind.HISTOGRAM,
                     "per produced batch, the time to produce and flush its records (executor writers: the slowest "
                     "task's)", (_P, _W)),
    MetricDefinition("eos_commit_seconds", MetricKind.HISTOGRAM,
                     "per produced batch, the time to add the offsets with the batch marker and commit (executor "
                     "writers: the slowest task's, plus the driver's commit of partitions without a task)", (_P, _W)),
    MetricDefinition("eos_open_transaction_age_seconds", MetricKind.GAUGE,
                     "seconds since the running batch opened its transaction(s) (the driver writer's begin, the "
                     "executor writers' task start); 0 when none is open. The broker aborts a transaction older "
                     "than the transaction timeout", (_P,)),
    MetricDefinition("eos_transaction_timeout_seconds", MetricKind.GAUGE,
                     "the sink producers' transaction.timeout.ms in seconds (for rules relative to it)", (_P,)),
    MetricDefinition("eos_partition_records_out_total", MetricKind.COUNTER,
                     "records committed (output and dead-letter) per input partition (executor writers only)", _TP),
    MetricDefinition("eos_input_end_offset", MetricKind.GAUGE,
                     "per input partition, the end offset of the last batch Spark finished (Spark's progress)", _TP),
    MetricDefinition("eos_input_lag_records", MetricKind.GAUGE,
                     "per input partition, records between the end of the last batch the sink committed and the "
                     "partition's last stable offset (read_committed), read by the driver every 10 s whether or not "
                     "a batch runs", _TP),
    MetricDefinition("eos_input_rows_total", MetricKind.COUNTER,
                     "input rows of the batches Spark finished (Spark's progress)", (_P,)),
    MetricDefinition("eos_batch_duration_seconds", MetricKind.HISTOGRAM,
                     "per finished batch, Spark's triggerExecution time (planning, the transform and the sink)", (_P,)),
)

TASK_METRICS: tuple[MetricDefinition, ...] = (
    MetricDefinition("eos.health.{pipeline}.status", MetricKind.GAUGE,
                     "the health check's status as a number: 0 HEALTHY, 1 DEGRADED, 2 UNHEALTHY"),
    MetricDefinition("eos.health.{pipeline}.verdict", MetricKind.GAUGE,
                     "the verification verdict the health check read, as a number: 0 IN_SYNC, 1 KAFKA_AHEAD_SAFE, "
                     "2 KAFKA_BEHIND, 3 NO_MARKER, 4 DIVERGED (not emitted when the check could not verify)"),
    MetricDefinition("eos.health.{pipeline}.lag", MetricKind.GAUGE,
                     "records behind, summed over the input partitions (read_committed end offsets, the LSO, minus "
                     "the sink group's committed offsets)"),
    MetricDefinition("eos.health.{pipeline}.{topic}.{partition}.lag", MetricKind.GAUGE,
                     "records behind on one input partition (a `.` in the topic's name becomes `_`; a topic's name "
                     "over 100 characters keeps its first 91, then `-` and 8 hex digits of its SHA-256, so the "
                     "name stays under Airflow's limit)"),
    MetricDefinition("eos.health.{pipeline}.commit_age_seconds", MetricKind.GAUGE,
                     "seconds since the checkpoint's newest commit (`commits/N`); not emitted before the first"),
    MetricDefinition("eos.health.{pipeline}.open_transactions", MetricKind.GAUGE,
                     "open transactions under the pipeline's transactional-id prefix"),
    MetricDefinition("eos.health.{pipeline}.lingering_transactions", MetricKind.GAUGE,
                     "of those, the ones open longer than their transaction timeout (or the lingering threshold)"),
    MetricDefinition("eos.recovery.{pipeline}.verdict", MetricKind.GAUGE,
                     "the recovery's verification verdict as a number: 0 IN_SYNC, 1 KAFKA_AHEAD_SAFE, 2 KAFKA_BEHIND, "
                     "3 NO_MARKER, 4 DIVERGED"),
    MetricDefinition("eos.recovery.{pipeline}.open_transactions", MetricKind.GAUGE,
                     "open transactions the recovery's scan found on the pipeline's ids and partitions"),
    MetricDefinition("eos.recovery.{pipeline}.hanging_transactions", MetricKind.GAUGE,
                     "of those, hanging ones (open on a partition with no live transactional id, KIP-664)"),
    MetricDefinition("eos.recovery.{pipeline}.transactions_aborted", MetricKind.COUNTER,
                     "transactions the recovery aborted (0 on a dry run)"),
    MetricDefinition("eos.recovery.{pipeline}.remaining_transactions", MetricKind.GAUGE,
                     "transactions the pipeline may abort that are still open after the recovery (a dry run: the "
                     "ones it would abort)"),
)

#: The job histograms' bucket bounds, in seconds: from a fast commit to the longest transaction a broker allows
#: by default (transaction.max.timeout.ms, 15 minutes). A produce or commit lasts up to the transaction
#: timeout; with the top bound below it, every slower batch fell in +Inf and a quantile read the top bound.
HISTOGRAM_BUCKETS: tuple[float, ...] = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0,
                                        300.0, 600.0, 900.0)


def histogram_buckets(transaction_timeout_s: float) -> tuple[float, ...]:
    """The bucket bounds of a pipeline's histograms: :data:`HISTOGRAM_BUCKETS`, and its transaction timeout when longer.

    :param transaction_timeout_s: the spec's ``transaction_timeout_ms`` in seconds (a broker whose
        transaction.max.timeout.ms was raised allows more than the default 15 minutes).
    """
    if transaction_timeout_s > HISTOGRAM_BUCKETS[-1]:
        return (*HISTOGRAM_BUCKETS, float(transaction_timeout_s))
    return HISTOGRAM_BUCKETS


_JOB = {metric.name: metric for metric in JOB_METRICS}
_TASK = {metric.name: metric for metric in TASK_METRICS}


def job_metric(name: str) -> MetricDefinition:
    """The job metric ``name``; a ``KeyError`` names the known ones (a typo is a bug, not a new metric)."""
    try:
        return _JOB[name]
    except KeyError:
        raise KeyError(f"no job metric {name!r}; known: {', '.join(sorted(_JOB))}") from None


def task_metric(name: str) -> MetricDefinition:
    """The task metric ``name`` (with its placeholders); a ``KeyError`` names the known ones."""
    try:
        return _TASK[name]
    except KeyError:
        raise KeyError(f"no task metric {name!r}; known: {', '.join(sorted(_TASK))}") from None
