"""Results as a person reads them in Airflow's UI: one bounded Markdown card per result.

Each card is the heading (:class:`~.markdown.ResultHeading`: outcome, summary, next step) and
the table a person needs, worst rows first and bounded (:func:`~.markdown.fit`):

- verify: partition, checkpoint offset, group offset, marker, verdict;
- abort: the open transactions and what was (or would be) done with each;
- rewind: the checkpoint's batches before and after, and the files that move;
- align: the group's offset and marker before and after, then the verdict read back;
- health: the findings worst first, input lag by partition (worst first), the partitions whose
  last stable offset is pinned, and the open transactions; the full report (every partition,
  every gap) stays in the task's XCom and the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_provider_eos.core.errors import EosError, MarkerError
from airflow_provider_eos.core.health.statuses import LagStatus, iso_utc
from airflow_provider_eos.core.markers import BatchMarker
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
from airflow_provider_eos.core.transactions.admin_reports import format_age

if TYPE_CHECKING:
    from airflow_provider_eos.core.health import HealthReport
    from airflow_provider_eos.core.repair import AlignPlan, RewindResult
    from airflow_provider_eos.core.transactions import AbortReport
    from airflow_provider_eos.core.verification import VerificationReport

__all__ = [
    "abort_card",
    "align_card",
    "error_card",
    "health_card",
    "refusal_card",
    "rewind_card",
    "text_card",
    "verification_card",
    "verification_table",
]


def _marker_cell(batch: int | None, query_id: str | None, own_query: str | None) -> int | str | None:
    if batch is None:
        return None
    if own_query and query_id and query_id != own_query:
        return f"{batch} (query {clip(query_id, 12)})"
    return batch


def verification_table(report: VerificationReport, max_rows: int) -> list[str]:
    """The verdict table, worst partition first, with a line counting the rows left out."""
    ordered = sorted(report.rows, key=lambda row: (-row.verdict.severity, row.tp))
    shown = ordered[:max_rows]
    table = md_table(
        ["partition", "ckpt offset", "group offset", "marker", "verdict"],
        [
            [str(row.tp), row.checkpoint_offset, row.group_offset,
             _marker_cell(row.marker_batch, row.marker_query_id, report.query_id), row.verdict.value]
            for row in shown
        ],
    )
    return [table, more_rows(len(shown), len(ordered))]


def _verification_facts(report: VerificationReport) -> list[str]:
    counts = ", ".join(f"{verdict.value} {n}" for verdict, n in report.counts.items() if n) or "no partitions"
    committed = "-" if report.last_committed is None else report.last_committed
    lines = [
        f"Verdicts: {counts} of {len(report.rows)} partition(s). Checkpoint: last committed batch {committed}; "
        f"'ckpt offset' is offsets/{committed}, 'marker' the batch the group's commit names.",
    ]
    lines.extend(f"- Issue: {clip(issue, 300)}" for issue in report.issues)
    worst = sorted(report.rows, key=lambda row: (-row.verdict.severity, row.tp))
    if worst and not worst[0].verdict.ok:
        lines.append(f"- Why {worst[0].tp} is {worst[0].verdict.value}: {clip(worst[0].detail, 300)}")
    return lines


def verification_card(
    heading: ResultHeading,
    report: VerificationReport,
    *,
    max_rows: int = DEFAULT_MAX_ROWS,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """The verification: verdict counts, the worst row's reason, and the verdict table."""

    def render(rows: int) -> str:
        return Card(heading).add(*_verification_facts(report)).add(*verification_table(report, rows)).text()

    return fit(render, max_rows, max_chars)


