"""What the Kafka admin API reports about transactions, as frozen pydantic models.

ListTransactions gives :class:`TransactionListing`, DescribeTransactions :class:`Transaction`,
DescribeProducers :class:`ProducerState`, ListOffsets :class:`PartitionOffsets`. The models are
the JSON schema of the abort report too: ``model_dump(mode="json")`` gives the keys XCom readers
and ``eos abort --json`` rely on, and ``model_validate`` reads them back.

Times are milliseconds since the epoch, as the Kafka admin API reports them.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterable
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PlainSerializer, computed_field

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.topic_partition import TopicPartition

__all__ = [
    "PartitionName",
    "PartitionOffsets",
    "PartitionSet",
    "ProducerState",
    "Transaction",
    "TransactionListing",
    "TxnState",
    "format_age",
    "partitions_text",
    "to_epoch_ms",
]


class TxnState(enum.StrEnum):
    """A transaction's state as the coordinator reports it (the Kafka wire names)."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"
    UNKNOWN = "Unknown"

    @classmethod
    def parse(cls, value: object) -> TxnState:
        """Map a client library's state (enum or string) to a member; unknown text is ``UNKNOWN``."""
        text = str(getattr(value, "value", value))
        try:
            return cls(text)
        except ValueError:
            return cls.UNKNOWN

    @property
    def is_open(self) -> bool:
        """True while the transaction still holds partitions: ongoing or being completed."""
        return self in _OPEN_STATES

    @property
    def is_completing(self) -> bool:
        """True when the coordinator is already writing markers; it finishes without help."""
        return self in _OPEN_STATES and self is not TxnState.ONGOING


_OPEN_STATES = frozenset(
    {TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE}
)


def to_epoch_ms(moment: dt.datetime) -> int:
    """Milliseconds since the epoch of an aware datetime (naive ones are taken as UTC)."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1000)


def format_age(age_ms: int | None) -> str | None:
    """A compact, readable duration: ``850ms``, ``12s``, ``4m05s``, ``2h03m``, ``3d04h``."""
    if age_ms is None:
        return None
    if age_ms < 0:
        # Clock skew between this host and the broker; say so instead of printing nonsense.
        return f"-{format_age(-age_ms)}"
    if age_ms < 1_000:
        return f"{age_ms}ms"
    seconds = age_ms // 1_000
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h{minutes:02d}m"
    days, hours = divmod(hours, 24)
    return f"{days}d{hours:02d}h"


def partitions_text(partitions: Iterable[TopicPartition]) -> str | None:
    """``topic-0, topic-1`` in partition order, ``None`` for no partitions."""
    ordered = sorted(partitions)
    return ", ".join(str(tp) for tp in ordered) if ordered else None


def _parse_partition(value: Any) -> Any:
    """Accept a partition as JSON spells it: ``"topic-3"`` (the report's form) or ``[topic, 3]``."""
    if isinstance(value, str):
        # Topic names may contain '-', partition numbers never do: split at the last one.
        topic, _, number = value.rpartition("-")
        return TopicPartition(topic, int(number)) if topic and number.isdigit() else value
    if isinstance(value, list | tuple) and not isinstance(value, TopicPartition) and len(value) == 2:
        return TopicPartition(str(value[0]), int(value[1]))
    return value


def _sorted_names(partitions: frozenset[TopicPartition]) -> list[str]:
    return [str(tp) for tp in sorted(partitions)]


PartitionName = Annotated[TopicPartition, BeforeValidator(_parse_partition), PlainSerializer(str, when_used="json")]
"""A partition that JSON shows as ``topic-N``."""

PartitionSet = Annotated[
    frozenset[PartitionName], PlainSerializer(_sorted_names, return_type=list[str], when_used="json")
]
"""A set of partitions that JSON shows as a sorted list of ``topic-N``."""

State = Annotated[TxnState, BeforeValidator(TxnState.parse)]


class TransactionListing(FrozenModel):
    """One row of ListTransactions: an id, its current producer id and its state."""

    transactional_id: str
    producer_id: int
    state: State


class Transaction(FrozenModel):
    """A transactional id as DescribeTransactions reports it.

    :param transactional_id: the id.
    :param state: the coordinator's state for it.
    :param producer_id: the producer id currently bound to the id.
    :param producer_epoch: its epoch (fencing bumps it).
    :param start_time_ms: when the current transaction started (``None``: none running).
    :param timeout_ms: the ``transaction.timeout.ms`` the producer registered.
    :param partitions: partitions in the transaction (for completing states: those still
        waiting for markers).
    :param coordinator_id: the broker coordinating the id, when known.
    """

    transactional_id: str
    state: State
    producer_id: int
    producer_epoch: int
    start_time_ms: int | None
    timeout_ms: int
    partitions: PartitionSet = frozenset()
    coordinator_id: int | None = None

    def age_ms(self, now_ms: int) -> int | None:
        """How long the current transaction has been open; ``None`` when none is."""
        return None if self.start_time_ms is None else now_ms - self.start_time_ms


class ProducerState(FrozenModel):
    """One active producer on a partition, as DescribeProducers reports it.

    :param producer_id: the producer id.
    :param producer_epoch: its epoch.
    :param last_sequence: the last sequence number written.
    :param last_timestamp_ms: the timestamp of its last write.
    :param coordinator_epoch: the coordinator epoch of its last marker (``-1``: none yet).
    :param current_txn_start_offset: first offset of its open transaction on this partition,
        ``-1`` when it has none.
    """

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp_ms: int
    coordinator_epoch: int
    current_txn_start_offset: int

    @property
    def has_open_transaction(self) -> bool:
        """True when this producer has a transaction open on the partition."""
        return self.current_txn_start_offset >= 0


class PartitionOffsets(FrozenModel):
    """A partition's last stable offset (``read_committed`` end) and high watermark.

    JSON: ``{"partition": "topic-N", "lso": ..., "hwm": ..., "pinned": ...}``.
    """

    tp: PartitionName = Field(alias="partition")
    lso: int
    hwm: int

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pinned(self) -> bool:
        """True when an open transaction holds the LSO below the high watermark."""
        return self.lso < self.hwm
