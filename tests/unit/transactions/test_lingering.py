"""Lingering transactions: ongoing under the prefix, and nothing outside it."""

from __future__ import annotations

from airflow_provider_eos.core.transactions import (
    TxnState,
    find_lingering,
    open_under_prefix,
)
from tests.unit.transactions.builders import NOW, txn


def test_lingering_takes_only_ongoing_transactions_under_the_prefix() -> None:
    transactions = [
        txn("pfx-0", age_ms=30_000),
        txn("pfx-12", age_ms=90_000),
        txn("pfx-1", TxnState.PREPARE_ABORT),
        txn("pfx-2", TxnState.COMPLETE_ABORT),
        txn("pfx-3", TxnState.EMPTY, age_ms=None),
        # Look-alikes that are not ids of the scheme for "pfx": never touched.
        txn("pfx2-0"),
        txn("pfx-extra-0"),
        txn("pfx-01"),
        txn("pfx-"),
        txn("pfx"),
        txn("other-0"),
    ]
    found = find_lingering("pfx", transactions, NOW, 60_000)
    assert [item.transaction.transactional_id for item in found] == ["pfx-12", "pfx-0"]  # oldest first
    assert [item.age_ms for item in found] == [90_000, 30_000]
    assert [item.overdue for item in found] == [True, False]
    assert [item.young for item in found] == [False, True]


def test_lingering_never_includes_an_id_outside_the_prefix() -> None:
    foreign = [txn(txn_id) for txn_id in ("pfx2-0", "pfx-extra-0", "pfx-01", "xpfx-0", "PFX-0")]
    assert find_lingering("pfx", foreign, NOW, 60_000) == []
    assert open_under_prefix("pfx", foreign) == []


def test_lingering_uses_the_spec_timeout_when_the_broker_reports_none() -> None:
    (item,) = find_lingering("pfx", [txn("pfx-0", timeout_ms=0, age_ms=50_000)], NOW, 40_000)
    assert item.timeout_ms == 40_000 and item.overdue


def test_open_under_prefix_keeps_completing_ones() -> None:
    transactions = [txn("pfx-0"), txn("pfx-1", TxnState.PREPARE_COMMIT), txn("pfx-2", TxnState.EMPTY)]
    assert [t.transactional_id for t in open_under_prefix("pfx", transactions)] == ["pfx-0", "pfx-1"]
