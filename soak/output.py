"""Reading a phase's output back (streamed: a million records), and its throughput from the job's logs."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

_PARTITION_EOF = -191
_PROGRESS = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3}) .*?EOS-PROGRESS (\{.*\})\s*$")


def read_topic(settings: dict[str, Any], topic: str, on_record: Callable[[int, bytes], None], *,
               isolation: str = "read_committed", idle_s: float = 3.0, timeout_s: float = 1800) -> int:
    """Feed every record of ``topic`` (per partition in offset order) to ``on_record(partition, value)``
    until every partition is at its end; returns the count."""
    consumer = Consumer({**settings, "group.id": f"soak-reader-{uuid.uuid4().hex[:8]}", "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": isolation,
                         "enable.partition.eof": True})
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
    count, eof = 0, set()
    deadline, last = time.monotonic() + timeout_s, time.monotonic()
    try:
        while time.monotonic() < deadline:
            batch = consumer.consume(10_000, 0.5)
            if not batch:
                if len(eof) == len(partitions) and time.monotonic() - last > idle_s:
                    return count
                continue
            for msg in batch:
                if msg.error():
                    if msg.error().code() == _PARTITION_EOF:
                        eof.add(msg.partition())
                        continue
                    raise KafkaException(msg.error())
                eof.discard(msg.partition())
                on_record(msg.partition(), msg.value())
                count += 1
            last = time.monotonic()
        raise TimeoutError(f"reading {topic} did not finish within {timeout_s:.0f}s ({count} records read)")
    finally:
        consumer.close()


def read_values(settings: dict[str, Any], topic: str) -> list[bytes]:
    values: list[bytes] = []
    read_topic(settings, topic, lambda _p, v: values.append(v))
    return values


def progress_points(lines: Iterable[str]) -> list[tuple[float, int]]:
    """(epoch seconds, records written) per finished batch from the job's ``EOS-PROGRESS`` lines.

    Records written: the sink's output and dead letters when it reports them, else the batch's input
    rows (Spark's at-least-once writer reports no counts); replayed batches that were skipped count 0.
    """
    points = []
    for line in lines:
        found = _PROGRESS.match(line)
        if not found:
            continue
        try:
            data = json.loads(found.group(3))
        except ValueError:
            continue
        stamp = time.mktime(time.strptime(found.group(1), "%Y-%m-%d %H:%M:%S")) + int(found.group(2)) / 1000
        if data.get("replay_skipped"):
            rows = 0
        elif data.get("rows_out") or data.get("rows_dlq"):
            rows = int(data.get("rows_out") or 0) + int(data.get("rows_dlq") or 0)
        else:
            rows = int(data.get("rows_in") or 0)
        points.append((stamp, rows))
    return points


def log_points(logs: Iterable[Path]) -> list[tuple[float, int]]:
    points: list[tuple[float, int]] = []
    for path in logs:
        with path.open(errors="replace") as lines:
            points += progress_points(lines)
    return sorted(points)


def rate_series(points: list[tuple[float, int]], start: float, end: float, bucket_s: float) -> list[float]:
    """Records per second in consecutive buckets of ``bucket_s`` from ``start`` to ``end``."""
    buckets = max(1, int((end - start) // bucket_s) + 1)
    totals = [0.0] * buckets
    for stamp, rows in points:
        slot = int((stamp - start) // bucket_s)
        if 0 <= slot < buckets:
            totals[slot] += rows
    return [round(t / bucket_s, 1) for t in totals]
