"""The spec's ``metrics`` block: where the driver serves its Prometheus metrics (docs/observability.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MetricsSettings"]


class MetricsSettings(BaseModel):
    """``metrics: {prometheus_port: PORT}``: the driver serves ``http://HOST:PORT/metrics`` while it runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: The port of the driver's exporter (1-65535); one per pipeline whose driver shares a host.
    prometheus_port: int = Field(ge=1, le=65535)
    #: The address it binds: every interface by default, so a Prometheus elsewhere can scrape it;
    #: ``127.0.0.1`` keeps it to the driver's host.
    prometheus_host: str = "0.0.0.0"
    #: Also turn on Spark's own streaming metrics (``spark.sql.streaming.metricsEnabled``) and its
    #: Prometheus endpoint on the driver's UI (``/metrics/prometheus``); the spec's ``spark_conf`` wins.
    spark_metrics: bool = True
    #: After its query failed, the driver serves its last metrics this many seconds before it exits,
    #: so a scrape sees the failure (``eos_batch_failures_total``): keep it above the scrape interval. 0: none.
    failure_linger_s: int = Field(default=30, ge=0, le=600)
