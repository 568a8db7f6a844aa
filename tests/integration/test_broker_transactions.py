"""The devstack broker is a real, transactional Kafka: the guarantees the sink builds on."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from tests.support.kafka import consume_all, end_offsets, produce

pytestmark = pytest.mark.integration


def _txn_producer(bootstrap: str, txn_id: str | None = None) -> Producer:
    producer = Producer({
        "bootstrap.servers": bootstrap, "transactional.id": txn_id or f"test-{uuid.uuid4()}",
        "transaction.timeout.ms": 60_000,
    })
    producer.init_transactions(30)
    return producer


def _values(records) -> list[bytes]:
    return [r.value() for r in records]


def test_committed_visible_aborted_invisible_to_read_committed(bootstrap, topic_factory):
    topic = topic_factory("txn")
    producer = _txn_producer(bootstrap)
    producer.begin_transaction()
    producer.produce(topic, b"committed-1")
    producer.produce(topic, b"committed-2")
    producer.commit_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, b"aborted-1")
    producer.flush(30)
    producer.abort_transaction(30)

    assert _values(consume_all(bootstrap, topic)) == [b"committed-1", b"committed-2"]
    # The aborted record really reached the log: read_uncommitted sees it.
    assert b"aborted-1" in _values(consume_all(bootstrap, topic, isolation="read_uncommitted"))


def test_open_transaction_pins_lso_until_commit(bootstrap, topic_factory):
    topic = topic_factory("lso")
    produce(bootstrap, topic, [(None, b"before")])
    producer = _txn_producer(bootstrap)
    producer.begin_transaction()
    producer.produce(topic, b"pending")
    producer.flush(30)

    lso = end_offsets(bootstrap, topic, 1, committed=True)
    hwm = end_offsets(bootstrap, topic, 1, committed=False)
    assert lso[0] == 1 and hwm[0] == 2, (lso, hwm)
    assert _values(consume_all(bootstrap, topic, idle_s=1)) == [b"before"]

    producer.commit_transaction(30)
    lso = end_offsets(bootstrap, topic, 1, committed=True)
    hwm = end_offsets(bootstrap, topic, 1, committed=False)
    assert lso == hwm and lso[0] == 3  # the commit marker occupies offset 2
    assert _values(consume_all(bootstrap, topic)) == [b"before", b"pending"]


def test_same_transactional_id_fences_the_old_producer_and_aborts_its_transaction(bootstrap, topic_factory):
    topic = topic_factory("fence")
    txn_id = f"fence-{uuid.uuid4()}"
    old = _txn_producer(bootstrap, txn_id)
    old.begin_transaction()
    old.produce(topic, b"zombie")
    old.flush(30)

    new = _txn_producer(bootstrap, txn_id)  # init_transactions aborts the open transaction
    new.begin_transaction()
    new.produce(topic, b"fresh")
    new.commit_transaction(30)

    with pytest.raises(KafkaException) as raised:
        old.commit_transaction(30)
    assert raised.value.args[0].fatal() or "fenced" in str(raised.value).lower(), raised.value

    assert _values(consume_all(bootstrap, topic)) == [b"fresh"]
    assert b"zombie" in _values(consume_all(bootstrap, topic, isolation="read_uncommitted"))


def test_send_offsets_to_transaction_commits_group_offsets_with_metadata(bootstrap, topic_factory):
    source, sink = topic_factory("src", partitions=2), topic_factory("sink")
    group = f"sink-group-{uuid.uuid4()}"
    # A consumer that never subscribes supplies the group metadata (generation -1), exactly
    # like the sink, which must not join its own group.
    metadata_consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    producer = _txn_producer(bootstrap)
    producer.begin_transaction()
    producer.produce(sink, b"out")
    offsets = [TopicPartition(source, 0, 17, "eos1:q:4"), TopicPartition(source, 1, 5, "eos1:q:4")]
    producer.send_offsets_to_transaction(offsets, metadata_consumer.consumer_group_metadata(), 30)
    producer.commit_transaction(30)
    metadata_consumer.close()

    admin = AdminClient({"bootstrap.servers": bootstrap})
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(source, 0), TopicPartition(source, 1)])
    result = admin.list_consumer_group_offsets([request], require_stable=True)[group].result(30)
    got = {tp.partition: (tp.offset, tp.metadata) for tp in result.topic_partitions}
    assert got == {0: (17, "eos1:q:4"), 1: (5, "eos1:q:4")}


@pytest.mark.spark
def test_spark_reads_only_committed_records(bootstrap, topic_factory, spark):
    topic = topic_factory("spark-in", partitions=2)
    producer = _txn_producer(bootstrap)
    for i in range(4):
        producer.begin_transaction()
        for j in range(5):
            producer.produce(topic, f"{i}-{j}".encode(), key=str(j).encode())
        if i % 2:
            producer.flush(30)
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)
    time.sleep(0.5)
    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("kafka.isolation.level", "read_committed")
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
        .selectExpr("CAST(value AS STRING) AS v")
        .collect()
    )
    assert sorted(r.v for r in rows) == sorted(f"{i}-{j}" for i in (0, 2) for j in range(5))
