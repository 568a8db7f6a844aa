"""The (topic, partition) key every offset map in this package uses, and its two JSON forms as an object.

A partition is shown in JSON by both keys, ``topic`` and ``partition`` (not ``"topic-N"``:
topic names may contain ``-``). A row about one partition carries them as its own fields
(:class:`PartitionRow`); a partition held as a value (a list of partitions in a plan) is one
``{"topic": ..., "partition": ...}`` object (:data:`PartitionObject`). The transaction reports
keep the ``topic-N`` spelling the Kafka tools print
(:data:`~airflow_provider_eos.core.transactions.admin_reports.PartitionName`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, NamedTuple

from pydantic import BeforeValidator, PlainSerializer

from airflow_provider_eos.core.frozen_model import FrozenModel

__all__ = ["OffsetMap", "PartitionObject", "PartitionRow", "TopicPartition"]


class TopicPartition(NamedTuple):
    """A Kafka topic partition, hashable and ordered, independent of any client library."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


OffsetMap = dict[TopicPartition, int]


def _partition_from_json(value: Any) -> Any:
    if isinstance(value, Mapping) and "topic" in value and "partition" in value:
        return TopicPartition(str(value["topic"]), int(value["partition"]))
    return value


def _partition_to_json(tp: TopicPartition) -> dict[str, Any]:
    return {"topic": tp.topic, "partition": tp.partition}


PartitionObject = Annotated[
    TopicPartition,
    BeforeValidator(_partition_from_json),
    PlainSerializer(_partition_to_json, return_type=dict[str, Any], when_used="json"),
]
"""A partition field that JSON shows as ``{"topic": ..., "partition": ...}``."""


class PartitionRow(FrozenModel):
    """Base of the frozen pydantic models that describe one partition (a report row, a sample).

    The partition is two fields, ``topic`` and ``partition``, so the JSON form names it by both
    keys and serializes without Python code per row; :attr:`tp` is the key the code works with.
    Build a row with ``tp=`` or with ``topic=`` and ``partition=``.
    """

    topic: str
    partition: int

    def __init__(self, *, tp: TopicPartition | None = None, **data: Any) -> None:
        if tp is not None:
            data["topic"], data["partition"] = tp
        super().__init__(**data)

    @property
    def tp(self) -> TopicPartition:
        """The partition as the key of offset maps."""
        return TopicPartition(self.topic, self.partition)
