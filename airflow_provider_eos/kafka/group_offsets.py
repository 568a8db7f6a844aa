"""The sink group's committed offsets and their batch markers, read and written through the admin API."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.markers import CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.topic_partition import TopicPartition


class GroupOffsetsError(EosError):
    """The sink group's offsets could not be read or written."""


def read_committed_offsets(
    admin: AdminClient, group_id: str, partitions: Iterable[TopicPartition], *, timeout_s: float = 30
) -> CommittedOffsets:
    """Committed offset and metadata per partition; ``None`` where the group has none.

    ``require_stable`` makes the coordinator resolve a pending transactional offset commit
    first, so a commit in flight is never mistaken for the previous batch's state.
    """
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    request = ConsumerGroupTopicPartitions(group_id, [KafkaTopicPartition(t, p) for t, p in wanted])
    try:
        result = admin.list_consumer_group_offsets([request], require_stable=True)[group_id].result(timeout_s)
    except KafkaException as exc:
        raise GroupOffsetsError(
            f"could not read committed offsets of group {group_id!r}: {exc}",
            fix="check that the broker is reachable with the spec's kafka settings and that the principal may "
            "Describe the group",
        ) from exc
    found: CommittedOffsets = dict.fromkeys(wanted)
    for tp in result.topic_partitions:
        if tp.error is not None:
            raise GroupOffsetsError(f"group {group_id!r} partition {tp.topic}-{tp.partition}: {tp.error}")
        if tp.offset >= 0:
            found[TopicPartition(tp.topic, tp.partition)] = CommittedOffset(tp.offset, tp.metadata or "")
    return found


def write_committed_offsets(
    admin: AdminClient, group_id: str, offsets: Mapping[TopicPartition, tuple[int, str]], *, timeout_s: float = 30
) -> None:
    """Commit ``{partition: (offset, metadata)}`` for a group without members (repairs only)."""
    request = ConsumerGroupTopicPartitions(
        group_id, [KafkaTopicPartition(t, p, off, meta) for (t, p), (off, meta) in sorted(offsets.items())]
    )
    try:
        admin.alter_consumer_group_offsets([request])[group_id].result(timeout_s)
    except KafkaException as exc:
        raise GroupOffsetsError(
            f"could not write offsets of group {group_id!r}: {exc}",
            fix="the group must have no active members (stop the job first)",
        ) from exc
