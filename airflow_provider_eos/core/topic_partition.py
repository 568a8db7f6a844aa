"""The (topic, partition) key every offset map in this package uses, and the row model keyed by it."""

from __future__ import annotations

from typing import Any, NamedTuple

from pydantic import BaseModel, ConfigDict


class TopicPartition(NamedTuple):
    """A Kafka topic partition, hashable and ordered, independent of any client library."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


OffsetMap = dict[TopicPartition, int]


class PartitionRow(BaseModel):
    """Base of the frozen pydantic models that describe one partition (a report row, a sample).

    The partition is two fields, ``topic`` and ``partition``, so the JSON form names it by both
    keys (not ``"topic-N"``: topic names may contain ``-``) and serializes without Python code
    per row; :attr:`tp` is the key the code works with. Build a row with ``tp`` (positionally
    or by keyword) or with ``topic`` and ``partition``.
    """

    model_config = ConfigDict(frozen=True)

    topic: str
    partition: int

    def __init__(self, tp: TopicPartition | None = None, /, **data: Any) -> None:
        tp = data.pop("tp", tp)
        if tp is not None:
            data["topic"], data["partition"] = tp
        super().__init__(**data)

    @property
    def tp(self) -> TopicPartition:
        """The partition as the key of offset maps."""
        return TopicPartition(self.topic, self.partition)
