"""Transactions and producer states as the admin API would report them, relative to a fixed now."""

from __future__ import annotations

import datetime as dt

from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import ProducerState, Transaction, TxnState, to_epoch_ms

NOW = dt.datetime(2026, 1, 15, 12, 0, 0, tzinfo=dt.UTC)
NOW_MS = to_epoch_ms(NOW)
MINUTE = 60_000
TP0, TP1 = TopicPartition("out", 0), TopicPartition("out", 1)


def txn(
    txn_id: str,
    state: TxnState = TxnState.ONGOING,
    *,
    age_ms: int | None = 5_000,
    timeout_ms: int = 60_000,
    partitions: tuple[TopicPartition, ...] = (TopicPartition("out", 0),),
    producer_id: int = 7,
) -> Transaction:
    """A described transaction ``age_ms`` old at :data:`NOW` (``None``: no transaction running)."""
    return Transaction(
        transactional_id=txn_id,
        state=state,
        producer_id=producer_id,
        producer_epoch=3,
        start_time_ms=None if age_ms is None else NOW_MS - age_ms,
        timeout_ms=timeout_ms,
        partitions=frozenset(partitions),
    )


def producer(
    pid: int, *, start: int = 10, idle_ms: int = 20 * MINUTE, coordinator_epoch: int = -1
) -> ProducerState:
    """A producer that last wrote ``idle_ms`` before :data:`NOW`, its transaction starting at ``start``."""
    return ProducerState(
        producer_id=pid,
        producer_epoch=0,
        last_sequence=4,
        last_timestamp_ms=NOW_MS - idle_ms,
        coordinator_epoch=coordinator_epoch,
        current_txn_start_offset=start,
    )
