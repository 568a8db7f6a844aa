"""The driver's Prometheus exporter: ``http://HOST:PORT/metrics`` while the job runs (docs/observability.md).

Started by :func:`~airflow_provider_eos.spark.job.run_pipeline` when the spec says
``metrics: {prometheus_port: PORT}``. The sink (:mod:`.sink`) and the progress listener
(:class:`~.batch_progress.BatchProgressLogger`) report to it; the metric changes themselves are decided in
:mod:`airflow_provider_eos.core.metrics.updates`. The exporter has its own registry: the driver's
Python process serves nothing but the catalog's metrics.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, start_http_server
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from airflow_provider_eos.core.errors import MetricsExporterError
from airflow_provider_eos.core.metrics.catalog import (
    JOB_METRICS,
    MetricDefinition,
    MetricKind,
    histogram_buckets,
    job_metric,
)
from airflow_provider_eos.core.metrics.updates import MetricUpdate, Op
from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["PrometheusExporter"]

log = logging.getLogger("airflow_provider_eos.metrics")

#: Computed at each scrape by :class:`_OpenTransactionAge`, not kept as a series.
_AT_SCRAPE = "eos_open_transaction_age_seconds"


class _OpenTransactionAge(Collector):
    """``eos_open_transaction_age_seconds``: now minus when the running batch opened its transaction(s)."""

    def __init__(self, pipeline: str) -> None:
        self.pipeline = pipeline
        self.opened_at: float | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        metric = job_metric(_AT_SCRAPE)
        family = GaugeMetricFamily(metric.name, metric.description, labels=list(metric.labels))
        opened = self.opened_at
        family.add_metric([self.pipeline], 0.0 if opened is None else max(0.0, time.monotonic() - opened))
        yield family


def _instrument(metric: MetricDefinition, registry: CollectorRegistry,
                buckets: tuple[float, ...]) -> Counter | Gauge | Histogram:
    labels = list(metric.labels)
    if metric.kind is MetricKind.COUNTER:
        # prometheus_client adds `_total` itself.
        return Counter(metric.name.removesuffix("_total"), metric.description, labels, registry=registry)
    if metric.kind is MetricKind.HISTOGRAM:
        return Histogram(metric.name, metric.description, labels, registry=registry, buckets=buckets)
    return Gauge(metric.name, metric.description, labels, registry=registry)


class PrometheusExporter:
    """The job's metrics for one pipeline, served over HTTP once :meth:`start` ran.

    :param spec: the pipeline (its name is every series' ``pipeline`` label; ``metrics`` says where to serve).
    """

    def __init__(self, spec: PipelineSpec) -> None:
        self.spec = spec
        self.registry = CollectorRegistry()
        buckets = histogram_buckets(spec.transaction_timeout_ms / 1000)
        self._instruments = {m.name: _instrument(m, self.registry, buckets)
                             for m in JOB_METRICS if m.name != _AT_SCRAPE}
        self._open_age = _OpenTransactionAge(spec.name)
        self.registry.register(self._open_age)
        self._lock = threading.Lock()
        self._server = None
        self.url: str | None = None
        self.apply([MetricUpdate("eos_transaction_timeout_seconds", (("pipeline", spec.name),),
                                 spec.transaction_timeout_ms / 1000, Op.SET)])

    def start(self) -> PrometheusExporter:
        """Serve ``/metrics`` on the spec's host and port.

        :raises MetricsExporterError: the port is taken or the address cannot be bound.
        """
        settings = self.spec.metrics
        if settings is None:
            return self
        # Counters' `_created` series double what Prometheus stores and no rule uses them.
        disable_created_metrics()
        try:
            self._server, _ = start_http_server(settings.prometheus_port, settings.prometheus_host, self.registry)
        except OSError as exc:
            raise MetricsExporterError(
                f"pipeline {self.spec.name!r}: cannot serve metrics on {settings.prometheus_host}:"
                f"{settings.prometheus_port} ({exc.strerror or exc})",
                fix="set metrics.prometheus_port to a port free on the driver's host (one per pipeline whose "
                "driver shares the host), or remove `metrics` from the spec",
            ) from exc
        self.url = f"http://{settings.prometheus_host}:{settings.prometheus_port}/metrics"
        log.info("EOS-METRICS serving %s", self.url)
        return self

    def stop(self, *, failed: bool = False) -> None:
        """Stop serving (the job ends); after a failed query, first serve the last metrics a while."""
        linger_s = self.spec.metrics.failure_linger_s if self.spec.metrics else 0
        if failed and linger_s and self._server is not None:
            log.info("EOS-METRICS the query failed: serving the last metrics for %d s before the driver exits",
                     linger_s)
            time.sleep(linger_s)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def apply(self, updates: Iterable[MetricUpdate]) -> None:
        """Apply the changes :mod:`~airflow_provider_eos.core.metrics.updates` decided."""
        with self._lock:
            for update in updates:
                instrument = self._instruments[update.metric]
                series = instrument.labels(*(value for _, value in update.labels))
                # A zero increment still creates the series, so rules and dashboards find it from the start.
                if update.op is Op.INC:
                    series.inc(update.value)
                elif update.op is Op.SET:
                    series.set(update.value)
                else:
                    series.observe(update.value)

    def transaction_opened(self) -> None:
        """The running batch opened its transaction(s)."""
        self._open_age.opened_at = time.monotonic()

    def transaction_closed(self) -> None:
        """The running batch's transactions committed, or the batch ended otherwise."""
        self._open_age.opened_at = None

    def writer_chosen(self, writers: str, executor_writer: str) -> None:
        """The sink chose its writer (once per query)."""
        self._instruments["eos_writer_info"].labels(self.spec.name, writers, executor_writer).set(1)
