"""Lingering transactions: ongoing transactions under the pipeline's prefix.

A transaction under the prefix that its coordinator still lists as ongoing, e.g. because the
driver was killed between ``begin_transaction`` and ``commit_transaction``. The broker aborts
it after its ``transaction.timeout.ms``; recovery can abort it at once by *fencing*:
``init_transactions`` with the same transactional id aborts the open transaction and bumps the
producer epoch (docs/architecture.md, recovery).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.transactional_ids import belongs_to_prefix
from airflow_provider_eos.core.transactions.admin_reports import Transaction, TxnState, to_epoch_ms

__all__ = ["LingeringTransaction", "find_lingering", "open_under_prefix"]


def open_under_prefix(prefix: str, transactions: Iterable[Transaction]) -> list[Transaction]:
    """The transactions under ``prefix`` that still hold partitions (ongoing or completing).

    Ids outside the prefix are dropped here, before anything else looks at them.
    """
    return sorted(
        (t for t in transactions if belongs_to_prefix(prefix, t.transactional_id) and t.state.is_open),
        key=lambda t: t.transactional_id,
    )


class LingeringTransaction(FrozenModel):
    """An ongoing transaction under the pipeline's prefix.

    :param transaction: the coordinator's description.
    :param age_ms: how long it has been open (``None``: the coordinator reports no start).
    :param timeout_ms: its transaction timeout (the registered one, else the spec's).
    """

    transaction: Transaction
    age_ms: int | None
    timeout_ms: int

    @property
    def overdue(self) -> bool:
        """True when it outlived its timeout: the broker aborts it on its next cleanup pass."""
        return self.age_ms is not None and self.age_ms > self.timeout_ms

    @property
    def young(self) -> bool:
        """True when its producer may still be working on it (unknown age counts as young)."""
        return self.age_ms is None or self.age_ms < self.timeout_ms


def find_lingering(
    prefix: str, transactions: Iterable[Transaction], now: dt.datetime, transaction_timeout_ms: int
) -> list[LingeringTransaction]:
    """Ongoing transactions whose id belongs to ``prefix``, oldest first.

    Transactions the coordinator is already completing (``Prepare*``) are not lingering: the
    coordinator finishes them without help, and fencing would only wait for it.

    :param prefix: the pipeline's transactional id prefix.
    :param transactions: described transactions, any ids (those outside ``prefix`` are ignored).
    :param now: the current time.
    :param transaction_timeout_ms: the spec's timeout, used when the broker reports none.
    """
    now_ms = to_epoch_ms(now)
    found = [
        LingeringTransaction(
            transaction=t,
            age_ms=t.age_ms(now_ms),
            timeout_ms=t.timeout_ms if t.timeout_ms > 0 else transaction_timeout_ms,
        )
        for t in open_under_prefix(prefix, transactions)
        if t.state is TxnState.ONGOING
    ]
    return sorted(found, key=lambda item: (-(item.age_ms or 0), item.transaction.transactional_id))
