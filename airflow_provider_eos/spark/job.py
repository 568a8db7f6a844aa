"""Build and run the streaming query of a pipeline spec: source -> transform -> sink.

The driver program (:mod:`airflow_provider_eos.spark.entry_point`, which spark-submit runs through
``spark_jobs/eos_job.py``) calls :func:`run_pipeline`.
"""

from __future__ import annotations

import datetime as dt
import importlib
import logging
import os
import threading
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING

from airflow_provider_eos.core.acls import ResourceType
from airflow_provider_eos.core.application_links import app_line
from airflow_provider_eos.core.driver import (
    DRIVER_OWNER_PID_ENV,
    DRIVER_TOKEN_CONF,
    DRIVER_TOKEN_ENV,
    untagged_driver_token,
)
from airflow_provider_eos.core.errors import AclMissingError, EosError, SpecError
from airflow_provider_eos.core.output_columns import require_output_columns
from airflow_provider_eos.core.spec import Mode, PipelineSpec
from airflow_provider_eos.core.transform_reference import resolve_transform
from airflow_provider_eos.kafka.settings import spark_source_options
from airflow_provider_eos.spark.batch_progress import BatchProgressLogger
from airflow_provider_eos.spark.driver_lease import LeaseKeeper
from airflow_provider_eos.spark.driver_processes import this_host
from airflow_provider_eos.spark.sink import AtLeastOnceKafkaSink, ExactlyOnceKafkaSink
from airflow_provider_eos.spark.sink_clients import driver_checkpoint
from airflow_provider_eos.spark.sink_points import BatchSink, load_plugin
from airflow_provider_eos.spark.stop_request import stop_on_sigterm, stopped_while_starting

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

    from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter

log = logging.getLogger("airflow_provider_eos.job")

Transform = Callable[["DataFrame"], "DataFrame"]

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
    """Import ``module:function``; errors name the reference and what is wrong.

    A reference to a moved module (``airflow_provider_eos.jobs...``) imports it from where it lives
    now, logs the deprecation and warns with a :class:`DeprecationWarning`.
    """
    if reference is None:
        return identity
    resolved = resolve_transform(reference)
    if resolved.deprecation:
        # Logged as well: Python hides DeprecationWarnings outside __main__, and the driver's log is what users read.
        log.warning("%s", resolved.deprecation)
        warnings.warn(resolved.deprecation, DeprecationWarning, stacklevel=2)
    module_name, function_name = resolved.module, resolved.function
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


#: In the query's exception when :class:`StopGate` refused a batch: a requested stop, not a failure.
STOP_BEFORE_BATCH = "EOS-STOP-BEFORE-BATCH"


class StopBeforeBatch(Exception):
    """Raised by :class:`StopGate` at a batch's start, before the sink does anything."""


class StopGate:
    """The sink as ``foreachBatch`` sees it: once a stop is requested, the next batch is refused at its start.

    A query that is behind runs its triggers back to back, so the driver's loop may never see a
    moment between two of them to call ``query.stop()``. Refused before the sink reads or writes
    anything, the batch stays planned in ``offsets/N`` only, and a restart runs it (a replay of
    a planned batch, which the protocol expects).

    With ``guard`` (the driver's lease, :class:`~.driver_lease.LeaseKeeper`), a driver that may no
    longer commit starts no batch either: ``guard`` raises.
    """

    def __init__(self, sink: Callable, stop: threading.Event, guard: Callable[[], None] | None = None) -> None:
        self.sink, self.stop, self.guard = sink, stop, guard

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        if self.stop.is_set():
            raise StopBeforeBatch(f"{STOP_BEFORE_BATCH} {batch_id}: stop requested (SIGTERM); the batch is planned "
                                  "in offsets/ and nothing of it was written; a restart runs it")
        if self.guard is not None:
            self.guard()
        self.sink(batch, batch_id)


