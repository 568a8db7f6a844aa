"""Transaction states, durations, and the admin API's facts as pydantic models."""

from __future__ import annotations

import pydantic
import pytest

from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import (
    PartitionOffsets,
    ProducerState,
    Transaction,
    TransactionListing,
    TxnState,
    format_age,
    to_epoch_ms,
)
from tests.unit.transactions.builders import NOW, NOW_MS, TP0, TP1, producer, txn


@pytest.mark.parametrize(
    ("raw", "state", "is_open", "completing"),
    [
        ("Ongoing", TxnState.ONGOING, True, False),
        ("PrepareCommit", TxnState.PREPARE_COMMIT, True, True),
        ("PrepareAbort", TxnState.PREPARE_ABORT, True, True),
        ("PrepareEpochFence", TxnState.PREPARE_EPOCH_FENCE, True, True),
        ("Empty", TxnState.EMPTY, False, False),
        ("CompleteAbort", TxnState.COMPLETE_ABORT, False, False),
        ("CompleteCommit", TxnState.COMPLETE_COMMIT, False, False),
        ("Dead", TxnState.DEAD, False, False),
        ("SomethingNew", TxnState.UNKNOWN, False, False),
    ],
)
def test_state_parsing_and_classes(raw: str, state: TxnState, is_open: bool, completing: bool) -> None:
    assert TxnState.parse(raw) is state
    assert state.is_open is is_open
    assert state.is_completing is completing


def test_state_parse_accepts_client_enums() -> None:
    from kafka.admin import TransactionState

    assert TxnState.parse(TransactionState.PREPARE_ABORT) is TxnState.PREPARE_ABORT


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (None, None),
        (850, "850ms"),
        (12_000, "12s"),
        (245_000, "4m05s"),
        (7_380_000, "2h03m"),
        (-3_000, "-3s"),
        (3 * 86_400_000 + 4 * 3_600_000, "3d04h"),
    ],
)
def test_format_age(ms: int | None, text: str | None) -> None:
    assert format_age(ms) == text


def test_naive_datetimes_count_as_utc() -> None:
    assert to_epoch_ms(NOW.replace(tzinfo=None)) == NOW_MS


def test_partition_offsets_pinned() -> None:
    assert PartitionOffsets(tp=TP0, lso=3, hwm=7).pinned
    assert not PartitionOffsets(tp=TP0, lso=7, hwm=7).pinned



# -- JSON --------------------------------------------------------------------------------------


def test_transaction_json_names_partitions_sorted_and_reads_back() -> None:
    dashed = TopicPartition("orders-eu-1", 3)
    described = txn("pfx-0", partitions=(TP1, dashed, TP0))
    data = described.to_dict()
    assert data == {
        "transactional_id": "pfx-0",
        "state": "Ongoing",
        "producer_id": 7,
        "producer_epoch": 3,
        "start_time_ms": NOW_MS - 5_000,
        "timeout_ms": 60_000,
        "partitions": ["orders-eu-1-3", "out-0", "out-1"],
        "coordinator_id": None,
    }
    assert data == described.model_dump(mode="json")
    assert Transaction.model_validate(data) == described
    assert dashed in Transaction.model_validate(data).partitions


def test_transaction_reads_partition_pairs_and_unknown_states() -> None:
    read = Transaction.model_validate(
        {
            "transactional_id": "pfx-0",
            "state": "SomethingNew",
            "producer_id": 7,
            "producer_epoch": 0,
            "start_time_ms": None,
            "timeout_ms": 60_000,
            "partitions": [["out-topic", 2]],
        }
    )
    assert read.state is TxnState.UNKNOWN
    assert read.partitions == frozenset({TopicPartition("out-topic", 2)})


def test_producer_state_and_offsets_json() -> None:
    state = producer(4, start=3)
    assert ProducerState.model_validate(state.to_dict()) == state
    assert state.to_dict()["current_txn_start_offset"] == 3
    offsets = PartitionOffsets(tp=TP1, lso=9, hwm=12)
    assert offsets.to_dict() == {"partition": "out-1", "lso": 9, "hwm": 12, "pinned": True}
    assert PartitionOffsets.model_validate(offsets.to_dict()) == offsets


def test_models_take_fields_by_name_only_and_are_frozen() -> None:
    assert TransactionListing(transactional_id="pfx-0", producer_id=3, state=TxnState.ONGOING) == TransactionListing(
        transactional_id="pfx-0", producer_id=3, state="Ongoing"
    )
    assert PartitionOffsets(tp=TP0, lso=3, hwm=7) == PartitionOffsets(partition=TP0, lso=3, hwm=7)
    transaction = Transaction(transactional_id="x", state=TxnState.EMPTY, producer_id=1, producer_epoch=2,
                              start_time_ms=None, timeout_ms=60_000, partitions=frozenset(), coordinator_id=None)
    assert transaction.coordinator_id is None
    with pytest.raises(TypeError, match="positional"):
        PartitionOffsets(TP0, 3, 7)  # type: ignore[misc]
    with pytest.raises(pydantic.ValidationError):
        PartitionOffsets(tp=TP0, lso=3, hwm=7).lso = 4  # type: ignore[misc]
    assert len({PartitionOffsets(tp=TP0, lso=3, hwm=7), PartitionOffsets(tp=TP0, lso=3, hwm=7)}) == 1
