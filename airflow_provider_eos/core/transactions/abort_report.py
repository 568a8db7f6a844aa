"""The abort report: what ``eos abort`` found, did, and found again afterwards.

``model_dump(mode="json")`` (or :meth:`AbortReport.to_dict`) is what the abort operator pushes to
XCom and ``eos abort --json`` prints; :meth:`AbortReport.render` is the table for task logs and
terminals.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import PlainSerializer, computed_field

from airflow_provider_eos.core.model import FrozenModel
from airflow_provider_eos.core.report_table import render_table
from airflow_provider_eos.core.transactions.abort_plan import AbortRow, Outcome
from airflow_provider_eos.core.transactions.model import PartitionOffsets, format_age, partitions_text
from airflow_provider_eos.core.transactions.safety import SafetyCheck

__all__ = ["AbortReport"]

# ``datetime.isoformat()``: pydantic would spell UTC as ``Z``, readers of the report got ``+00:00``.
IsoDatetime = Annotated[dt.datetime, PlainSerializer(dt.datetime.isoformat, return_type=str, when_used="json")]

_ROW_HEADERS = ["kind", "transactional id", "state", "producer", "age", "partitions", "action", "outcome", "detail"]


def _row_cells(row: AbortRow) -> list[object]:
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


class AbortReport(FrozenModel):
    """What ``eos abort`` found, did, and found again afterwards.

    JSON: the fields below and ``ok``; ``scanned_at`` in ISO 8601.

    :param prefix: the pipeline's transactional id prefix.
    :param scanned_at: when the first scan ran (UTC).
    :param executed: whether actions were carried out (``False``: dry run or refused).
    :param safety: the safety check of the first scan.
    :param rows: one row per open transaction the first scan found, with its outcome.
    :param offsets_before: LSO and high watermark of the scanned partitions before acting.
    :param offsets_after: the same after acting (equal to ``offsets_before`` on a dry run).
    :param remaining: rows of the rescan: what is still open afterwards (dry run: the first
        scan's rows that would be acted on).
    :param hanging_min_age_ms: the age above which an open partition transaction was a
        hanging candidate (the broker's ``transaction.max.timeout.ms`` unless overridden).
    :param notes: remarks on the scan (e.g. a topic that does not exist).
    """

    prefix: str
    scanned_at: IsoDatetime
    executed: bool
    safety: SafetyCheck
    rows: tuple[AbortRow, ...]
    offsets_before: tuple[PartitionOffsets, ...] = ()
    offsets_after: tuple[PartitionOffsets, ...] = ()
    remaining: tuple[AbortRow, ...] = ()
    hanging_min_age_ms: int | None = None
    notes: tuple[str, ...] = ()

    @property
    def failures(self) -> tuple[AbortRow, ...]:
        """Rows whose action failed."""
        return tuple(row for row in self.rows if row.outcome is Outcome.FAILED)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        """True when nothing this pipeline may abort is left open and no action failed."""
        return not self.failures and not any(row.action.acts for row in self.remaining)

    def render(self) -> str:
        """The report as readable text: what was found and done, then LSO vs high watermark."""
        lines = [self._headline(), *self._safety_lines()]
        lines.extend(f"Note: {note}" for note in self.notes)
        lines.append("")
        lines.append(render_table(_ROW_HEADERS, [_row_cells(row) for row in self.rows]))
        if self.offsets_before or self.offsets_after:
            lines.append("")
            lines.append("Last stable offset vs high watermark (before -> after):")
            lines.append(self._offsets_table())
        lines.append("")
        if self.executed:
            if self.remaining:
                lines.append("Still open after acting:")
                lines.append(render_table(_ROW_HEADERS, [_row_cells(row) for row in self.remaining]))
            else:
                lines.append("Rescan: nothing under the prefix is open any more.")
        elif any(row.action.acts for row in self.rows):
            lines.append("Run with --execute (operators: dry_run=False) to abort the rows marked 'abort'.")
        return "\n".join(lines)

    def _headline(self) -> str:
        counts: dict[str, int] = {}
        for row in self.rows:
            counts[row.kind] = counts.get(row.kind, 0) + 1
        found = ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "nothing open"
        mode = "executed" if self.executed else "dry run: nothing changed"
        return f"Open transactions under prefix {self.prefix!r} at {self.scanned_at.isoformat()}: {found} ({mode})"

    def _safety_lines(self) -> list[str]:
        if not self.safety.reasons:
            return []
        if self.safety.driver_gone:
            head = f"The driver is positively gone ({self.safety.driver_gone}); these signs were the dead job's:"
        elif self.safety.forced:
            head = "Forced despite signs that the job is alive:"
        elif self.executed:
            head = "The job looks alive (nothing needed aborting, so nothing was refused):"
        else:
            head = "The job looks alive (executing would be refused without --force):"
        return [head, *(f"  - {reason}" for reason in self.safety.reasons)]

    def _offsets_table(self) -> str:
        after = {o.tp: o for o in self.offsets_after}
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
                for o in self.offsets_before
            ],
        )