def start_query(
    spark: SparkSession, spec: PipelineSpec, mode: Mode | str = Mode.EXACTLY_ONCE,
    stop: threading.Event | None = None, guard: Callable[[], None] | None = None,
    exporter: PrometheusExporter | None = None,
) -> tuple[StreamingQuery, object]:
    """Start the query; returns it and its sink.

    ``mode`` is the spec's :class:`Mode`, or a mode only the acknowledged sink plug-in has
    (:mod:`.sink_points`; the bench's ``noop``). The sink announces its points to the plug-in's
    observer (by default nobody). With ``stop``, a set event refuses the next batch at its start
    (:class:`StopGate`). With ``guard`` (the driver's lease), a driver that may no longer commit
    starts no batch and its exactly-once sink commits nothing. With ``exporter`` (the spec's
    ``metrics``), the sink and Spark's progress report to it.
    """
    transformed = load_transform(spec.transform)(read_source(spark, spec))
    require_output_columns(spec.transform or "identity",
                           {field.name: field.dataType.simpleString() for field in transformed.schema.fields})
    output_mode = "append"
    plugin = load_plugin()
    sink: BatchSink | None
    if mode == Mode.EXACTLY_ONCE:
        sink = ExactlyOnceKafkaSink(spec, spark, plugin.observer(spec), guard, exporter)
    elif mode == Mode.AT_LEAST_ONCE:
        sink = AtLeastOnceKafkaSink(spec, plugin.observer(spec))
    else:
        sink = plugin.sink(str(mode), spec, spark)
    if sink is None:
        raise EosError(f"unknown mode {mode!r}", fix=f"use one of {', '.join(repr(m.value) for m in Mode)}")
    writer = transformed.writeStream.foreachBatch(_gated(sink, stop, guard)).outputMode(output_mode)
    writer = _apply_trigger(writer.option("checkpointLocation", spec.checkpoint_location), spec)
    # Registered before start so the first batch's progress is logged too.
    BatchProgressLogger(sink, mode, exporter, spec.name).register(spark)
    query = writer.queryName(f"eos-{spec.name}").start()
    return query, sink


def _gated(sink: Callable, stop: threading.Event | None, guard: Callable[[], None] | None = None) -> Callable:
    if stop is None and guard is None:
        return sink
    return StopGate(sink, stop or threading.Event(), guard)


def source_refusal(spec: PipelineSpec, failure: str) -> AclMissingError | None:
    """The missing ACL behind a query failure the Java client raised (Spark's source, or its Kafka writer)."""
    from airflow_provider_eos.core.acls import required_acls
    from airflow_provider_eos.core.acls.denials import for_role, java_denial
    from airflow_provider_eos.kafka.denials import refusal

    found = java_denial(failure)
    if found is None:
        return None
    written = {spec.output_topic, spec.dlq_topic}
    request = "Produce" if set(found[1]) & written else "Fetch"
    refused = refusal(failure, request, {ResourceType.TOPIC: spec.input_topics}, settings=spec.kafka)
    if refused is None:
        return None
    return for_role(refused, "job", pipeline=spec.name,
                    role_acls=required_acls(spec, refused.principal or "User:NAME", "job"))


def _owner_watch() -> Callable[[], bool]:
    """Whether the process named by ``$EOS_DRIVER_OWNER_PID`` (the submitting Airflow task) has exited.

    Always ``False`` without the variable (``eos run``, cluster deploy mode).
    """
    value = os.environ.get(DRIVER_OWNER_PID_ENV, "")
    if not value.isdigit():
        return lambda: False
    owner = int(value)

    def gone() -> bool:
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    return gone


def driver_lease(spark: SparkSession, spec: PipelineSpec) -> LeaseKeeper:
    """The driver's lease keeper, under the driver token its submission gave it, or one of its own.

    The submit operator and ``eos run`` give every driver a token
    (:func:`~airflow_provider_eos.core.driver.submission_environment`): in the environment (client
    deploy mode: spark-submit's, inherited) or in the Spark settings (cluster deploy mode, where the
    driver does not inherit spark-submit's environment). A spark-submit of the job by hand gives
    none; such a driver names itself (:func:`~airflow_provider_eos.core.driver.untagged_driver_token`)
    and holds the lease all the same, so no recovery acts on it and no second driver starts beside it.
    """
    token = os.environ.get(DRIVER_TOKEN_ENV) or spark.sparkContext.getConf().get(DRIVER_TOKEN_CONF)
    if not token:
        token = untagged_driver_token(spec.name, this_host(), os.getpid(), dt.datetime.now(dt.UTC))
        log.info("EOS-LEASE the driver was submitted without a driver token (a spark-submit by hand): "
                 "it holds the lease as %s", token)
    return LeaseKeeper(driver_checkpoint(spec, spark), token, spec.driver_lease_ttl_s,
                       app_id=spark.sparkContext.applicationId)


def announce_application(spark: SparkSession) -> None:
    """Log the ``EOS-APP`` line: the application id and the Spark UI's address, as the SparkContext reports them.

    The submit task reads it in spark-submit's output for its links to the Spark UI and to the
    application in its cluster manager (:mod:`airflow_provider_eos.core.application_links`).
    """
    context = spark.sparkContext
    log.info(app_line(context.applicationId, context.uiWebUrl))


