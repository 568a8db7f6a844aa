"""What the health check and the recovery tasks emit through Airflow's metrics layer (:data:`~.catalog.TASK_METRICS`).

Pure: each function reads a core report and returns the :class:`TaskMetric`\\ s to emit; the
operators, the sensor and the trigger hand them to Airflow's ``Stats``
(:mod:`airflow_provider_eos.airflow_stats`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from airflow_provider_eos.core.health.report import HealthReport
from airflow_provider_eos.core.metrics.catalog import MetricKind, task_metric
from airflow_provider_eos.core.transactions.abort_plan import Outcome
from airflow_provider_eos.core.transactions.abort_report import AbortReport
from airflow_provider_eos.core.verification.report import VerificationReport
from airflow_provider_eos.core.verification.verdict import Verdict

__all__ = ["PART_MAX_LENGTH", "TaskMetric", "abort_metrics", "health_metrics", "name_part", "verification_metrics"]

# StatsD splits a name at dots, and Airflow's name check allows only these characters.
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
#: The longest a name's part may be. Airflow drops (logs and does not send) a StatsD name over 250 characters and an
#: OpenTelemetry one whose prefix, a dot and the name exceed 255; a Kafka topic may have 249. With every part at
#: most this long (a pipeline's name has at most 64), every name stays under 200, leaving room for the prefix.
PART_MAX_LENGTH = 100
_DIGEST_LENGTH = 8


@dataclass(frozen=True)
class TaskMetric:
    """One value to emit: the name (Airflow's prefix is added by Airflow), its kind and value."""

    name: str
    kind: MetricKind
    value: float


def name_part(value: object) -> str:
    """``value`` as one part of a metric's name: one StatsD level of the characters Airflow allows, and short.

    A ``.`` (a topic's) becomes ``_``: within one cluster Kafka refuses a topic whose name differs from an
    existing one's only by ``.`` against ``_``, and a pipeline's name has neither ``.`` nor other characters to
    replace, so no two of a pipeline's parts become one. A part longer than :data:`PART_MAX_LENGTH` keeps its
    beginning and ends in ``-`` and a digest of the whole value, so it stays apart from every other.
    """
    text = str(value)
    part = _UNSAFE.sub("_", text)
    if len(part) <= PART_MAX_LENGTH:
        return part
    digest = hashlib.sha256(text.encode()).hexdigest()[:_DIGEST_LENGTH]
    return f"{part[:PART_MAX_LENGTH - _DIGEST_LENGTH - 1]}-{digest}"


def _metric(template: str, value: float, **parts: object) -> TaskMetric:
    definition = task_metric(template)
    name = template.format(**{key: name_part(part) for key, part in parts.items()})
    return TaskMetric(name, definition.kind, float(value))


def health_metrics(report: HealthReport) -> list[TaskMetric]:
    """The health check's findings: status, verdict, lag (total and per partition), commit age, transactions."""
    p = report.pipeline
    found = [
        _metric("eos.health.{pipeline}.status", report.status.severity, pipeline=p),
        _metric("eos.health.{pipeline}.lag", report.total_lag, pipeline=p),
        _metric("eos.health.{pipeline}.open_transactions", len(report.transactions), pipeline=p),
        _metric("eos.health.{pipeline}.lingering_transactions", sum(t.lingering for t in report.transactions),
                pipeline=p),
    ]
    found += [_metric("eos.health.{pipeline}.{topic}.{partition}.lag", row.lag, pipeline=p, topic=row.tp.topic,
                      partition=row.tp.partition) for row in report.partitions]
    if report.commit_age_ms is not None:
        found.append(_metric("eos.health.{pipeline}.commit_age_seconds", report.commit_age_ms / 1000, pipeline=p))
    verdict = report.verification.verdict if report.verification else None
    if verdict in Verdict.__members__.values():
        found.append(_metric("eos.health.{pipeline}.verdict", Verdict(verdict).severity, pipeline=p))
    return found


def verification_metrics(pipeline: str, report: VerificationReport) -> list[TaskMetric]:
    """The recovery's verification verdict."""
    return [_metric("eos.recovery.{pipeline}.verdict", report.overall.severity, pipeline=pipeline)]


def abort_metrics(pipeline: str, report: AbortReport) -> list[TaskMetric]:
    """What the recovery's abort found, did, and left open."""
    return [
        _metric("eos.recovery.{pipeline}.open_transactions", len(report.rows), pipeline=pipeline),
        _metric("eos.recovery.{pipeline}.hanging_transactions", sum(row.kind == "hanging" for row in report.rows),
                pipeline=pipeline),
        _metric("eos.recovery.{pipeline}.transactions_aborted",
                sum(row.outcome is Outcome.ABORTED for row in report.rows), pipeline=pipeline),
        _metric("eos.recovery.{pipeline}.remaining_transactions", sum(row.action.acts for row in report.remaining),
                pipeline=pipeline),
    ]
