"""The Spark settings that turn on Spark's own streaming metrics and its Prometheus endpoint.

With the spec's ``metrics.spark_metrics`` (the default when ``metrics`` is set), the driver's UI
serves Spark's metrics at ``/metrics/prometheus`` (driver, streaming query) and
``/metrics/executors/prometheus`` (executors), beside the exactly-once sink's own exporter. The
spec's ``spark_conf`` wins over each of these.
"""

from __future__ import annotations

from airflow_provider_eos.core.spec.observability import MetricsSettings

__all__ = ["SPARK_PROMETHEUS_PATH", "spark_metrics_conf"]

#: Where the driver's UI serves Spark's own metrics in the Prometheus format.
SPARK_PROMETHEUS_PATH = "/metrics/prometheus"


def spark_metrics_conf(settings: MetricsSettings | None) -> dict[str, str]:
    """Spark's settings for ``settings``; empty without metrics or with ``spark_metrics: false``."""
    if settings is None or not settings.spark_metrics:
        return {}
    return {
        # The query's input/processing rates, latency and event-time watermark as metrics.
        "spark.sql.streaming.metricsEnabled": "true",
        # The endpoint is served by the driver's UI, which the job otherwise turns off (its kill links stay off:
        # spark.ui.killEnabled in spark/submit_command.py's defaults).
        "spark.ui.enabled": "true",
        "spark.ui.prometheus.enabled": "true",
        "spark.metrics.conf.*.sink.prometheusServlet.class": "org.apache.spark.metrics.sink.PrometheusServlet",
        "spark.metrics.conf.*.sink.prometheusServlet.path": SPARK_PROMETHEUS_PATH,
        # Without it every run's series carry the application id, so no two runs share a series.
        "spark.metrics.namespace": "eos",
    }
