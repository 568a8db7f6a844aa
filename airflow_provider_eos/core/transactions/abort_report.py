"""The abort report: what ``eos abort`` found, did, and found again afterwards.

``model_dump(mode="json")`` (or :meth:`AbortReport.to_dict`) is what the abort operator pushes to
XCom and ``eos abort --json`` prints; its table for task logs and terminals is
:func:`airflow_provider_eos.core.presentation.abort_text`.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import PlainSerializer, computed_field

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.transactions.abort_plan import AbortRow, Outcome
from airflow_provider_eos.core.transactions.admin_reports import PartitionOffsets
from airflow_provider_eos.core.transactions.safety import SafetyCheck

__all__ = ["AbortReport"]

# ``datetime.isoformat()``: pydantic would spell UTC as ``Z``, readers of the report got ``+00:00``.
IsoDatetime = Annotated[dt.datetime, PlainSerializer(dt.datetime.isoformat, return_type=str, when_used="json")]

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
