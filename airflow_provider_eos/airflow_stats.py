"""The task metrics through Airflow's own metrics layer: StatsD or OpenTelemetry, as Airflow is configured.

The values come from :mod:`airflow_provider_eos.core.metrics.task_metrics`; this module only hands
them to Airflow's ``Stats`` (a no-op logger when ``[metrics]`` turns metrics off). A metrics
backend that fails never fails the task: its error is logged and the task goes on.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from airflow_provider_eos.core.health.report import HealthReport
from airflow_provider_eos.core.metrics.catalog import MetricKind
from airflow_provider_eos.core.metrics.task_metrics import (
    TaskMetric,
    abort_metrics,
    health_metrics,
    verification_metrics,
)
from airflow_provider_eos.core.transactions.abort_report import AbortReport
from airflow_provider_eos.core.verification.report import VerificationReport

__all__ = ["emit", "emit_report"]

log = logging.getLogger(__name__)


def emit(metrics: Iterable[TaskMetric]) -> None:
    """Send each metric through Airflow's ``Stats``: a counter as ``incr``, a gauge as ``gauge``."""
    from airflow.providers.common.compat.sdk import Stats

    try:
        for metric in metrics:
            if metric.kind is MetricKind.COUNTER:
                Stats.incr(metric.name, count=int(metric.value))
            else:
                Stats.gauge(metric.name, metric.value)
    except Exception as exc:  # a metrics backend must never fail a health check or a recovery
        log.warning("EOS-METRICS could not emit the task's metrics through Airflow: %s", exc)


def emit_report(pipeline: str, report: Any) -> None:
    """Emit what a use case's report says, for the reports that have task metrics (others: nothing)."""
    if isinstance(report, HealthReport):
        emit(health_metrics(report))
    elif isinstance(report, VerificationReport):
        emit(verification_metrics(pipeline, report))
    elif isinstance(report, AbortReport):
        emit(abort_metrics(pipeline, report))
