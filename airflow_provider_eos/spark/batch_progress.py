"""One ``EOS-PROGRESS`` line per finished batch, and the metrics Spark's progress feeds (lag, batch time)."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from airflow_provider_eos.core.metrics.updates import progress_updates
from airflow_provider_eos.core.spec import Mode

if TYPE_CHECKING:
    from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter
    from airflow_provider_eos.spark.sink_points import BatchSink

__all__ = ["BatchProgressLogger"]

log = logging.getLogger("airflow_provider_eos.job")

#: The executor writers' batch sums its tasks' EOS-TASK lines into these.
_TASK_SUMS = ("tasks", "tasks_ms", "partitions_produced", "partitions_skipped", "partitions_committed_by_driver")


class BatchProgressLogger:
    """One ``EOS-PROGRESS`` JSON line per finished batch: Spark's counts joined with the sink's."""

    def __init__(self, sink: BatchSink, mode: Mode | str, exporter: PrometheusExporter | None = None,
                 pipeline: str = "") -> None:
        self.sink, self.mode, self.exporter, self.pipeline = sink, mode, exporter, pipeline

    def as_listener(self):
        from pyspark.sql.streaming import StreamingQueryListener

        outer = self

        class _Listener(StreamingQueryListener):
            def onQueryStarted(self, event) -> None:
                log.info("EOS-QUERY started id=%s run_id=%s", event.id, event.runId)

            def onQueryProgress(self, event) -> None:
                outer.log_progress(event.progress)

            def onQueryIdle(self, event) -> None:
                pass

            def onQueryTerminated(self, event) -> None:
                log.info("EOS-QUERY terminated id=%s exception=%s", event.id, event.exception)

        return _Listener()

    def log_progress(self, progress) -> None:
        line = {"mode": self.mode, "batch_id": progress.batchId, "rows_in": progress.numInputRows,
                "batch_ms": (progress.durationMs or {}).get("triggerExecution")}
        if stats := self.sink.stats.pop(progress.batchId, None):
            line.update(action=stats.action, rows_out=stats.rows_out, rows_dlq=stats.rows_dlq,
                        replay_skipped=stats.action == "skip_replay", collect_ms=stats.collect_ms,
                        produce_ms=stats.produce_ms, commit_ms=stats.commit_ms)
            if self.mode == Mode.EXACTLY_ONCE:
                line["writers"] = stats.extra.get("writers", "driver")
            # The executor writers' batch sums its tasks' EOS-TASK lines.
            line.update({key: stats.extra[key] for key in _TASK_SUMS if key in stats.extra})
        log.info("EOS-PROGRESS %s", json.dumps(line, sort_keys=True))
        if self.exporter is not None:
            self.exporter.apply(progress_updates(self.pipeline, json.loads(progress.json)))