def run_pipeline(spark: SparkSession, spec: PipelineSpec, mode: Mode | str = Mode.EXACTLY_ONCE,
                 stop: threading.Event | None = None) -> int:
    """Run until the query ends (available-now) or SIGTERM; returns a process exit code.

    SIGTERM stops the query after the running batch completes, never in the middle of one; one that
    arrives before the query started stops the driver there (exit 0, its lease released). The
    driver holds the lease in the checkpoint while it runs (:func:`driver_lease`): it starts no
    batch and commits nothing once it cannot renew it, and releases it once the query has stopped.

    :param stop: the event the driver program's SIGTERM handler sets (:func:`.stop_request.stop_on_sigterm`,
        installed before Spark started); ``None``: installed here.
    """
    stop_requested = stop if stop is not None else stop_on_sigterm()
    announce_application(spark)
    # The lease first: a driver refused beside a live one must not meet that one's metrics port before its refusal.
    lease = driver_lease(spark, spec)
    lease.acquire()
    exporter: PrometheusExporter | None = None
    started = False
    try:
        exporter = _metrics_exporter(spec)
        if stopped_while_starting(stop_requested, "the query started"):
            return 0
        query, sink = start_query(spark, spec, mode, stop=stop_requested, guard=lease.guard,
                                  exporter=exporter)
        started = True
    finally:
        if not started:
            lease.release(query_stopped=True)  # no query ever ran
            if exporter is not None:
                exporter.stop()
    lease.started_query(str(query.id), str(query.runId))
    exit_code = 1
    try:
        exit_code = _until_stopped(query, sink, spec, stop_requested, lease)
        return exit_code
    finally:
        try:
            sink.close()
        finally:
            lease.release(query_stopped=not _active(query))
            if exporter is not None:
                exporter.stop(failed=exit_code != 0)


def _metrics_exporter(spec: PipelineSpec) -> PrometheusExporter | None:
    """The driver's exporter, serving already, when the spec has ``metrics``; ``None`` otherwise."""
    if spec.metrics is None:
        return None
    from airflow_provider_eos.spark.metrics_exporter import PrometheusExporter

    return PrometheusExporter(spec).start()


def _active(query: StreamingQuery) -> bool:
    """Whether the query may still run; when it cannot be asked, it may."""
    try:
        return bool(query.isActive)
    except Exception:
        return True


def _until_stopped(query: StreamingQuery, sink, spec: PipelineSpec, stop_requested: threading.Event,
                   lease: LeaseKeeper) -> int:
    """Wait for the query to end, stopping it between batches on SIGTERM (``stop_requested``, set by the
    handler the driver installed first), its owner's end or a lapsed lease."""
    announced = False

    def announce_stop() -> None:
        nonlocal announced
        if stop_requested.is_set() and not announced:
            log.info("EOS-QUERY SIGTERM: stopping after the running batch")
            announced = True

    must_stop = _stop_conditions(lease)
    while query.isActive:
        if not stop_requested.is_set() and (reason := must_stop()):
            log.info("EOS-QUERY %s: stopping after the running batch", reason)
            stop_requested.set()
        announce_stop()
        try:
            if query.awaitTermination(0.5):
                break
        except Exception:  # the query failed (or the StopGate refused a batch): read below
            break
        if not stop_requested.is_set():
            continue
        announce_stop()
        # Between triggers if the loop sees a moment between two (nothing planned is left
        # over); otherwise the StopGate refuses the next batch at its start.
        if not sink.in_batch and not query.status.get("isTriggerActive"):
            query.stop()
    # The StopGate may refuse a batch within the wait the signal arrived in: say it was seen.
    announce_stop()
    lapsed = lease.lapsed()
    if lapsed:
        log.error("EOS-QUERY stopped: the driver lease lapsed (%s); it committed nothing since", lapsed)
        return 1
    return _exit_code(query.exception(), spec, stopped=stop_requested.is_set())


def _stop_conditions(lease: LeaseKeeper) -> Callable[[], str | None]:
    """Why the driver must stop by itself now, or ``None``: its submitter is gone, or its lease lapsed."""
    owner_gone = _owner_watch()

    def reason() -> str | None:
        if owner_gone():
            return "the process that submitted this driver is gone"
        lapsed = lease.lapsed()
        return f"the driver lease lapsed ({lapsed})" if lapsed else None

    return reason


def _exit_code(exception: Exception | None, spec: PipelineSpec, *, stopped: bool) -> int:
    """The job's exit code once its query ended: 0 unless it failed other than by a requested stop."""
    if exception is not None and stopped and STOP_BEFORE_BATCH in str(exception):
        refused = str(exception).split(STOP_BEFORE_BATCH, 1)[1].split(":", 1)[0].strip()
        log.info("EOS-QUERY SIGTERM: stopped before batch %s (planned, nothing written; a restart runs it)", refused)
        return 0
    if exception is not None:
        refused = source_refusal(spec, str(exception))
        log.error("EOS-QUERY failed: %s", refused if refused is not None else exception)
        return 1
    return 0
