"""Turn a window of samples into a :class:`~airflow_provider_eos.core.health.report.HealthReport`."""

from __future__ import annotations

from collections.abc import Sequence

from airflow_provider_eos.core.health.commit_age import commit_age_finding
from airflow_provider_eos.core.health.findings import (
    Finding,
    hanging_findings,
    open_transactions,
    partition_gaps,
    unread_max_timeout_note,
    verification_finding,
)
from airflow_provider_eos.core.health.lag_rules import partition_lags
from airflow_provider_eos.core.health.report import HealthReport
from airflow_provider_eos.core.health.samples import HealthSample
from airflow_provider_eos.core.health.statuses import HealthError, worst
from airflow_provider_eos.core.health.thresholds import HealthThresholds
from airflow_provider_eos.core.health.window import LagWindow

__all__ = ["evaluate"]


def evaluate(
    window: LagWindow | Sequence[HealthSample],
    thresholds: HealthThresholds,
    *,
    pipeline: str,
    transactional_id_prefix: str,
) -> HealthReport:
    """Evaluate every signal over the window: lag (:mod:`.lag_rules`), then the others (:mod:`.findings`).

    :param window: the samples, oldest first.
    :param thresholds: the limits (usually :meth:`HealthThresholds.from_spec`).
    :param pipeline: the pipeline's name, for the report.
    :param transactional_id_prefix: transactions outside it are ignored.
    :raises HealthError: if the window is empty.
    """
    samples = window.samples if isinstance(window, LagWindow) else tuple(window)
    if not samples:
        raise HealthError("cannot evaluate health without a sample", fix="take at least one sample first")
    latest = samples[-1]
    span = latest.taken_at_ms - samples[0].taken_at_ms

    partitions = partition_lags(samples, thresholds)
    gaps = partition_gaps(samples, thresholds)
    transactions, lingering = open_transactions(latest, transactional_id_prefix, thresholds)
    findings = [
        *(Finding(signal="lag", status=row.status.health, subject=str(row.tp),
                  detail=f"{row.status.value}: {row.detail}") for row in partitions),
        commit_age_finding(samples, thresholds),
        *hanging_findings(gaps, thresholds, transaction_max_timeout_ms=latest.transaction_max_timeout_ms),
        *lingering,
        verification_finding(latest),
    ]
    unread = unread_max_timeout_note(gaps, thresholds, latest, pipeline=pipeline)
    # Worst first; the sort is stable, so findings of one status keep the order of the signals.
    findings.sort(key=lambda f: -f.status.severity)
    return HealthReport(
        pipeline=pipeline,
        status=worst(f.status for f in findings),
        evaluated_at_ms=latest.taken_at_ms,
        samples=len(samples),
        window_span_ms=span,
        thresholds=thresholds,
        checkpoint_exists=latest.checkpoint_exists,
        query_id=latest.query_id,
        last_committed=latest.last_committed,
        last_commit_time_ms=latest.last_commit_time_ms,
        partitions=partitions,
        gaps=gaps,
        transactions=transactions,
        verification=latest.verification,
        findings=tuple(findings),
        notes=(*latest.notes, unread) if unread else latest.notes,
        writers=latest.writers,
        broker_protocol=latest.broker_protocol,
    )
