"""The base of the repair plans and results: frozen pydantic models with the repairs' JSON.

``model_dump(mode="json")`` (or ``to_dict()``) is what the recovery operators push to XCom, what
``eos rewind``/``eos align --json`` print and what a rewind's manifest records; ``model_validate``
reads it back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer

from airflow_provider_eos.core.topic_partition import TopicPartition

__all__ = ["PartitionObject", "RepairModel"]


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
"""A partition that JSON shows as ``{"topic": ..., "partition": ...}`` (topic names may hold ``-``)."""


class RepairModel(BaseModel):
    """Frozen model whose computed fields may be serialized under an alias."""

    model_config = ConfigDict(frozen=True, serialize_by_alias=True)

    def to_dict(self) -> dict[str, Any]:
        """The model as JSON-serializable values (``model_dump(mode="json")``)."""
        return self.model_dump(mode="json")
