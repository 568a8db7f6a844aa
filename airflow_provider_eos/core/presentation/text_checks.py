"""The text of the reports that check a pipeline: verification, health, pre-flight and ACLs.

Part of :mod:`.text` (its conventions hold): one function per report, fixed-width tables drawn
by :func:`~.table.render_table`, ``max_rows`` keeping the worst rows where a table can be long.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.acls.report import AclSetReport
from airflow_provider_eos.core.health.report import HealthReport
from airflow_provider_eos.core.health.statuses import iso_utc
from airflow_provider_eos.core.preflight.report import PreflightReport
from airflow_provider_eos.core.preflight.rule import Status
from airflow_provider_eos.core.presentation.table import render_table
from airflow_provider_eos.core.transactions.admin_reports import format_age
from airflow_provider_eos.core.verification.report import VerificationReport

if TYPE_CHECKING:

    pass

__all__ = [
    "acls_summary",
    "acls_text",
    "health_text",
    "preflight_summary",
    "preflight_text",
    "verification_text",
]


# -- verification -----------------------------------------------------------------------------

_VERIFICATION_HEADERS = [
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


def verification_text(report: VerificationReport, *, max_rows: int | None = None) -> str:
    """The verification as readable text: a summary, the partition table worst first, the next step.

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
            _VERIFICATION_HEADERS,
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


# -- health -----------------------------------------------------------------------------------


def health_text(report: HealthReport) -> str:
    """The report as readable text: a summary, the findings and the tables."""
    lines = [*_health_summary(report), ""]
    lines.extend(_health_findings(report))
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


def _health_summary(report: HealthReport) -> list[str]:
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
        f"Kafka: {'not read' if report.broker_protocol is None else report.broker_protocol.describe()}",
    ]
    lines.extend(f"Note: {note}" for note in report.notes)
    return lines


def _health_findings(report: HealthReport) -> list[str]:
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


# -- pre-flight -------------------------------------------------------------------------------


def preflight_summary(report: PreflightReport) -> str:
    """One line: the verdict and the counts."""
    verdict = "PASSED" if report.ok else "FAILED"
    passed = sum(1 for f in report.findings if f.status is Status.PASS)
    return (
        f"Pre-flight of pipeline {report.pipeline!r}: {verdict} - {len(report.errors)} error(s), "
        f"{len(report.warnings)} warning(s), {len(report.infos)} info, {len(report.not_checked)} not checked, "
        f"{passed} passed"
    )


def preflight_text(report: PreflightReport) -> str:
    """The summary, a table of every rule, then the fix of each failed rule."""
    table = render_table(
        ["code", "severity", "result", "check", "details"],
        [[f.code, f.severity, f.result, f.title, f.message] for f in report.findings],
    )
    lines = [preflight_summary(report), "", table]
    failed = [f for f in report.findings if f.status is Status.FAIL and f.fix]
    if failed:
        lines += ["", "Fixes:"]
        lines += [f"  {f.code} ({f.result}): {f.fix}" for f in failed]
    return "\n".join(lines)


# -- ACLs -------------------------------------------------------------------------------------


def acls_summary(report: AclSetReport) -> str:
    """One line: the set and, after an apply, what it changed."""
    head = f"{len(report.acls)} ACL(s) for {report.principal} as {report.role} of pipeline {report.pipeline!r}"
    if not report.applied:
        return head + " (printed only; --apply --admin-config FILE creates them)"
    return head + f": applied, {len(report.created)} created, {len(report.already_present)} already present"


def acls_text(report: AclSetReport) -> str:
    """The summary, the table (resource type, pattern, name, operation, why), the cautions, then the warnings."""
    created = {acl.binding for acl in report.created}
    headers = ["resource type", "pattern", "name", "operation", "why"]
    rows: list[list[object]] = []
    for acl in report.acls:
        row: list[object] = [acl.resource_type, acl.pattern, acl.name, acl.operation, acl.why]
        if report.applied:
            row.insert(4, "created" if acl.binding in created else "present")
        rows.append(row)
    if report.applied:
        headers.insert(4, "apply")
    lines = [acls_summary(report), "", render_table(headers, rows)]
    cautions = [acl for acl in report.acls if acl.caution]
    if cautions:
        lines += ["", "Caution:"]
        lines += [f"  {acl.resource_type.value} {acl.name} {acl.operation.value}: {acl.caution}"
                  for acl in cautions]
    lines.append("")
    lines += [f"Warning: {warning}" for warning in report.warnings]
    if report.others_checked is None:
        lines.append("The other pipelines were not checked (no --specs-dir or $EOS_SPECS_DIR): a transactional "
                     "id pattern may cover another pipeline's ids.")
    elif not report.warnings:
        lines.append(f"No ACL of the set covers the transactional ids of the {report.others_checked} other "
                     "pipeline(s) in the specs folder.")
    return "\n".join(lines)


