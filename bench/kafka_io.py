"""The bench's Kafka chores: topics, end offsets, input production and read_committed reads."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterable
from typing import Any

from confluent_kafka import Consumer, IsolationLevel, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic, OffsetSpec

from bench.records import TRACE_HEADER


def unique(stem: str) -> str:
    return f"{stem}-{uuid.uuid4().hex[:8]}"


def create_topics(bootstrap: str, names: Iterable[str], partitions: int) -> list[str]:
    """Create topics and wait until the cluster metadata lists their partitions."""
    names = list(names)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names], operation_timeout=60).values():
        future.result(60)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        topics = admin.list_topics(timeout=10).topics
        if all(n in topics and topics[n].error is None and len(topics[n].partitions) == partitions for n in names):
            return names
        time.sleep(0.2)
    raise TimeoutError(f"topics {names[:3]}... not ready")


def delete_topics(bootstrap: str, names: Iterable[str]) -> None:
    """Delete topics the bench no longer needs (keeps the broker's disk small); errors are ignored."""
    names = list(names)
    if not names:
        return
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.delete_topics(names, operation_timeout=60).values():
        with contextlib.suppress(Exception):
            future.result(60)


def end_offsets(bootstrap: str, topic: str, partitions: int, *, committed: bool) -> dict[int, int]:
    """Per partition: the last stable offset (``committed=True``) or the high watermark."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    isolation = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(partitions)}
    result = admin.list_offsets(request, isolation_level=isolation, request_timeout=30)
    return {tp.partition: future.result(30).offset for tp, future in result.items()}


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes, bytes]], *, headers_every: int = 0) -> int:
    """Produce input records (idempotent producer, not transactional); returns the count. With
    ``headers_every=k`` every k-th record carries a :data:`TRACE_HEADER` header (16 bytes)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "enable.idempotence": True,
                         "queue.buffering.max.messages": 500_000})
    count = 0
    for key, value in records:
        headers = [(TRACE_HEADER, b"%016x" % count)] if headers_every and count % headers_every == 0 else None
        while True:
            try:
                producer.produce(topic, value=value, key=key, headers=headers)
                break
            except BufferError:
                producer.poll(0.05)
        count += 1
        if count % 50_000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    if remaining:
        raise RuntimeError(f"{remaining} input record(s) not delivered to {topic}")
    return count


def read_committed_consumer(bootstrap: str, **extra: Any) -> Consumer:
    """A ``read_committed`` consumer without a group of its own (partitions are assigned, not subscribed)."""
    return Consumer({
        "bootstrap.servers": bootstrap, "group.id": unique("bench-reader"), "enable.auto.commit": False,
        "isolation.level": "read_committed", "auto.offset.reset": "earliest", **extra,
    })
