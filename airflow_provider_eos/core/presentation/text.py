"""Results as a terminal and a task log show them: plain text with fixed-width tables.

One function per report, ``<report>_text(report)``: the summary lines, the tables
(:func:`~.table.render_table`) and what to do next. :func:`report_text` picks the function of
any report; :func:`result_text` is a use case's result as ``eos`` prints it and the task logs it
(its notes, then its report). With thousands of partitions ``max_rows`` keeps the worst rows and
counts the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, cast

from airflow_provider_eos.core.acls.report import AclSetReport
from airflow_provider_eos.core.health.report import HealthReport
from airflow_provider_eos.core.health.statuses import iso_utc
from airflow_provider_eos.core.preflight.report import PreflightReport
from airflow_provider_eos.core.preflight.rule import Status
from airflow_provider_eos.core.presentation.table import render_table
from airflow_provider_eos.core.repair.align import AlignPlan
from airflow_provider_eos.core.repair.rewind_execute import RewindResult
from airflow_provider_eos.core.repair.rewind_files import BACKUP_INFIX, MANIFEST_NAME
from airflow_provider_eos.core.repair.rewind_plan import RewindPlan
from airflow_provider_eos.core.transactions.abort_report import AbortReport
from airflow_provider_eos.core.transactions.admin_reports import format_age, partitions_text
from airflow_provider_eos.core.verification.report import VerificationReport

if TYPE_CHECKING:
    from collections.abc import Sequence

    from airflow_provider_eos.core.transactions.abort_plan import AbortRow

__all__ = [
    "abort_text",
    "acls_summary",
    "acls_text",
    "align_plan_text",
    "align_text",
    "health_text",
    "preflight_summary",
    "preflight_text",
    "report_text",
    "result_text",
    "rewind_plan_text",
    "rewind_text",
    "verification_text",
]


class ResultView(Protocol):
    """What :func:`result_text` reads of a use case's result.

    :class:`~airflow_provider_eos.usecases.result.UseCaseResult` has it; the core imports no use case.
    """

    @property
    def notes(self) -> Sequence[str]: ...

    @property
    def report(self) -> Any: ...


class AlignView(ResultView, Protocol):
    """What :func:`result_text` reads of an align result besides the plan (``usecases.align.AlignOutcome``)."""

    @property
    def group_id(self) -> str: ...

    @property
    def executed(self) -> bool: ...

    @property
    def after(self) -> VerificationReport: ...


def result_text(result: ResultView, *, max_rows: int | None = None) -> str:
    """A use case's result as ``eos`` prints it and the task logs it: the notes, then the report's text.

    :param max_rows: the most partitions a table shows, worst first, where the report has such a
        table (verification, align); ``None``: all.
    """
    if isinstance(result.report, AlignPlan):
        align = cast("AlignView", result)
        body = align_text(align.report, align.after, group_id=align.group_id, executed=align.executed,
                          max_rows=max_rows)
    else:
        body = report_text(result.report, max_rows=max_rows)
    return "\n".join([*(f"Note: {note}" for note in result.notes), body])


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


# -- abort ------------------------------------------------------------------------------------

_ABORT_HEADERS = ["kind", "transactional id", "state", "producer", "age", "partitions", "action", "outcome", "detail"]


def _abort_cells(row: AbortRow) -> list[object]:
    return [
        row.kind,
        row.transactional_id,
        row.state,
        f"{row.producer_id}/{row.producer_epoch}",
        format_age(row.age_ms),
        partitions_text(row.partitions),
        row.action,
        row.outcome,
        row.detail,
    ]


def abort_text(report: AbortReport) -> str:
    """The abort as readable text: what was found and done, then LSO vs high watermark."""
    lines = [_abort_headline(report), *_abort_safety_lines(report)]
    lines.extend(f"Note: {note}" for note in report.notes)
    lines.append("")
    lines.append(render_table(_ABORT_HEADERS, [_abort_cells(row) for row in report.rows]))
    if report.offsets_before or report.offsets_after:
        lines.append("")
        lines.append("Last stable offset vs high watermark (before -> after):")
        lines.append(_abort_offsets_table(report))
    lines.append("")
    if report.executed:
        if report.remaining:
            lines.append("Still open after acting:")
            lines.append(render_table(_ABORT_HEADERS, [_abort_cells(row) for row in report.remaining]))
        else:
            lines.append("Rescan: nothing under the prefix is open any more.")
    elif any(row.action.acts for row in report.rows):
        lines.append("Run with --execute (operators: dry_run=False) to abort the rows marked 'abort'.")
    return "\n".join(lines)


def _abort_headline(report: AbortReport) -> str:
    counts: dict[str, int] = {}
    for row in report.rows:
        counts[row.kind] = counts.get(row.kind, 0) + 1
    found = ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "nothing open"
    mode = "executed" if report.executed else "dry run: nothing changed"
    return f"Open transactions under prefix {report.prefix!r} at {report.scanned_at.isoformat()}: {found} ({mode})"


def _abort_safety_lines(report: AbortReport) -> list[str]:
    safety = report.safety
    if not safety.reasons:
        return []
    if safety.driver_gone:
        head = f"The driver is positively gone ({safety.driver_gone}); these signs were the dead job's:"
    elif safety.forced:
        head = "Forced despite signs that the job is alive:"
    elif report.executed:
        head = "The job looks alive (nothing needed aborting, so nothing was refused):"
    else:
        head = "The job looks alive (executing would be refused without --force):"
    return [head, *(f"  - {reason}" for reason in safety.reasons)]


def _abort_offsets_table(report: AbortReport) -> str:
    after = {o.tp: o for o in report.offsets_after}
    return render_table(
        ["partition", "LSO before", "HWM before", "LSO after", "HWM after", "pinned after"],
        [
            [
                str(o.tp),
                o.lso,
                o.hwm,
                after[o.tp].lso if o.tp in after else None,
                after[o.tp].hwm if o.tp in after else None,
                after[o.tp].pinned if o.tp in after else None,
            ]
            for o in report.offsets_before
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


# -- align ------------------------------------------------------------------------------------


def align_plan_text(plan: AlignPlan, *, max_rows: int | None = None) -> str:
    """The align plan's before/after table, changed partitions first.

    :param max_rows: show at most this many rows (``None``: all).
    """
    head = (
        f"Align the sink group to checkpoint batch {plan.batch_id} of query {plan.query_id} "
        f"(verdict {plan.verdict.value}): "
        + ("nothing to do" if plan.is_noop else f"{len(plan.changes)} of {len(plan.rows)} partition(s) change")
    )
    ordered = sorted(plan.rows, key=lambda row: (not row.changed, row.tp))
    shown = ordered if max_rows is None else ordered[:max_rows]
    lines = [head]
    lines.extend(f"Warning: {warning}" for warning in plan.warnings)
    lines.append("")
    lines.append(
        render_table(
            ["partition", "before offset", "before metadata", "after offset", "after metadata", "change"],
            [
                [
                    str(row.tp),
                    row.before_offset,
                    # An empty metadata string is a finding (offset without marker): show it.
                    '""' if row.before_metadata == "" else row.before_metadata,
                    row.after_offset,
                    row.after_metadata,
                    row.changed,
                ]
                for row in shown
            ],
        )
    )
    if len(shown) < len(ordered):
        lines.append(f"... {len(ordered) - len(shown)} more partition(s) not shown")
    if plan.untouched:
        lines.append(
            f"Not in offsets/{plan.batch_id}, left as they are: {', '.join(str(tp) for tp in plan.untouched)}"
        )
    return "\n".join(lines)


def align_text(
    plan: AlignPlan, after: VerificationReport, *, group_id: str, executed: bool, max_rows: int | None = None
) -> str:
    """What an align did (or would do), the before/after table, and the verification read back from Kafka."""
    if executed:
        head = f"Committed {len(plan.rows)} offset(s) with the marker of batch {plan.batch_id} to group " \
               f"{group_id!r}."
        then = "Committed. Verification afterwards (read back from Kafka):"
    elif plan.is_noop:
        head = "Nothing to do: the group already holds the checkpoint's offsets and marker."
        then = "Verification (read back from Kafka):"
    else:
        head = (
            "Dry run: nothing committed. Execute to commit the 'after' column (eos repair align --execute; "
            "in Airflow dry_run=False).\n"
            f"Plan fingerprint: {plan.fingerprint} (execute exactly this plan: --execute --expect-plan "
            f"{plan.fingerprint})"
        )
        then = "Verification of the group as it is (read back from Kafka):"
    return "\n".join(
        [head, "", align_plan_text(plan, max_rows=max_rows), "", then, verification_text(after, max_rows=max_rows)]
    )


# -- rewind -----------------------------------------------------------------------------------


def rewind_plan_text(plan: RewindPlan, *, max_files: int | None = 50, title: str | None = None) -> str:
    """The rewind plan's before/after table and the files to move.

    :param max_files: list at most this many files (``None``: all).
    :param title: the first line (default: says this is a plan and nothing changed yet).
    """
    if title is None:
        title = f"Rewind checkpoint {plan.location or plan.root} to batch {plan.to_batch}" + (
            ": nothing to do" if plan.is_noop else " (plan; nothing changed yet)"
        )
    lines = [title, "", _batches_table(plan)]
    lines.extend(f"Warning: {warning}" for warning in plan.warnings)
    if plan.moves:

        def count(*kinds: str) -> int:
            return sum(1 for move in plan.moves if move.kind in kinds)

        lines.append("")
        lines.append(
            f"Moves {len(plan.moves)} file(s), sidecars included: {count('offsets')} in offsets/, "
            f"{count('commits')} in commits/, "
            f"{count('state', 'operator-metadata')} in state/, "
            f"into {plan.location or plan.root}{BACKUP_INFIX}<UTC timestamp>/ (relative paths kept):"
        )
        # Show the log files first: they say which batches go; state files are many and follow.
        display = sorted(plan.moves, key=lambda m: (m.kind not in ("offsets", "commits"), m.number, m.path))
        shown = display if max_files is None else display[:max_files]
        lines.extend(f"  {move.path}" for move in shown)
        if len(shown) < len(plan.moves):
            lines.append(f"  ... {len(plan.moves) - len(shown)} more")
    return "\n".join(lines)


def _batches_table(plan: RewindPlan) -> str:
    return render_table(
        ["", "before", "after"],
        [
            ["last committed batch", plan.last_committed_before, plan.last_committed_after],
            ["last planned batch", plan.last_planned_before, plan.last_planned_after],
            [
                "offsets/ batches",
                _span(plan.oldest_planned, plan.last_planned_before),
                _span(plan.oldest_planned, plan.last_planned_after),
            ],
            [
                "commits/ batches",
                _span(plan.oldest_committed, plan.last_committed_before),
                _span(plan.oldest_committed, plan.last_committed_after),
            ],
        ],
    )


def _span(first: int | None, last: int | None) -> str | None:
    """``first..last`` of a retained batch range, ``None`` when the range is empty."""
    if first is None or last is None or last < first:
        return None
    return str(first) if first == last else f"{first}..{last}"


def rewind_text(result: RewindResult, *, max_files: int | None = 50) -> str:
    """A rewind's (or a dry run's) before/after table and where the files went."""
    plan = result.plan
    if result.executed:
        head = (
            f"Rewound checkpoint {plan.root} to batch {plan.to_batch}: moved "
            f"{len(result.moved)} file(s) to {result.backup_dir}"
        )
    elif plan.is_noop:
        head = f"Checkpoint {plan.root} already ends at batch {plan.to_batch}: nothing moved"
    else:
        head = (
            "Dry run: nothing moved. Execute to apply the plan below.\n"
            f"Plan fingerprint: {plan.fingerprint} (execute exactly this plan: --execute --expect-plan "
            f"{plan.fingerprint})"
        )
    body = rewind_plan_text(plan, max_files=max_files, title="Before and after:")
    tail = (
        [
            "",
            f"To undo: stop the query and move the files back from {result.backup_dir} "
            f"(the manifest {MANIFEST_NAME} there lists them).",
        ]
        if result.executed
        else []
    )
    return "\n".join([head, "", body, *tail])


def report_text(report: object, *, max_rows: int | None = None) -> str:
    """Any report as text: the function of its type above.

    :param max_rows: passed to the reports whose tables are cut (verification, align plan); the
        others show every row.
    :raises TypeError: for an object that is no report.
    """
    if isinstance(report, VerificationReport):
        return verification_text(report, max_rows=max_rows)
    if isinstance(report, AlignPlan):
        return align_plan_text(report, max_rows=max_rows)
    if isinstance(report, HealthReport):
        return health_text(report)
    if isinstance(report, AbortReport):
        return abort_text(report)
    if isinstance(report, PreflightReport):
        return preflight_text(report)
    if isinstance(report, AclSetReport):
        return acls_text(report)
    if isinstance(report, RewindPlan):
        return rewind_plan_text(report)
    if isinstance(report, RewindResult):
        return rewind_text(report)
    raise TypeError(f"no text form for {type(report).__name__}")
