"""Hanging transactions: open on a partition, and no coordinator will ever finish them.

A partition's leader holds an open transaction (DescribeProducers shows a current transaction
start offset) that no coordinator will finish, because the coordinator does not list the
partition in that producer's transaction. Only the admin AbortTransaction (a WriteTxnMarkers
abort sent to the leader) clears it. :func:`find_hanging` is the logic of Apache Kafka's own
``kafka-transactions.sh find-hanging`` (``TransactionsCommand.FindHangingTransactionsCommand``).

Whose it is decides what recovery may do (docs/architecture.md, recovery): one the coordinator attributes
to an id under the prefix is the pipeline's; one attributed to another id is only reported; one
attributed to no id at all sits on the pipeline's own output or dead-letter partitions and no
coordinator will ever finish it, whoever wrote it, so it is the pipeline's to abort.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import Field

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactional_ids import belongs_to_prefix
from airflow_provider_eos.core.transactions.admin_reports import (
    PartitionName,
    ProducerState,
    Transaction,
    TransactionListing,
    TxnState,
    to_epoch_ms,
)

__all__ = [
    "HangingReason",
    "HangingTransaction",
    "OpenPartitionTransaction",
    "find_hanging",
    "hanging_candidates",
]


class OpenPartitionTransaction(FrozenModel):
    """A producer's open transaction on one partition (a hanging candidate)."""

    tp: PartitionName
    producer: ProducerState


def hanging_candidates(
    producers: Mapping[TopicPartition, Sequence[ProducerState]], now: dt.datetime, max_transaction_timeout_ms: int
) -> list[OpenPartitionTransaction]:
    """Open transactions whose producer last wrote longer ago than the maximum transaction timeout.

    Kafka's ``find-hanging`` measures from the producer's last write (``lastTimestamp``), and
    only strictly older transactions qualify: no live producer can keep a transaction open past
    ``transaction.max.timeout.ms``, so a younger one may still complete normally.

    :param producers: DescribeProducers' active producers per partition.
    :param now: the current time.
    :param max_transaction_timeout_ms: the broker's ``transaction.max.timeout.ms``.
    """
    now_ms = to_epoch_ms(now)
    found = [
        OpenPartitionTransaction(tp=tp, producer=producer)
        for tp, states in producers.items()
        for producer in states
        if producer.has_open_transaction and now_ms - producer.last_timestamp_ms > max_transaction_timeout_ms
    ]
    return sorted(found, key=lambda c: (c.tp, c.producer.producer_id))


class HangingReason(enum.StrEnum):
    """Why a candidate is hanging, in the order Kafka's ``find-hanging`` tests it."""

    NO_TRANSACTIONAL_ID = "no coordinator lists this producer id"
    NOT_DESCRIBED = "the coordinator does not know the transactional id"
    PARTITION_NOT_IN_TRANSACTION = "the coordinator's transaction does not include this partition"


class HangingTransaction(FrozenModel):
    """An open transaction on a partition that no coordinator will finish.

    JSON: ``partition`` (``topic-N``), ``producer``, ``age_ms``, ``transactional_id``,
    ``coordinator_state`` and ``reason`` (the enums' values).

    :param tp: the partition.
    :param producer: the producer's state there.
    :param age_ms: time since the producer's last write to the partition.
    :param transactional_id: the id the coordinator binds to the producer id (``None``: none).
    :param coordinator_state: that id's state (``None``: not described).
    :param reason: why it is hanging.
    """

    tp: PartitionName = Field(alias="partition")
    producer: ProducerState
    age_ms: int
    transactional_id: str | None
    coordinator_state: TxnState | None
    reason: HangingReason

    def owner(self, prefix: str) -> Literal["ours", "foreign", "unattributed"]:
        """``ours`` (id under ``prefix``), ``foreign`` (another id) or ``unattributed`` (no id)."""
        if self.transactional_id is None:
            return "unattributed"
        return "ours" if belongs_to_prefix(prefix, self.transactional_id) else "foreign"


def find_hanging(
    producers: Mapping[TopicPartition, Sequence[ProducerState]],
    listings: Iterable[TransactionListing],
    descriptions: Mapping[str, Transaction | None],
    *,
    now: dt.datetime,
    max_transaction_timeout_ms: int,
) -> list[HangingTransaction]:
    """Hanging transactions, decided exactly as Kafka's ``find-hanging`` decides them.

    1. Candidates: :func:`hanging_candidates`.
    2. The candidates' producer ids are looked up with ListTransactions (filtered by producer
       id, any state); a candidate whose producer id no listing names is hanging.
    3. The ids found are described; a candidate whose id is not found is hanging.
    4. Otherwise it is hanging unless the description's partitions include the candidate's
       partition (ongoing transactions list every partition written; completing ones those
       still waiting for markers, so the coordinator will still write them).

    :param producers: DescribeProducers' active producers per partition.
    :param listings: ListTransactions rows for the candidates' producer ids (rows for other
        producer ids are ignored, as Kafka's tool ignores them).
    :param descriptions: DescribeTransactions per id of those rows; ``None`` (or absent) for an
        id the coordinator does not know.
    :param now: the current time.
    :param max_transaction_timeout_ms: the broker's ``transaction.max.timeout.ms``.
    """
    now_ms = to_epoch_ms(now)
    candidates = hanging_candidates(producers, now, max_transaction_timeout_ms)
    wanted = {c.producer.producer_id for c in candidates}
    id_by_producer: dict[int, str] = {}
    for listing in listings:
        if listing.producer_id in wanted:
            id_by_producer[listing.producer_id] = listing.transactional_id
    hanging: list[HangingTransaction] = []
    for candidate in candidates:
        txn_id = id_by_producer.get(candidate.producer.producer_id)
        description = descriptions.get(txn_id) if txn_id is not None else None
        if txn_id is None:
            reason = HangingReason.NO_TRANSACTIONAL_ID
        elif description is None:
            reason = HangingReason.NOT_DESCRIBED
        elif candidate.tp not in description.partitions:
            reason = HangingReason.PARTITION_NOT_IN_TRANSACTION
        else:
            continue
        hanging.append(
            HangingTransaction(
                tp=candidate.tp,
                producer=candidate.producer,
                age_ms=now_ms - candidate.producer.last_timestamp_ms,
                transactional_id=txn_id,
                coordinator_state=None if description is None else description.state,
                reason=reason,
            )
        )
    return hanging
