"""The stable reads of the sink group's offsets against the real broker: the JVM executor writer's
(through py4j) and the Python one every other reader uses.

The coordinator answers a stable read of a partition whose offsets a transaction holds pending
with ``UNSTABLE_OFFSET_COMMIT`` on that partition, which the Java ``Admin`` drops from its result:
the writer's task must wait for the commit to settle, never take the partition for one without a
commit (a task of batch N > 0 then failed as inconsistent; of batch 0 it decided to produce).
Both readers wait as long as a transaction of the spec's ``transaction_timeout_ms`` can be open,
plus a margin (``core/transactions/stable_read.py``), not a fixed 60 s.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions.stable_read import STABLE_READ_MARGIN_MS, stable_read_timeout_ms
from airflow_provider_eos.kafka.group_offsets import GroupOffsetsError, read_committed_offsets

pytestmark = [pytest.mark.integration, pytest.mark.spark]

#: The default spec's wait: far longer than the few seconds the first test's commit stays pending.
DEFAULT_WAIT_MS = stable_read_timeout_ms(60_000)


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
        found = read({"bootstrap.servers": bootstrap}, group, partition, DEFAULT_WAIT_MS)
        waited = time.monotonic() - started
    finally:
        settle.join()
        handle.close()
    assert found is not None, "a pending commit was read as nothing committed"
    # confluent-kafka's commits carry librdkafka's NUL terminator in the metadata (the markers' parser allows it).
    assert (found.offset(), found.metadata().rstrip("\0")) == (8, "m8")
    assert waited >= 2.5, f"answered in {waited:.1f}s, before the pending commit settled"
    # Settled, the same read answers at once; a group without a commit for the partition is None.
    assert read({"bootstrap.servers": bootstrap}, group, partition, DEFAULT_WAIT_MS).offset() == 8
    assert read({"bootstrap.servers": bootstrap}, f"{group}-none", partition, DEFAULT_WAIT_MS) is None


def test_a_commit_pending_past_the_wait_fails_both_readers_after_the_specs_transaction_timeout(
        spark, bootstrap, topic_factory) -> None:
    """A zombie's transaction (a lost task's: its producer holds it open for 10 minutes) keeps the
    group's offsets pending. With a spec whose transaction_timeout_ms is 1 s, both readers give up
    after 1 s plus the margin, well before 60 s, naming the group and the pending partition; a
    fixed 60 s wait (the old bound) fails the timing."""
    topic = topic_factory("held-offsets")
    group = f"g-{uuid.uuid4().hex[:8]}"
    spec_timeout_ms = 1_000
    zombie = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"zombie-{uuid.uuid4().hex[:8]}",
                       "transaction.timeout.ms": 600_000})
    handle = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.send_offsets_to_transaction([KafkaTopicPartition(topic, 0, 5, "m5")], handle.consumer_group_metadata(), 30)
    python_side: dict = {}

    def python_read() -> None:
        started = time.monotonic()
        try:
            read_committed_offsets(AdminClient({"bootstrap.servers": bootstrap}), group, [TopicPartition(topic, 0)],
                                   transaction_timeout_ms=spec_timeout_ms)
        except GroupOffsetsError as exc:
            python_side["error"] = exc
        python_side["waited"] = time.monotonic() - started

    jvm = spark.sparkContext._jvm
    reader = threading.Thread(target=python_read)
    try:
        reader.start()
        started = time.monotonic()
        with pytest.raises(Exception) as raised:  # py4j's Py4JJavaError
            jvm.io.github.airflowprovidereos.writer.CommittedOffsets.read(
                {"bootstrap.servers": bootstrap}, group, jvm.org.apache.kafka.common.TopicPartition(topic, 0),
                stable_read_timeout_ms(spec_timeout_ms))
        jvm_waited = time.monotonic() - started
        reader.join(120)
    finally:
        zombie.abort_transaction(30)
        handle.close()
    bound_s = stable_read_timeout_ms(spec_timeout_ms) / 1000
    java_error = raised.value.java_exception
    assert java_error.getClass().getName().endswith("CommittedOffsets$StillPending"), str(raised.value)
    assert f"group {group} {topic}-0 still has a pending transactional offset commit" in java_error.getMessage()
    assert bound_s - 1 <= jvm_waited < bound_s + 10, f"the JVM read gave up after {jvm_waited:.1f}s"

    error = python_side.get("error")
    assert error is not None, f"the Python read did not fail: {python_side}"
    assert bound_s - 1 <= python_side["waited"] < bound_s + 10, f"the Python read gave up after {python_side}"
    assert f"group {group!r} still holds a pending transactional offset commit on {topic}-0" in error.message
    assert f"transaction_timeout_ms {spec_timeout_ms} plus {STABLE_READ_MARGIN_MS // 1000} s" in error.message
    assert "eos abort --spec <spec file> --execute" in error.fix


def test_the_sinks_close_closes_its_unused_admin_client(spark, bootstrap) -> None:
    """The executor JVM's admin client of a config is closed by the sink's close (local mode) once no read
    uses it, and made again by the next read."""
    jvm = spark.sparkContext._jvm
    offsets = jvm.io.github.airflowprovidereos.writer.CommittedOffsets
    registry = jvm.io.github.airflowprovidereos.writer.DriverRegistry
    # A config of its own (an extra client.id), so no other test's admin counts.
    config = {"bootstrap.servers": bootstrap, "client.id": f"admin-{uuid.uuid4().hex[:8]}"}
    partition = jvm.org.apache.kafka.common.TopicPartition("no-such-topic-read", 0)
    before = offsets.openAdmins()
    assert offsets.read(config, f"g-{uuid.uuid4().hex[:8]}", partition, DEFAULT_WAIT_MS) is None
    assert offsets.openAdmins() == before + 1, "the read's admin is kept for the next batch's reads"
    handle = uuid.uuid4().hex
    registry.putConfig(handle, json.dumps({"bootstrap.servers": bootstrap}), json.dumps(config))
    registry.forgetConfig(handle, "[]")
    assert offsets.openAdmins() == before, "the sink's close left its unused admin open"
    assert offsets.read(config, f"g-{uuid.uuid4().hex[:8]}", partition, DEFAULT_WAIT_MS) is None