def abort_card(
    heading: ResultHeading, report: AbortReport, *, max_rows: int = DEFAULT_MAX_ROWS,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """The open transactions under the prefix and what was (or would be) done with each."""
    # Rows that change Kafka first, then the ones left, then by id.
    ordered = sorted(report.rows, key=lambda row: (not row.action.acts, row.transactional_id or ""))
    pinned_before = sum(1 for o in report.offsets_before if o.pinned)
    pinned_after = sum(1 for o in report.offsets_after if o.pinned)
    facts = [f"Open under prefix `{report.prefix}`: {len(report.rows)} transaction(s); "
             f"partitions with LSO < HWM: {pinned_before} before, {pinned_after} after."]
    if report.safety.reasons:
        facts.append("Signs that the job is alive" + (" (forced)" if report.safety.forced else "") + ":")
        facts.extend(f"- {clip(reason, 200)}" for reason in report.safety.reasons)
    facts.extend(f"- Note: {clip(note, 200)}" for note in report.notes)
    still_open = [row for row in report.remaining if row.action.acts] if report.executed else []

    def render(rows: int) -> str:
        shown = ordered[:rows]
        table = md_table(
            ["transactional id", "kind", "age", "partitions", "action", "outcome"],
            [[row.transactional_id or "(unattributed)", row.kind, format_age(row.age_ms), len(row.partitions),
              row.action.value, row.outcome.value if row.outcome else None] for row in shown],
        )
        card = Card(heading).add(*facts).add(table, more_rows(len(shown), len(ordered), "transaction(s)"))
        if still_open:
            card.add(f"Still open after acting: {', '.join(clip(r.transactional_id or '?', 40) for r in still_open)}")
        return card.text()

    return fit(render, max_rows, max_chars)


def rewind_card(
    heading: ResultHeading, result: RewindResult, *, max_rows: int = 10, max_chars: int = DEFAULT_MAX_CHARS
) -> str:
    """The checkpoint's batches before and after, and the files that move (or moved)."""
    plan = result.plan
    batches = md_table(
        ["", "before", "after"],
        [
            ["last committed batch", plan.last_committed_before, plan.last_committed_after],
            ["last planned batch", plan.last_planned_before, plan.last_planned_after],
        ],
    )
    kinds: dict[str, int] = {}
    for move in plan.moves:
        kinds[move.kind] = kinds.get(move.kind, 0) + 1
    moves = ", ".join(f"{n} in {kind}/" for kind, n in kinds.items()) or "none"
    verb = "Moved" if result.executed else "Would move"
    display = sorted(plan.moves, key=lambda m: (m.kind not in ("offsets", "commits"), m.number, m.path))

    def render(rows: int) -> str:
        card = Card(heading).add(f"Rewind checkpoint `{plan.location or plan.root}` to batch {plan.to_batch}. "
                                 f"Plan fingerprint: `{plan.fingerprint}`", "", batches)
        card.add(*(f"- Warning: {clip(w, 300)}" for w in plan.warnings))
        files = [f"- `{move.path}`" for move in display[:rows]]
        card.add(f"{verb} {len(plan.moves)} file(s) ({moves}):", *files,
                 more_rows(min(rows, len(display)), len(display), "file(s)"))
        if result.executed and result.backup_dir:
            card.add(f"Backup folder: `{result.backup_dir}` (to undo: stop the query, move the files back).")
        return card.text()

    return fit(render, max_rows, max_chars)


def _marker_text(metadata: str | None) -> str | None:
    if metadata is None:
        return None
    if metadata == "":
        return '"" (no marker)'
    try:
        return f"batch {BatchMarker.decode(metadata).batch_id}"
    except MarkerError:
        return clip(metadata, 24)


def align_card(
    heading: ResultHeading,
    plan: AlignPlan,
    after: VerificationReport,
    *,
    executed: bool,
    max_rows: int = DEFAULT_MAX_ROWS,
    max_chars: int = DEFAULT_MAX_CHARS,
) -> str:
    """The group's offsets and markers before and after, changed partitions first, then the verdict read back."""
    ordered = sorted(plan.rows, key=lambda row: (not row.changed, row.tp))
    done = "committed" if executed else ("nothing to do" if plan.is_noop else "would change")
    facts = [f"Align group to checkpoint batch {plan.batch_id} (verdict before: {plan.verdict.value}): "
             f"{len(plan.changes)} of {len(plan.rows)} partition(s) {done}. Plan fingerprint: `{plan.fingerprint}`"]
    facts.extend(f"- Warning: {clip(w, 300)}" for w in plan.warnings)
    if plan.untouched:
        facts.append(f"- Not in offsets/{plan.batch_id}, left as they are: {len(plan.untouched)} partition(s)")

    def render(rows: int) -> str:
        shown = ordered[:rows]
        table = md_table(
            ["partition", "offset before", "marker before", "offset after", "marker after", "change"],
            [[str(r.tp), r.before_offset, _marker_text(r.before_metadata), r.after_offset,
              _marker_text(r.after_metadata), "yes" if r.changed else "no"] for r in shown],
        )
        card = Card(heading).add(*facts).add(table, more_rows(len(shown), len(ordered)))
        label = "afterwards" if executed else "of the group as it is"
        card.add(f"Verification {label} (read back from Kafka): {after.overall.value}")
        if not after.ok:
            card.add(*verification_table(after, rows))
        return card.text()

    return fit(render, max_rows, max_chars)


_LAG_ORDER = {status: rank for rank, status in enumerate(LagStatus)}


def _health_facts(report: HealthReport) -> list[str]:
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
        card = Card(heading).add(*_health_facts(report))
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


def refusal_card(action: str, pipeline: str, reason: str, *, phrase: str | None = None) -> str:
    """A request refused before anything ran: the reason, and how to run it."""
    heading = ResultHeading(action, pipeline, "refused", "refused before anything ran; nothing was changed.")
    lines = [*heading.lines(), f"- Reason: {reason}"]
    if phrase:
        lines.append(f"- To run it: tick dry run to see what would change, or type exactly `{phrase}` in Confirmation.")
    return "\n".join(lines) + "\n"


def error_card(heading: ResultHeading, error: BaseException) -> str:
    """A use case that refused or could not run: the error's message and its fix."""
    if isinstance(error, EosError):
        lines = [f"Error ({type(error).__name__}): {error.message}"]
        if error.fix:
            lines.append(f"Fix: {error.fix}")
    else:
        lines = [f"Error ({type(error).__name__}): {error}"]
    return Card(heading).add(*lines).text()


def text_card(heading: ResultHeading, text: str, *, max_chars: int = DEFAULT_MAX_CHARS) -> str:
    """Any other result: the heading and the report's own text in a code block, cut to fit."""

    def render(lines: int) -> str:
        body = text.splitlines()
        kept = body[:lines]
        cut = [f"... {len(body) - len(kept)} more line(s)"] if len(kept) < len(body) else []
        return Card(heading).add("```", *kept, *cut, "```").text()

    return fit(render, len(text.splitlines()), max_chars)
