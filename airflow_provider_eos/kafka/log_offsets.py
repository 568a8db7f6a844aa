"""ListOffsets through confluent-kafka: the last stable offset, the high watermark, the log start."""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka import IsolationLevel
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from airflow_provider_eos.core.topic_partition import TopicPartition


def list_log_offsets(
    admin: AdminClient,
    partitions: Iterable[TopicPartition],
    *,
    offset_spec: OffsetSpec | None = None,
    isolation: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
    timeout_s: float = 30,
) -> dict[TopicPartition, int]:
    """One offset per partition: ``latest`` at ``READ_COMMITTED`` is the LSO, at
    ``READ_UNCOMMITTED`` the high watermark; ``earliest`` is the log start.

    :raises confluent_kafka.KafkaException: as the admin client raises it; callers translate.
    """
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    spec = offset_spec or OffsetSpec.latest()
    request = {KafkaTopicPartition(tp.topic, tp.partition): spec for tp in wanted}
    futures = admin.list_offsets(request, isolation_level=isolation, request_timeout=timeout_s)
    return {TopicPartition(tp.topic, tp.partition): future.result(timeout_s).offset for tp, future in futures.items()}


def pinned_partitions(admin: AdminClient, partitions: Iterable[TopicPartition], *, timeout_s: float = 30) -> set[
        TopicPartition]:
    """Partitions whose last stable offset sits below the high watermark: an open transaction holds them."""
    wanted = list(partitions)
    lso = list_log_offsets(admin, wanted, isolation=IsolationLevel.READ_COMMITTED, timeout_s=timeout_s)
    hwm = list_log_offsets(admin, wanted, isolation=IsolationLevel.READ_UNCOMMITTED, timeout_s=timeout_s)
    return {tp for tp in lso if lso[tp] < hwm[tp]}
