"""The abort plan: what recovery does with every open transaction a scan found.

Nothing outside the prefix is ever touched (docs/architecture.md, recovery): ongoing transactions under the
prefix are fenced, completing ones are left to their coordinator, hanging ones are aborted with
AbortTransaction unless the coordinator attributes them to an id outside the prefix (reported,
left). Planning changes nothing; the Kafka I/O that carries a plan out lives in
:mod:`airflow_provider_eos.kafka.transactions_admin`.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterable

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.transactions.admin_reports import (
    PartitionName,
    Transaction,
    format_age,
    to_epoch_ms,
)
from airflow_provider_eos.core.transactions.hanging import HangingTransaction
from airflow_provider_eos.core.transactions.lingering import find_lingering, open_under_prefix

__all__ = ["AbortRow", "Action", "Outcome", "plan_abort"]


class Action(enum.StrEnum):
    """What recovery does (or would do) with one open transaction."""

    FENCE = "abort by fencing"
    ABORT_MARKER = "abort with AbortTransaction"
    LEAVE_COMPLETING = "leave: the coordinator is completing it"
    LEAVE_FOREIGN = "leave: its transactional id is outside the prefix"
    LEAVE_UNATTRIBUTABLE = "leave: whose it is cannot be told"

    @property
    def acts(self) -> bool:
        """True for the actions that change Kafka."""
        return self in (Action.FENCE, Action.ABORT_MARKER)


class Outcome(enum.StrEnum):
    """What happened to one row."""

    ABORTED = "aborted"
    WOULD_ABORT = "would abort (dry run)"
    LEFT = "left as is"
    FAILED = "failed"


class AbortRow(FrozenModel):
    """One open transaction found by the scan, with the planned action and its outcome.

    JSON: the fields below, partitions as ``topic-N``, action and outcome as their values.

    :param kind: ``lingering``, ``completing`` or ``hanging``.
    :param transactional_id: the id (``None`` for an unattributed hanging transaction).
    :param state: the coordinator's state (``None`` when it knows none).
    :param producer_id: the producer id.
    :param producer_epoch: the producer epoch.
    :param age_ms: how long it has been open (hanging: since the producer's last write).
    :param partitions: the partitions it holds.
    :param action: what recovery does with it.
    :param outcome: what happened (``None`` until acted on).
    :param detail: one sentence with the why, or the error of a failed action.
    :param start_offset: a hanging transaction's first offset on its partition.
    :param coordinator_epoch: a hanging transaction's coordinator epoch (for the abort request).
    """

    kind: str
    transactional_id: str | None
    state: str | None
    producer_id: int
    producer_epoch: int
    age_ms: int | None
    partitions: tuple[PartitionName, ...]
    action: Action
    outcome: Outcome | None = None
    detail: str = ""
    start_offset: int | None = None
    coordinator_epoch: int | None = None

    def with_outcome(self, outcome: Outcome, detail: str | None = None) -> AbortRow:
        """A copy with the outcome (and optionally a new detail) set."""
        return self.model_copy(update={"outcome": outcome, "detail": self.detail if detail is None else detail})


def _lingering_rows(
    prefix: str, transactions: list[Transaction], now: dt.datetime, transaction_timeout_ms: int
) -> list[AbortRow]:
    rows = []
    for item in find_lingering(prefix, transactions, now, transaction_timeout_ms):
        t = item.transaction
        note = (
            "overdue: the broker would abort it on its next cleanup pass"
            if item.overdue
            else f"open for {format_age(item.age_ms) or 'an unknown time'} of its {format_age(item.timeout_ms)} timeout"
        )
        rows.append(
            AbortRow(
                kind="lingering",
                transactional_id=t.transactional_id,
                state=t.state.value,
                producer_id=t.producer_id,
                producer_epoch=t.producer_epoch,
                age_ms=item.age_ms,
                partitions=tuple(sorted(t.partitions)),
                action=Action.FENCE,
                detail=note,
            )
        )
    return rows


def _completing_rows(prefix: str, transactions: list[Transaction], now: dt.datetime) -> list[AbortRow]:
    now_ms = to_epoch_ms(now)
    return [
        AbortRow(
            kind="completing",
            transactional_id=t.transactional_id,
            state=t.state.value,
            producer_id=t.producer_id,
            producer_epoch=t.producer_epoch,
            age_ms=t.age_ms(now_ms),
            partitions=tuple(sorted(t.partitions)),
            action=Action.LEAVE_COMPLETING,
            detail="the coordinator is writing its markers",
        )
        for t in open_under_prefix(prefix, transactions)
        if t.state.is_completing
    ]


#: Why an unattributed hanging transaction is left when the principal cannot see every transactional id.
UNATTRIBUTABLE = (
    "no transactional id this principal may DESCRIBE owns it, and ListTransactions hides the ids it may not: it "
    "may be another application's; grant DESCRIBE on TRANSACTIONAL_ID '*' (eos acls --role recovery "
    "--hanging-abort) or have an administrator abort it (kafka-transactions.sh abort)"
)


def _hanging_row(prefix: str, h: HangingTransaction, *, every_id_visible: bool) -> AbortRow:
    owner = h.owner(prefix)
    foreign = owner == "foreign"
    unattributable = owner == "unattributed" and not every_id_visible
    action = Action.LEAVE_FOREIGN if foreign else Action.LEAVE_UNATTRIBUTABLE if unattributable else Action.ABORT_MARKER
    return AbortRow(
        kind="hanging",
        transactional_id=h.transactional_id,
        state=None if h.coordinator_state is None else h.coordinator_state.value,
        producer_id=h.producer.producer_id,
        producer_epoch=h.producer.producer_epoch,
        age_ms=h.age_ms,
        partitions=(h.tp,),
        action=action,
        detail=f"{h.reason.value}; starts at offset {h.producer.current_txn_start_offset}"
        + ("; abort it with kafka-transactions.sh abort once its owner confirms" if foreign else "")
        + (f"; {UNATTRIBUTABLE}" if unattributable else ""),
        start_offset=h.producer.current_txn_start_offset,
        coordinator_epoch=h.producer.coordinator_epoch,
    )


def plan_abort(
    prefix: str,
    transactions: Iterable[Transaction],
    hanging: Iterable[HangingTransaction],
    *,
    now: dt.datetime,
    transaction_timeout_ms: int,
    every_id_visible: bool = True,
) -> tuple[AbortRow, ...]:
    """Decide what to do with every open transaction the scan found; changes nothing.

    Ongoing transactions under the prefix are fenced; completing ones are left to their
    coordinator; transactions outside the prefix never appear. Hanging transactions are
    aborted with AbortTransaction unless the coordinator attributes them to an id outside
    the prefix, in which case they are reported and left. Without ``every_id_visible`` (the
    principal may not DESCRIBE every transactional id) an unattributed one may be another
    application's whose id is hidden from the principal: it is reported and left too.

    :return: lingering rows (oldest first), then completing rows, then hanging rows by partition.
    """
    described = list(transactions)
    return (
        *_lingering_rows(prefix, described, now, transaction_timeout_ms),
        *_completing_rows(prefix, described, now),
        *(_hanging_row(prefix, h, every_id_visible=every_id_visible)
          for h in sorted(hanging, key=lambda h: (h.tp, h.producer.producer_id))),
    )
