"""The card of a health report: the status, the findings worst first, and the partitions that matter.

The full report (every partition, every gap) stays in the task's XCom and the log; the card shows
what a person acts on: which signal is not healthy and why, the input partitions by lag status
(worst first), the partitions whose last stable offset is pinned, and the open transactions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.health.base import LagStatus, iso_utc
from airflow_provider_eos.core.presentation.markdown import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_ROWS,
    Card,
    ResultHeading,
    clip,
    fit,
    md_table,
    more_rows,
)
from airflow_provider_eos.core.transactions.model import format_age

if TYPE_CHECKING:
    from airflow_provider_eos.core.health import HealthReport

__all__ = ["health_card"]

_LAG_ORDER = {status: rank for rank, status in enumerate(LagStatus)}


def _facts(report: HealthReport) -> list[str]:
    if report.last_committed is None:
        commit = "no batch committed yet" if report.checkpoint_exists else "no checkpoint yet"
    else:
        commit = f"last committed batch {report.last_committed} ({format_age(report.commit_age_ms)} ago)"
    verdict = "-" if report.verification is None else (report.verification.verdict or "not settled")
    return [
        f"{report.status.value} at {iso_utc(report.evaluated_at_ms)}, {report.samples} sample(s) over "
        f"{format_age(report.window_span_ms)}. Checkpoint: {commit}; verification: {verdict}; "
        f"input lag {report.total_lag}.",
        *(f"- Note: {clip(note, 200)}" for note in report.notes),
    ]


def health_card(
    heading: ResultHeading, report: HealthReport, *, max_rows: int = DEFAULT_MAX_ROWS,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """The health report for a person: findings, lag by partition (worst first), pinned partitions, transactions."""
    problems = report.problems
    lags = sorted(report.partitions, key=lambda r: (-_LAG_ORDER[r.status], -r.lag, r.tp))
    pinned = sorted((g for g in report.gaps if g.state != "ok"), key=lambda g: (g.state != "hanging", -g.gap, g.tp))

    def render(rows: int) -> str:
        card = Card(heading).add(*_facts(report))
        if problems:
            shown = problems[:rows]
            card.add("Findings, worst first:",
                     *(f"- {f.status.value} [{f.signal}] {clip(f.subject, 60)}: {clip(f.detail, 240)}" for f in shown),
                     more_rows(len(shown), len(problems), "finding(s)"))
        else:
            card.add("Findings: none; every signal is healthy.")
        shown_lags = lags[:rows]
        card.add(
            md_table(["partition", "lag status", "committed", "marker", "lag", "lag at start", "commits"],
                     [[str(r.tp), r.status.value, r.committed, r.marker_batch, r.lag, r.first_lag, r.commits]
                      for r in shown_lags]),
            more_rows(len(shown_lags), len(lags)),
        )
        if pinned:
            shown_gaps = pinned[:rows]
            card.add(
                "Last stable offset below the high watermark:",
                "",
                md_table(["partition", "role", "LSO", "HWM", "gap", "state", "pinned for"],
                         [[str(g.tp), g.role, g.lso, g.hwm, g.gap, g.state, format_age(g.pinned_for_ms or None)]
                          for g in shown_gaps]),
                more_rows(len(shown_gaps), len(pinned)),
            )
        if report.transactions:
            shown_txns = report.transactions[:rows]
            card.add(
                "Open transactions under the prefix:",
                "",
                md_table(["transactional id", "state", "age", "lingering", "partitions"],
                         [[t.transactional_id, t.state, format_age(t.age_ms), t.lingering, len(t.partitions)]
                          for t in shown_txns]),
                more_rows(len(shown_txns), len(report.transactions), "transaction(s)"),
            )
        return card.text()

    return fit(render, max_rows, max_chars)
