"""The text form of a :class:`~airflow_provider_eos.core.health.report.HealthReport`.

It ends up in task logs and terminals: a summary line, the findings that are not healthy,
and the tables (input lag, LSO vs HWM, open transactions).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.health.base import iso_utc
from airflow_provider_eos.core.report_table import render_table
from airflow_provider_eos.core.transactions import format_age

if TYPE_CHECKING:
    from airflow_provider_eos.core.health.report import HealthReport

__all__ = ["render_report"]


def render_report(report: HealthReport) -> str:
    """The report as readable text: a summary, the findings and the tables."""
    lines = [*_summary(report), ""]
    lines.extend(_findings(report))
    lines.append("")
    lines.append("Input lag (rules OK/WARN/STALL/STOP/REWIND over the window):")
    lines.append(_lag_table(report))
    lines.append("")
    lines.append("Last stable offset vs high watermark:")
    lines.append(_gap_table(report))
    if report.transactions:
        lines.append("")
        lines.append("Open transactions under the prefix:")
        lines.append(_transaction_table(report))
    verification = report.verification
    if verification is not None and verification.next_step and verification.ok is False:
        lines.append("")
        lines.append(f"Verification next step: {verification.next_step}")
    return "\n".join(lines)


def _summary(report: HealthReport) -> list[str]:
    commit = (
        "no batch committed yet"
        if report.last_committed is None
        else f"last committed batch {report.last_committed} at {iso_utc(report.last_commit_time_ms)} "
        f"({format_age(report.commit_age_ms)} ago)"
    )
    verdict = "-" if report.verification is None else (report.verification.verdict or "not settled")
    lines = [
        f"Health of pipeline {report.pipeline!r}: {report.status.value} at {iso_utc(report.evaluated_at_ms)} "
        f"({report.samples} sample(s) over {format_age(report.window_span_ms)})",
        f"Checkpoint: {commit if report.checkpoint_exists else 'none yet'}; verification: {verdict}; "
        f"input lag {report.total_lag}",
        f"Writers: {'not read' if report.writers is None else report.writers.summary}",
    ]
    lines.extend(f"Note: {note}" for note in report.notes)
    return lines


def _findings(report: HealthReport) -> list[str]:
    problems = report.problems
    if not problems:
        return ["Findings: none; every signal is healthy."]
    return ["Findings:", *(f"  - {f.status.value} [{f.signal}] {f.subject}: {f.detail}" for f in problems)]


def _lag_table(report: HealthReport) -> str:
    return render_table(
        ["partition", "status", "committed", "marker", "LSO", "lag", "lag at start", "samples", "commits", "detail"],
        [
            [str(r.tp), r.status, r.committed, r.marker_batch, r.lso, r.lag, r.first_lag, r.samples, r.commits,
             r.detail]
            for r in report.partitions
        ],
    )


def _gap_table(report: HealthReport) -> str:
    return render_table(
        ["partition", "role", "LSO", "HWM", "gap", "state", "pinned for"],
        [
            [str(g.tp), g.role, g.lso, g.hwm, g.gap, g.state, format_age(g.pinned_for_ms or None)]
            for g in report.gaps
        ],
    )


def _transaction_table(report: HealthReport) -> str:
    return render_table(
        ["transactional id", "state", "age", "lingering after", "lingering", "partitions"],
        [
            [t.transactional_id, t.state, format_age(t.age_ms), format_age(t.limit_ms), t.lingering,
             ", ".join(str(tp) for tp in t.partitions) or None]
            for t in report.transactions
        ],
    )
