"""Test-side Kafka helpers: create topics, await the group coordinator, produce, read back at an isolation level.

Each takes the cluster as a bootstrap string (the plaintext devstack) or as a librdkafka settings
dict (a secured devstack's ``client.config``: the admin's SASL/TLS settings).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from airflow_provider_eos.core.retry import RetryPolicy

Cluster = str | Mapping[str, Any]


TOPIC_IN_METADATA = RetryPolicy(waiting_for="a new topic in a broker's metadata", timeout_s=30, first_delay_s=0.1,
                                max_delay_s=0.2)


def client_settings(cluster: Cluster) -> dict[str, Any]:
    """librdkafka settings for ``cluster``: a bootstrap string, or a settings dict (copied)."""
    return {"bootstrap.servers": cluster} if isinstance(cluster, str) else dict(cluster)


def create_topic(bootstrap: Cluster, name: str, partitions: int = 1, config: dict | None = None, *,
                 replicas: int = -1) -> str:
    """Create ``name`` and return once every broker's metadata has its partitions with leaders.

    :param replicas: the replication factor; -1 is the cluster's default (1 on one node, 3 on
        ``--brokers 3``).
    """
    settings = client_settings(bootstrap)
    creator = AdminClient(settings)  # held until the answer: a collected client fails its futures with _DESTROY
    creator.create_topics([NewTopic(name, partitions, replicas, config=config or {})])[name].result(30)
    # Metadata propagates asynchronously from the controller to each broker, and a client asks any
    # broker it knows: ask each broker through a fresh client that knows only that one.
    for server in settings["bootstrap.servers"].split(","):
        only = {**settings, "bootstrap.servers": server}
        if not TOPIC_IN_METADATA.poll(lambda only=only: _topic_ready(only, name, partitions), until=bool,
                                      what=f"topic {name} on broker {server}").settled:
            raise TimeoutError(f"topic {name} not in the metadata of broker {server} after "
                               f"{TOPIC_IN_METADATA.timeout_s:g} s")
    return name


def _topic_ready(settings: dict[str, Any], name: str, partitions: int) -> bool:
    topic = AdminClient(settings).list_topics(name, timeout=10).topics.get(name)
    return (topic is not None and topic.error is None and len(topic.partitions) == partitions
            and all(p.leader >= 0 for p in topic.partitions.values()))


def wait_for_group_coordinator(bootstrap: Cluster, topic: str, timeout_s: float = 60) -> None:
    """Wait until the broker's group coordinator serves offset commits and reads.

    A fresh broker creates and loads ``__consumer_offsets`` on first use and answers
    NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS meanwhile; the code under test (and
    ``write_committed_offsets``) would see those as failures, so tests start once it is ready.
    """
    group = f"warm-up-{uuid.uuid4().hex[:8]}"
    tp = TopicPartition(topic, 0, 0, "")
    deadline = time.monotonic() + timeout_s
    while True:
        # A fresh client per attempt: reusing one after a coordinator error crashed librdkafka here.
        admin = AdminClient(client_settings(bootstrap))
        try:
            result = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [tp])])[group].result(30)
            if all(p.error is None for p in result.topic_partitions):
                read = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])
                admin.list_consumer_group_offsets([read])[group].result(30)
                return
        except KafkaException:
            pass
        if time.monotonic() > deadline:
            servers = client_settings(bootstrap)["bootstrap.servers"]
            raise TimeoutError(f"the group coordinator of {servers} did not become ready in {timeout_s}s")
        time.sleep(0.5)


def produce(bootstrap: Cluster, topic: str, records: Iterable[tuple[bytes | None, bytes]], **conf) -> int:
    producer = Producer({**client_settings(bootstrap), "linger.ms": 5, **conf})
    count = 0
    for key, value in records:
        producer.produce(topic, value=value, key=key)
        count += 1
        if count % 10_000 == 0:
            producer.flush(30)
    assert producer.flush(30) == 0
    return count


def consume_all(
    bootstrap: Cluster,
    topic: str,
    *,
    isolation: str = "read_committed",
    idle_s: float = 0.0,
    timeout_s: float = 60,
) -> list:
    """Every record of ``topic`` from the beginning, as seen at ``isolation``.

    Done once every partition has reported its end (librdkafka's partition EOF: the fetch position
    reached the high watermark, or the LSO at ``read_committed``) with nothing after it: an event,
    not a quiet period. ``idle_s`` waits that much longer for records that may still arrive.
    """
    consumer = Consumer({
        **client_settings(bootstrap), "group.id": f"reader-{uuid.uuid4()}", "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "isolation.level": isolation, "enable.partition.eof": True,
    })
    metadata = consumer.list_topics(topic, timeout=10).topics[topic]
    consumer.assign([TopicPartition(topic, p, 0) for p in metadata.partitions])
    records, eof = [], set()
    deadline = time.monotonic() + timeout_s
    last = time.monotonic()
    try:
        while time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                if len(eof) == len(metadata.partitions) and time.monotonic() - last > idle_s:
                    break
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF
                    eof.add(msg.partition())
                    continue
                raise KafkaException(msg.error())
            last = time.monotonic()
            eof.discard(msg.partition())
            records.append(msg)
    finally:
        consumer.close()
    return records


def end_offsets(bootstrap: Cluster, topic: str, partitions: int, *, committed: bool) -> dict[int, int]:
    """Per partition: the last stable offset (``committed=True``) or the high watermark."""
    admin = AdminClient(client_settings(bootstrap))
    isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    result = admin.list_offsets(request, isolation_level=isolation)
    return {tp.partition: fut.result(30).offset for tp, fut in result.items()}
