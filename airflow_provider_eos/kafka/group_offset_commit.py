"""The repairs' write of the sink group's offsets (align, rewind ``--execute``): over kafka-python's OffsetCommit.

librdkafka 2.16 aborts the whole process when a coordinator-targeted admin request loses its connection
(confluentinc/librdkafka issue 4605, design notes 83 to 88), its AlterConsumerGroupOffsets among them. The
repairs run at an on-call engineer's prompt or in the recovery DAG's task, after brokers misbehaved: a lost
connection must be the typed :class:`~airflow_provider_eos.core.errors.KafkaWriteNoAnswerError` ("the write
may have gone through: verify first"), never a dead process. The metadata is committed in the form
librdkafka stores (:func:`~airflow_provider_eos.kafka.group_offsets.stored_metadata`), so every reader, the
JVM writer's included, finds the marker it always found.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from airflow_provider_eos.core.acls import ResourceType
from airflow_provider_eos.core.errors import KafkaNoAnswerError, KafkaWriteNoAnswerError, RetryExhaustedError
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.denials import Names, raise_if_refused
from airflow_provider_eos.kafka.group_offset_fetch import (
    COORDINATOR_NOT_READY,
    forget_coordinator,
    raise_coordinator_request_error,
)
from airflow_provider_eos.kafka.group_offsets import GroupOffsetsError, stored_metadata
from airflow_provider_eos.kafka.retriable import COORDINATOR_LOADING, CoordinatorNotReady
from airflow_provider_eos.kafka.transactions_admin import answered_within

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

__all__ = ["commit_group_offsets"]


def commit_group_offsets(
    admin: KafkaAdminClient, group_id: str, offsets: Mapping[TopicPartition, tuple[int, str]], *, timeout_s: float,
) -> None:
    """Commit ``{partition: (offset, metadata)}`` for a group without members (repairs only).

    :param admin: a connected kafka-python admin client
        (:func:`~airflow_provider_eos.kafka.transactions_admin.admin_client`).
    :param timeout_s: how long a coordinator that is loading the group, or moved, is waited for (the write is
        sent again: a coordinator that was not ready applied nothing).
    :raises KafkaWriteNoAnswerError: the OffsetCommit got no answer: the broker may have applied it, so what the
        group holds is unknown until verify reads it (not retryable as is).
    :raises AclMissingError: the principal may not commit to the group or the topics.
    :raises GroupOffsetsError: the group refused the offsets, or the coordinator stayed unavailable.
    """
    from kafka.errors import KafkaError as KafkaPythonError
    from kafka.structs import OffsetAndMetadata
    from kafka.structs import TopicPartition as KafkaTopicPartition

    if not offsets:
        return
    what = f"OffsetCommit({group_id!r})"
    names = {ResourceType.GROUP: [group_id], ResourceType.TOPIC: sorted({t for t, _ in offsets})}
    committed = {KafkaTopicPartition(topic, partition): OffsetAndMetadata(offset, stored_metadata(metadata), None)
                 for (topic, partition), (offset, metadata) in sorted(offsets.items())}

    def attempt() -> None:
        try:
            results = answered_within(admin, what, admin.alter_group_offsets, group_id, committed)
        except KafkaNoAnswerError as exc:
            raise _write_unanswered(exc) from exc
        except KafkaPythonError as exc:
            _raise_typed(admin, group_id, what, names, exc)
        _raise_refused_partitions(admin, group_id, what, names, results)

    try:
        COORDINATOR_LOADING.bounded(timeout_s=timeout_s).call(attempt, what=what)
    except RetryExhaustedError as exc:
        raise GroupOffsetsError(f"could not write offsets of group {group_id!r}: {exc.message}",
                                fix="the group must have no active members (stop the job first)") from exc


def _write_unanswered(unanswered: KafkaNoAnswerError) -> KafkaWriteNoAnswerError:
    """No answer to a write says nothing about it: the broker may have applied it."""
    return KafkaWriteNoAnswerError(unanswered.brokers, unanswered.what, unanswered.timeout_s, detail=unanswered.detail)


def _raise_typed(admin: KafkaAdminClient, group_id: str, what: str, names: Names, exc: BaseException) -> NoReturn:
    """Raise the package's error for kafka-python's ``exc`` (the whole request failed)."""
    try:
        raise_coordinator_request_error(admin, group_id, what, "OffsetCommit", names, exc)
    except KafkaNoAnswerError as unanswered:
        raise _write_unanswered(unanswered) from exc
    raise GroupOffsetsError(f"could not write offsets of group {group_id!r}: {type(exc).__name__}: {exc}",
                            fix="the group must have no active members (stop the job first)") from exc


def _raise_refused_partitions(admin: KafkaAdminClient, group_id: str, what: str, names: Names,
                              results: Mapping[Any, Any]) -> None:
    """Raise for the partitions the answer carries an error for (kafka-python's error classes, ``NoError`` if none)."""
    from kafka.errors import NoError

    errors = {tp: error for tp, error in results.items() if error is not NoError}
    if any(error.errno in COORDINATOR_NOT_READY for error in errors.values()):
        forget_coordinator(admin, group_id)  # a coordinator that was not ready applied nothing: sent again
        raise CoordinatorNotReady(f"{what}: {next(iter(errors.values())).__name__}")
    for tp, error in errors.items():
        raise_if_refused(error(), "OffsetCommit", {**names, ResourceType.TOPIC: [tp.topic]})
    if errors:
        detail = ", ".join(f"{tp.topic}-{tp.partition}: {error.__name__}" for tp, error in sorted(errors.items()))
        raise GroupOffsetsError(
            f"group {group_id!r} refused offsets for {detail}; nothing is guaranteed committed",
            fix="the group must have no active members (stop the job first) and the principal needs Read on it",
        )
