"""The text of the recovery actions' reports: abort, align and rewind (plans and results).

Part of :mod:`.text` (its conventions hold): one function per report, fixed-width tables drawn
by :func:`~.table.render_table`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.presentation.table import render_table
from airflow_provider_eos.core.repair.align import AlignPlan
from airflow_provider_eos.core.repair.rewind_execute import RewindResult
from airflow_provider_eos.core.repair.rewind_files import BACKUP_INFIX, MANIFEST_NAME
from airflow_provider_eos.core.repair.rewind_plan import RewindPlan
from airflow_provider_eos.core.transactions.abort_report import AbortReport
from airflow_provider_eos.core.transactions.admin_reports import format_age, partitions_text
from airflow_provider_eos.core.verification.report import VerificationReport

if TYPE_CHECKING:

    from airflow_provider_eos.core.transactions.abort_plan import AbortRow
from airflow_provider_eos.core.presentation.text_checks import verification_text

__all__ = [
    "abort_text",
    "align_plan_text",
    "align_text",
    "rewind_plan_text",
    "rewind_text",
]


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


