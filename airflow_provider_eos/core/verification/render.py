"""The text form of a verification report: a summary, the partition table worst first, the next step.

It is what ``eos verify`` prints and what the recovery operators log; with thousands of
partitions ``max_rows`` keeps the worst rows and counts the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.report_table import render_table

if TYPE_CHECKING:
    from airflow_provider_eos.core.verification.report import VerificationReport

__all__ = ["render_report"]

_TABLE_HEADERS = [
    "partition",
    "verdict",
    "ckpt batch",
    "ckpt offset",
    "group offset",
    "marker batch",
    "wal@marker",
    "marker query",
    "detail",
]


def render_report(report: VerificationReport, *, max_rows: int | None = None) -> str:
    """Render ``report`` as readable text (see :meth:`VerificationReport.render`).

    :param report: the report.
    :param max_rows: show at most this many rows, worst first (``None``: all rows,
        worst first). Hidden rows are counted in a final line.
    """
    counts = ", ".join(f"{verdict.value} {n}" for verdict, n in report.counts.items() if n)
    lines = [
        f"Verification: {report.overall.value} "
        f"(query {report.query_id or '-'}, last committed batch "
        f"{'-' if report.last_committed is None else report.last_committed}, last planned batch "
        f"{'-' if report.last_planned is None else report.last_planned})",
        f"Writers: {report.writers.summary}",
        f"Partitions: {len(report.rows)}" + (f" ({counts})" if counts else ""),
    ]
    lines.extend(f"Issue: {issue}" for issue in report.issues)
    ordered = sorted(report.rows, key=lambda row: (-row.verdict.severity, row.tp))
    shown = ordered if max_rows is None else ordered[:max_rows]
    lines.append("")
    lines.append(
        render_table(
            _TABLE_HEADERS,
            [
                [
                    str(row.tp),
                    row.verdict,
                    row.checkpoint_batch,
                    row.checkpoint_offset,
                    row.group_offset,
                    row.marker_batch,
                    row.wal_offset,
                    row.marker_query_id,
                    row.detail,
                ]
                for row in shown
            ],
        )
    )
    if len(shown) < len(ordered):
        lines.append(f"... {len(ordered) - len(shown)} more partition(s) not shown")
    lines.append("")
    lines.append(f"Next step: {report.next_step}")
    return "\n".join(lines)
