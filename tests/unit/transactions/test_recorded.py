"""Kafka's own ``find-hanging`` verdicts, reproduced from recorded admin responses.

The data below is RECORDED: real admin responses from an Apache Kafka 4.1.1 broker
(the ``eos devstack`` single-node KRaft broker) read with kafka-python 3.0.12. On it, one
producer was SIGKILLed inside a transaction (``rec-0``: lingering) and one transactional
batch was written without AddPartitionsToTxn while the broker's
``transaction.partition.verification.enable`` was off (``rec-hang-0``'s producer: hanging).
Apache Kafka's own ``kafka-transactions.sh find-hanging --broker-id 1
--max-transaction-timeout 0`` on that broker printed exactly one row: partition 1, producer
4, start offset 3. The integration tests reproduce the same situation live.
"""

from __future__ import annotations

import datetime as dt
import json

from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import (
    HangingReason,
    ProducerState,
    Transaction,
    TransactionListing,
    TxnState,
    find_hanging,
    find_lingering,
)
from tests.unit.transactions.builders import MINUTE

RECORDED = json.loads(
    """
{
 "now_ms": 1795315202625,
 "topic": "rec-out-1795315199",
 "list_transactions": [
  {"transactional_id": "rec-hang-0", "producer_id": 4, "state": "Empty"},
  {"transactional_id": "rec-0", "producer_id": 3, "state": "Ongoing"}
 ],
 "describe_transactions": {
  "rec-hang-0": {"state": "Empty", "producer_id": 4, "producer_epoch": 0, "transaction_timeout_ms": 60000,
                 "transaction_start_time_ms": -1, "topic_partitions": [], "coordinator_id": 1},
  "rec-0": {"state": "Ongoing", "producer_id": 3, "producer_epoch": 0, "transaction_timeout_ms": 300000,
            "transaction_start_time_ms": 1795315199975, "topic_partitions": [["rec-out-1795315199", 1]],
            "coordinator_id": 1}
 },
 "describe_producers": {
  "rec-out-1795315199:1": [
   {"producer_id": 3, "producer_epoch": 0, "last_sequence": 2, "last_timestamp": 1795315199973,
    "coordinator_epoch": -1, "current_transaction_start_offset": 0},
   {"producer_id": 4, "producer_epoch": 0, "last_sequence": 0, "last_timestamp": 1795315201572,
    "coordinator_epoch": -1, "current_transaction_start_offset": 3}
  ],
  "rec-out-1795315199:0": []
 }
}
"""
)


def _recorded() -> tuple[
    dt.datetime, list[TransactionListing], dict[str, Transaction | None], dict[TopicPartition, list[ProducerState]]
]:
    now = dt.datetime.fromtimestamp(RECORDED["now_ms"] / 1000, tz=dt.UTC)
    listings = [
        TransactionListing(transactional_id=item["transactional_id"], producer_id=item["producer_id"],
                           state=TxnState.parse(item["state"]))
        for item in RECORDED["list_transactions"]
    ]
    descriptions: dict[str, Transaction | None] = {
        txn_id: Transaction(
            transactional_id=txn_id,
            state=TxnState.parse(d["state"]),
            producer_id=d["producer_id"],
            producer_epoch=d["producer_epoch"],
            start_time_ms=d["transaction_start_time_ms"] if d["transaction_start_time_ms"] >= 0 else None,
            timeout_ms=d["transaction_timeout_ms"],
            partitions=frozenset(TopicPartition(t, p) for t, p in d["topic_partitions"]),
            coordinator_id=d["coordinator_id"],
        )
        for txn_id, d in RECORDED["describe_transactions"].items()
    }
    producers = {}
    for key, states in RECORDED["describe_producers"].items():
        topic, partition = key.rsplit(":", 1)
        producers[TopicPartition(topic, int(partition))] = [
            ProducerState(
                producer_id=s["producer_id"],
                producer_epoch=s["producer_epoch"],
                last_sequence=s["last_sequence"],
                last_timestamp_ms=s["last_timestamp"],
                coordinator_epoch=s["coordinator_epoch"],
                current_txn_start_offset=s["current_transaction_start_offset"],
            )
            for s in states
        ]
    return now, listings, descriptions, producers


def test_recorded_responses_give_the_same_hanging_transaction_as_kafkas_tool() -> None:
    now, listings, descriptions, producers = _recorded()
    hanging = find_hanging(producers, listings, descriptions, now=now, max_transaction_timeout_ms=0)
    # kafka-transactions.sh find-hanging --max-transaction-timeout 0 printed exactly this row.
    assert [(h.tp, h.producer.producer_id, h.producer.current_txn_start_offset) for h in hanging] == [
        (TopicPartition(RECORDED["topic"], 1), 4, 3)
    ]
    (only,) = hanging
    assert only.transactional_id == "rec-hang-0"
    assert only.coordinator_state is TxnState.EMPTY
    assert only.reason is HangingReason.PARTITION_NOT_IN_TRANSACTION


def test_recorded_responses_with_the_default_max_timeout_find_nothing_hanging() -> None:
    now, listings, descriptions, producers = _recorded()
    assert find_hanging(producers, listings, descriptions, now=now, max_transaction_timeout_ms=15 * MINUTE) == []
    # Twenty minutes later both open transactions are old enough to be candidates, and only the
    # one the coordinator does not cover is hanging.
    later = now + dt.timedelta(minutes=20)
    hanging = find_hanging(producers, listings, descriptions, now=later, max_transaction_timeout_ms=15 * MINUTE)
    assert [h.producer.producer_id for h in hanging] == [4]


def test_recorded_responses_list_the_sigkilled_transaction_as_lingering() -> None:
    now, _, descriptions, _ = _recorded()
    found = find_lingering("rec", [d for d in descriptions.values() if d], now, 60_000)
    assert [item.transaction.transactional_id for item in found] == ["rec-0"]
    assert found[0].age_ms == RECORDED["now_ms"] - 1795315199975
    assert found[0].timeout_ms == 300_000 and found[0].young and not found[0].overdue
