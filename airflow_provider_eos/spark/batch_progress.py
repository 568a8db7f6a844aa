"""One ``EOS-PROGRESS`` line per finished batch, and the metrics Spark's progress feeds (lag, batch time)."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.metrics.updates import progress_updates
from airflow_provider_eos.core.spec import Mode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter
    from airflow_provider_eos.spark.sink_points import BatchSink

__all__ = ["SPARK_PHASES", "BatchProgressLogger"]

log = logging.getLogger("airflow_provider_eos.job")

#: The executor writers' batch sums its tasks' EOS-TASK lines into these.
_TASK_SUMS = ("tasks", "tasks_ms", "partitions_produced", "partitions_skipped", "partitions_committed_by_driver")

#: Spark's phases of a batch (``durationMs``) beside its total, so a slow batch says where its time went:
#: finding the end offsets, planning, the WAL, the sink, the commit log.
SPARK_PHASES = ("latestOffset", "getBatch", "queryPlanning", "walCommit", "addBatch", "commitOffsets")


class BatchProgressLogger:
    """One ``EOS-PROGRESS`` JSON line per finished batch: Spark's counts joined with the sink's."""

    def __init__(self, sink: BatchSink, mode: Mode | str, exporter: PrometheusExporter | None = None,
                 pipeline: str = "") -> None:
        self.sink, self.mode, self.exporter, self.pipeline = sink, mode, exporter, pipeline

    def register(self, spark: SparkSession) -> None:
        """Receive the session's query events (register before the query starts, so batch 0 is logged too).

        Not through PySpark's ``StreamingQueryListener``: it converts each progress event field by
        field, a py4j round trip per map key, about 65 ms of the driver's Python per batch, on a
        thread that holds the GIL while the sink's own py4j calls of the next batch wait for it
        (docs/design-notes.md note 47). :class:`_QueryEvents` reads each progress as its JSON, in one call.
        """
        from pyspark.java_gateway import ensure_callback_server_started

        context = spark.sparkContext
        ensure_callback_server_started(context._gateway)
        wrapper = context._jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper
        spark._jsparkSession.streams().addListener(wrapper(_QueryEvents(self)))

    def log_progress(self, progress: dict[str, Any]) -> None:
        """Log one finished batch: ``progress`` is Spark's ``StreamingQueryProgress`` as its JSON."""
        batch_id = progress["batchId"]
        durations = progress.get("durationMs") or {}
        line = {"mode": self.mode, "batch_id": batch_id, "rows_in": progress["numInputRows"],
                "batch_ms": durations.get("triggerExecution"),
                "spark_ms": {phase: durations[phase] for phase in SPARK_PHASES if phase in durations}}
        if stats := self.sink.stats.pop(batch_id, None):
            line.update(action=stats.action, rows_out=stats.rows_out, rows_dlq=stats.rows_dlq,
                        replay_skipped=stats.action == "skip_replay", collect_ms=stats.collect_ms,
                        produce_ms=stats.produce_ms, commit_ms=stats.commit_ms)
            if self.mode == Mode.EXACTLY_ONCE:
                line["writers"] = stats.extra.get("writers", "driver")
            # The executor writers' batch sums its tasks' EOS-TASK lines.
            line.update({key: stats.extra[key] for key in _TASK_SUMS if key in stats.extra})
        log.info("EOS-PROGRESS %s", json.dumps(line, sort_keys=True))
        if self.exporter is not None:
            self.exporter.apply(progress_updates(self.pipeline, progress))


class _QueryEvents:
    """Spark's ``PythonStreamingQueryListener`` as py4j calls it back: one call reads a progress (its JSON)."""

    def __init__(self, progress: BatchProgressLogger) -> None:
        self.progress = progress

    # Spark's interface names these methods.
    def onQueryStarted(self, event: Any) -> None:
        log.info("EOS-QUERY started id=%s run_id=%s", event.id().toString(), event.runId().toString())

    def onQueryProgress(self, event: Any) -> None:
        self.progress.log_progress(json.loads(event.progress().json()))

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        failure = event.exception()
        log.info("EOS-QUERY terminated id=%s exception=%s", event.id().toString(),
                 failure.get() if failure.isDefined() else None)

    class Java:
        implements = ["org.apache.spark.sql.streaming.PythonStreamingQueryListener"]
