"""The JVM executor writer's read of the sink group's offset against the real broker (through py4j).

The coordinator answers a stable read of a partition whose offsets a transaction holds pending
with ``UNSTABLE_OFFSET_COMMIT`` on that partition, which the Java ``Admin`` drops from its result:
the writer's task must wait for the commit to settle, never take the partition for one without a
commit (a task of batch N > 0 then failed as inconsistent; of batch 0 it decided to produce).
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def test_a_pending_commit_is_waited_for_not_read_as_nothing_committed(spark, bootstrap, topic_factory) -> None:
    topic = topic_factory("pending-offsets")
    group = f"g-{uuid.uuid4().hex[:8]}"
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"t-{uuid.uuid4().hex[:8]}",
                         "transaction.timeout.ms": 60_000})
    handle = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    producer.init_transactions(30)

    def commit_batch(offset: int) -> None:
        producer.begin_transaction()
        producer.send_offsets_to_transaction([KafkaTopicPartition(topic, 0, offset, f"m{offset}")],
                                             handle.consumer_group_metadata(), 30)

    commit_batch(7)
    producer.commit_transaction(30)
    commit_batch(8)  # batch 8's offsets pending while the task reads
    settle = threading.Timer(3.0, producer.commit_transaction, args=(30,))
    jvm = spark.sparkContext._jvm
    read = jvm.io.github.airflowprovidereos.writer.CommittedOffsets.read
    partition = jvm.org.apache.kafka.common.TopicPartition(topic, 0)
    try:
        settle.start()
        started = time.monotonic()
        found = read({"bootstrap.servers": bootstrap}, group, partition)
        waited = time.monotonic() - started
    finally:
        settle.join()
        handle.close()
    assert found is not None, "a pending commit was read as nothing committed"
    # confluent-kafka's commits carry librdkafka's NUL terminator in the metadata (the markers' parser allows it).
    assert (found.offset(), found.metadata().rstrip("\0")) == (8, "m8")
    assert waited >= 2.5, f"answered in {waited:.1f}s, before the pending commit settled"
    # Settled, the same read answers at once; a group without a commit for the partition is None.
    assert read({"bootstrap.servers": bootstrap}, group, partition).offset() == 8
    assert read({"bootstrap.servers": bootstrap}, f"{group}-none", partition) is None
