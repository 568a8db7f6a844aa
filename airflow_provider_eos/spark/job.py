"""Build and run the streaming query of a pipeline spec: source -> transform -> sink.

The spark-submit entry (``airflow_provider_eos/jobs/eos_job.py``) calls :func:`run_pipeline`.
"""

from __future__ import annotations

import importlib
import json
import logging
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from airflow_provider_eos.core.errors import EosError, SpecError
from airflow_provider_eos.core.spec import Mode, PipelineSpec
from airflow_provider_eos.kafka.settings import spark_source_options
from airflow_provider_eos.spark.faults import FaultInjector
from airflow_provider_eos.spark.noop_sink import BENCH_NOOP_MODE, NoopSink
from airflow_provider_eos.spark.sink import DLQ_REASON_COLUMN, AtLeastOnceKafkaSink, ExactlyOnceKafkaSink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

log = logging.getLogger("airflow_provider_eos.job")

Transform = Callable[["DataFrame"], "DataFrame"]

_TASK_SUMS = ("tasks", "tasks_ms", "partitions_produced", "partitions_skipped", "partitions_committed_by_driver")


def read_source(spark: SparkSession, spec: PipelineSpec) -> DataFrame:
    """Spark's Kafka source, ``read_committed`` and failing on data loss (never silently skipping)."""
    reader = spark.readStream.format("kafka").options(**spark_source_options(spec))
    reader = (
        reader.option("subscribe", ",".join(spec.input_topics))
        .option("kafka.isolation.level", "read_committed")
        .option("failOnDataLoss", "true")
        .option("startingOffsets", spec.starting_offsets)
        .option("includeHeaders", "true")
    )
    if spec.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(spec.max_offsets_per_trigger))
    return reader.load()


def identity(frame: DataFrame) -> DataFrame:
    """The default transform: records pass through with key, value and headers."""
    return frame.select("key", "value", "headers")


def load_transform(reference: str | None) -> Transform:
    """Import ``module:function``; errors name the reference and what is wrong."""
    if reference is None:
        return identity
    module_name, _, function_name = reference.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise SpecError(
            f"transform {reference!r}: cannot import module {module_name!r} ({exc})",
            fix="ship the module with the job (it must be importable on the driver and executors)",
        ) from exc
    function = getattr(module, function_name, None)
    if not callable(function):
        raise SpecError(f"transform {reference!r}: {module_name} has no function {function_name!r}",
                        fix="name a function that takes and returns a DataFrame")
    return function


def _apply_trigger(writer, spec: PipelineSpec):
    if spec.trigger_interval_ms is None:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=f"{spec.trigger_interval_ms} milliseconds")


def start_query(
    spark: SparkSession, spec: PipelineSpec, mode: Mode | str = Mode.EXACTLY_ONCE,
) -> tuple[StreamingQuery, object]:
    """Start the query; returns it and its sink.

    ``mode`` is the spec's :class:`Mode`, or :data:`~.noop_sink.BENCH_NOOP_MODE` (benchmark only:
    reads and transforms, writes nothing, no delivery guarantee).
    """
    transformed = load_transform(spec.transform)(read_source(spark, spec))
    missing = {"key", "value"} - set(transformed.columns)
    if missing:
        raise SpecError(f"transform {spec.transform!r} returned no {sorted(missing)} column(s); it has "
                        f"{transformed.columns}", fix="return a DataFrame with key and value (and optional headers, "
                        f"{DLQ_REASON_COLUMN})")
    output_mode = "append"
    if mode == Mode.EXACTLY_ONCE:
        sink = ExactlyOnceKafkaSink(spec, spark, FaultInjector.from_environment(spec.transaction_timeout_ms))
        writer = transformed.writeStream.foreachBatch(sink).outputMode(output_mode)
    elif mode == Mode.AT_LEAST_ONCE:
        sink = AtLeastOnceKafkaSink(spec, FaultInjector.from_environment(spec.transaction_timeout_ms))
        writer = transformed.writeStream.foreachBatch(sink).outputMode(output_mode)
    elif mode == BENCH_NOOP_MODE:
        # Benchmark only: reads and transforms, writes nothing, no delivery guarantee.
        sink = NoopSink()
        writer = transformed.writeStream.foreachBatch(sink).outputMode(output_mode)
    else:
        raise EosError(f"unknown mode {mode!r}", fix=f"use one of {', '.join(repr(m.value) for m in Mode)}")
    writer = _apply_trigger(writer.option("checkpointLocation", spec.checkpoint_location), spec)
    # Registered before start so the first batch's progress is logged too.
    spark.streams.addListener(BatchProgressLogger(sink, mode).as_listener())
    query = writer.queryName(f"eos-{spec.name}").start()
    return query, sink


class BatchProgressLogger:
    """One ``EOS-PROGRESS`` JSON line per finished batch: Spark's counts joined with the sink's."""

    def __init__(self, sink: ExactlyOnceKafkaSink | AtLeastOnceKafkaSink | NoopSink, mode: Mode | str) -> None:
        self.sink, self.mode = sink, mode

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


def run_pipeline(spark: SparkSession, spec: PipelineSpec, mode: Mode | str = Mode.EXACTLY_ONCE) -> int:
    """Run until the query ends (available-now) or SIGTERM; returns a process exit code.

    SIGTERM stops the query after the running batch completes, never in the middle of one.
    """
    query, sink = start_query(spark, spec, mode)
    stop_requested = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.set())
    try:
        while query.isActive:
            if query.awaitTermination(0.5):
                break
            # Between triggers, not merely outside the sink: a batch already planned in offsets/N
            # would otherwise be left for a replay.
            if stop_requested.is_set() and not sink.in_batch and not query.status.get("isTriggerActive"):
                log.info("EOS-QUERY SIGTERM: stopping after the running batch")
                query.stop()
        exception = query.exception()
        if exception is not None:
            log.error("EOS-QUERY failed: %s", exception)
            return 1
        return 0
    finally:
        sink.close()
