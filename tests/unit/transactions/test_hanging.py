"""Hanging transactions, decided as Kafka's ``find-hanging`` decides them."""

from __future__ import annotations

from airflow_provider_eos.core.transactions import (
    HangingReason,
    TransactionListing,
    TxnState,
    find_hanging,
    hanging_candidates,
)
from tests.unit.transactions.builders import MINUTE, NOW, TP0, TP1, producer, txn


def test_candidates_are_open_transactions_older_than_the_max_timeout() -> None:
    producers = {
        TP0: [producer(1, idle_ms=16 * MINUTE), producer(2, idle_ms=14 * MINUTE), producer(3, start=-1)],
        TP1: [producer(4, idle_ms=15 * MINUTE)],  # exactly the timeout: Kafka's tool requires strictly older
    }
    found = hanging_candidates(producers, NOW, 15 * MINUTE)
    assert [(c.tp, c.producer.producer_id) for c in found] == [(TP0, 1)]


def test_no_transactional_id_for_the_producer_is_hanging() -> None:
    (h,) = find_hanging({TP0: [producer(1)]}, [], {}, now=NOW, max_transaction_timeout_ms=15 * MINUTE)
    assert h.reason is HangingReason.NO_TRANSACTIONAL_ID
    assert h.transactional_id is None and h.coordinator_state is None
    assert h.owner("pfx") == "unattributed"
    assert h.age_ms == 20 * MINUTE


def test_transactional_id_unknown_to_its_coordinator_is_hanging() -> None:
    listings = [TransactionListing(transactional_id="pfx-0", producer_id=1, state=TxnState.ONGOING)]
    (h,) = find_hanging({TP0: [producer(1)]}, listings, {"pfx-0": None}, now=NOW, max_transaction_timeout_ms=0)
    assert h.reason is HangingReason.NOT_DESCRIBED and h.transactional_id == "pfx-0"
    assert h.owner("pfx") == "ours"


def test_partition_outside_the_coordinators_transaction_is_hanging() -> None:
    listings = [TransactionListing(transactional_id="app-3", producer_id=1, state=TxnState.ONGOING)]
    descriptions = {"app-3": txn("app-3", partitions=(TP1,), producer_id=1)}
    (h,) = find_hanging({TP0: [producer(1)]}, listings, descriptions, now=NOW, max_transaction_timeout_ms=0)
    assert h.reason is HangingReason.PARTITION_NOT_IN_TRANSACTION
    assert h.coordinator_state is TxnState.ONGOING
    assert h.owner("pfx") == "foreign"


def test_partition_the_coordinator_still_covers_is_not_hanging() -> None:
    listings = [TransactionListing(transactional_id="pfx-0", producer_id=1, state=TxnState.PREPARE_COMMIT)]
    descriptions = {"pfx-0": txn("pfx-0", TxnState.PREPARE_COMMIT, partitions=(TP0,), producer_id=1)}
    assert find_hanging({TP0: [producer(1)]}, listings, descriptions, now=NOW, max_transaction_timeout_ms=0) == []


def test_listings_for_producer_ids_that_were_not_asked_for_are_ignored() -> None:
    # Kafka's tool ignores such rows; using them would attribute the candidate to a wrong id.
    listings = [TransactionListing(transactional_id="pfx-0", producer_id=99, state=TxnState.ONGOING)]
    descriptions = {"pfx-0": txn("pfx-0", partitions=(TP0,), producer_id=99)}
    (h,) = find_hanging({TP0: [producer(1)]}, listings, descriptions, now=NOW, max_transaction_timeout_ms=0)
    assert h.reason is HangingReason.NO_TRANSACTIONAL_ID


def test_young_open_transactions_are_never_hanging() -> None:
    producers = {TP0: [producer(1, idle_ms=MINUTE)]}
    assert find_hanging(producers, [], {}, now=NOW, max_transaction_timeout_ms=15 * MINUTE) == []
