"""The package's metrics: the catalog of names (:mod:`.catalog`) and what changes them (:mod:`.updates`)."""

from airflow_provider_eos.core.metrics.catalog import (
    JOB_METRICS,
    TASK_METRICS,
    MetricDefinition,
    MetricKind,
    job_metric,
    task_metric,
)

__all__ = ["JOB_METRICS", "TASK_METRICS", "MetricDefinition", "MetricKind", "job_metric", "task_metric"]
