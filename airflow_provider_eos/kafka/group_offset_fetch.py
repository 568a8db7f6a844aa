"""The sink group's committed offsets as the package reads them outside the job: over kafka-python.

librdkafka 2.16 aborts the whole process when a coordinator-targeted admin request (its
ListConsumerGroupOffsets) loses its connection: ``rd_kafka_enq_once_del_source_return: Assertion
'eonce->refcnt > 0' failed`` (confluentinc/librdkafka issue 4605, design notes 83 to 85). A writer's
read is inside the job, whose failure is the job's own; every other reader runs in a process the
package does not own, or in front of a person: the triggerer, which holds every DAG's triggers
(health), a worker's task (pre-flight, verification, the recovery actions) and ``eos verify`` at
an on-call engineer's prompt, all of which are needed most while brokers misbehave. Their read goes
over kafka-python instead, whose lost connection is an exception: the same OffsetFetch with
``require_stable`` (KIP-447), each attempt bounded by
:func:`~airflow_provider_eos.kafka.transactions_admin.answered_within`, retried while a transaction holds
the offsets pending (an observer's capped wait, or the full wait a transaction can last), and read back
as librdkafka reads the markers (:func:`~airflow_provider_eos.kafka.group_offsets.metadata_read_back`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core.acls import ResourceType
from airflow_provider_eos.core.errors import RetryExhaustedError
from airflow_provider_eos.core.markers import CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions.stable_read import (
    observer_stable_read_timeout_ms,
    stable_read_timeout_ms,
)
from airflow_provider_eos.kafka.denials import Names, raise_if_refused
from airflow_provider_eos.kafka.group_offsets import (
    GroupOffsetsError,
    group_read_failed,
    metadata_read_back,
    offset_fetch_request,
    offsets_pending_error,
)
from airflow_provider_eos.kafka.retriable import STABLE_OFFSETS, CoordinatorNotReady, OffsetsPending
from airflow_provider_eos.kafka.transactions_admin import answered_within, raise_if_no_answer

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

__all__ = ["COORDINATOR_NOT_READY", "forget_coordinator", "raise_coordinator_request_error", "read_group_offsets"]

#: OffsetFetch v7 (Kafka 2.5+) is the first with ``require_stable`` and the last naming one group per request.
_OFFSET_FETCH_VERSION = 7
#: Kafka's error codes an answer may carry that this read acts on.
_UNSTABLE_OFFSET_COMMIT = 88
#: Also the group description's (:mod:`.group_description`).
COORDINATOR_NOT_READY = frozenset({14, 15, 16})  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR


def read_group_offsets(
    admin: KafkaAdminClient, group_id: str, partitions: Iterable[TopicPartition], *, transaction_timeout_ms: int,
    observer: bool,
) -> CommittedOffsets:
    """Committed offset and metadata per partition of ``group_id``; ``None`` where the group has none.

    :param admin: a connected kafka-python admin client (:func:`~airflow_provider_eos.kafka.transactions_admin.
        admin_client`); each attempt's deadline is its :func:`~airflow_provider_eos.kafka.transactions_admin.
        call_deadline_s`, and a pending commit is waited for at least one of its request timeouts.
    :param transaction_timeout_ms: the spec's, which bounds how long a pending commit is waited for.
    :param observer: the reader only reports what it sees (health, pre-flight): its wait for a pending commit is
        capped (:func:`~airflow_provider_eos.core.transactions.stable_read.observer_stable_read_timeout_ms`).
        Otherwise (verification, the recovery actions) it waits as long as such a transaction can be open
        (:func:`~airflow_provider_eos.core.transactions.stable_read.stable_read_timeout_ms`), as the writers do.
    :raises KafkaNoAnswerError: no broker answered an attempt within its deadline (retryable).
    :raises AclMissingError: the principal may not describe the group or read a topic's offsets.
    :raises GroupOffsetsError: offsets still pending after the wait, or the group's own error.
    """
    from kafka.errors import KafkaError as KafkaPythonError

    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    what = offset_fetch_request(group_id)
    names = {ResourceType.GROUP: [group_id], ResourceType.TOPIC: sorted({t for t, _ in wanted})}
    request = _request(group_id, wanted)

    def attempt() -> CommittedOffsets:
        try:
            response = answered_within(admin, what, admin._manager.run, _fetch, admin, group_id, request)
        except KafkaPythonError as exc:
            raise_coordinator_request_error(admin, group_id, what, "OffsetFetch", names, exc)
            raise
        return _offsets(admin, group_id, wanted, response, names)

    # Never shorter than one request's timeout (as librdkafka's read was): not the call's whole deadline, which
    # adds a reconnection's and would double an observer's wait.
    wait_ms = (observer_stable_read_timeout_ms if observer else stable_read_timeout_ms)(transaction_timeout_ms)
    stable_s = wait_ms / 1000
    request_s = int(admin.config["request_timeout_ms"]) / 1000
    try:
        return STABLE_OFFSETS.bounded(timeout_s=max(request_s, stable_s)).call(attempt, what=what)
    except RetryExhaustedError as exc:
        if isinstance(exc.last_error, OffsetsPending):
            raise offsets_pending_error(group_id, exc.last_error.partitions, waited_s=exc.elapsed_s,
                                        transaction_timeout_ms=transaction_timeout_ms, observer=observer) from exc
        raise group_read_failed(group_id, exc.message) from exc
    except KafkaPythonError as exc:
        raise group_read_failed(group_id, f"{type(exc).__name__}: {exc}") from exc


def _request(group_id: str, wanted: list[TopicPartition]) -> Any:
    from kafka.protocol.consumer.group import OffsetFetchRequest

    by_topic: dict[str, list[int]] = {}
    for topic, partition in wanted:
        by_topic.setdefault(topic, []).append(partition)
    topics = [OffsetFetchRequest.OffsetFetchRequestTopic(name=topic, partition_indexes=indexes)
              for topic, indexes in by_topic.items()]
    return OffsetFetchRequest(group_id=group_id, topics=topics, require_stable=True,
                              min_version=_OFFSET_FETCH_VERSION, max_version=_OFFSET_FETCH_VERSION)


async def _fetch(admin: KafkaAdminClient, group_id: str, request: Any) -> Any:
    coordinator = await admin._find_coordinator_id(group_id)
    return await admin._manager.send(request, node_id=coordinator)


def raise_coordinator_request_error(admin: KafkaAdminClient, group_id: str, what: str, request: str, names: Names,
                                    exc: BaseException) -> None:
    """Raise the package's error for kafka-python's ``exc`` out of a request to ``group_id``'s coordinator: no
    answer (:class:`~airflow_provider_eos.core.errors.KafkaNoAnswerError`), a refusal of ``names`` (the missing
    ACL), a coordinator not ready (forgotten first, so the next attempt looks it up again). Returns for any other
    error: the caller names it."""
    raise_if_no_answer(admin, what, exc)
    raise_if_refused(exc, request, names)
    if getattr(exc, "errno", None) in COORDINATOR_NOT_READY:
        forget_coordinator(admin, group_id)
        raise CoordinatorNotReady(f"{what}: {type(exc).__name__}") from exc


def forget_coordinator(admin: KafkaAdminClient, group_id: str) -> None:
    """Drop kafka-python's cached coordinator of ``group_id``: a moved one is looked up again next attempt."""
    from kafka.protocol.metadata import CoordinatorType

    coordinators = getattr(getattr(admin._manager, "cluster", None), "_coordinators", None)
    if isinstance(coordinators, dict):
        coordinators.pop((CoordinatorType.GROUP, group_id), None)


def _offsets(
    admin: KafkaAdminClient, group_id: str, wanted: list[TopicPartition], response: Any,
    names: dict[ResourceType, list[str]],
) -> CommittedOffsets:
    """The answer's offsets; raises what its error codes say (retried: coordinator not ready, offsets pending)."""
    from kafka.errors import for_code

    what = offset_fetch_request(group_id)
    codes = [(None, response.error_code)] + [
        (TopicPartition(topic.name, part.partition_index), part.error_code)
        for topic in response.topics for part in topic.partitions]
    if any(code in COORDINATOR_NOT_READY for _, code in codes):
        forget_coordinator(admin, group_id)
        raise CoordinatorNotReady(f"{what}: {for_code(next(c for _, c in codes if c in COORDINATOR_NOT_READY))}")
    pending = [f"{tp.topic}-{tp.partition}" for tp, code in codes if tp is not None and code == _UNSTABLE_OFFSET_COMMIT]
    if pending:
        raise OffsetsPending(what, pending)
    for tp, code in codes:
        if code:
            error = for_code(code)()
            raise_if_refused(error, "OffsetFetch", names if tp is None else {**names, ResourceType.TOPIC: [tp.topic]})
            where = "" if tp is None else f" partition {tp.topic}-{tp.partition}"
            raise GroupOffsetsError(f"group {group_id!r}{where}: {type(error).__name__}",
                                    fix="check the group's coordinator and the principal's Describe on the group")
    found: CommittedOffsets = dict.fromkeys(wanted)
    for topic in response.topics:
        for part in topic.partitions:
            if part.committed_offset >= 0:
                found[TopicPartition(topic.name, part.partition_index)] = CommittedOffset(
                    part.committed_offset, metadata_read_back(part.metadata or ""))
    return found

