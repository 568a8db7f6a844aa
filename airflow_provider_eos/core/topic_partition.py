"""The (topic, partition) key every offset map in this package uses."""

from __future__ import annotations

from typing import NamedTuple


class TopicPartition(NamedTuple):
    """A Kafka topic partition, hashable and ordered, independent of any client library."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


OffsetMap = dict[TopicPartition, int]
