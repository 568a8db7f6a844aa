"""The sink group's committed offsets and their batch markers through librdkafka's admin API: the writers' reads
inside the job, the repairs' writes, and the partitions a verification compares (every other read of the
offsets goes over kafka-python: :mod:`airflow_provider_eos.kafka.group_offset_fetch`)."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.acls import ResourceType
from airflow_provider_eos.core.errors import EosError, KafkaWriteNoAnswerError, RetryExhaustedError
from airflow_provider_eos.core.markers import CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions.stable_read import (
    STABLE_READ_MARGIN_MS,
    stable_read_timeout_ms,
)
from airflow_provider_eos.kafka.denials import Names, raise_if_refused, raise_if_topics_refused
from airflow_provider_eos.kafka.retriable import (
    COORDINATOR_LOADING,
    STABLE_OFFSETS,
    OffsetsPending,
    offsets_pending,
    raise_if_coordinator_not_ready,
    raise_if_unanswered,
)

if TYPE_CHECKING:
    from airflow_provider_eos.core.checkpoint import CheckpointReader
    from airflow_provider_eos.core.spec import PipelineSpec

log = logging.getLogger(__name__)


class GroupOffsetsError(EosError):
    """The sink group's offsets could not be read or written."""


#: What confluent-kafka (librdkafka) adds to every metadata string it commits: it sends the string with
#: its terminating NUL byte (``strlen + 1``), so the broker stores ``marker + "\0"``, and it reads a stored
#: string back up to its first NUL. A client that sends and reads exact bytes (the Java client of the
#: JVM executor writer) must write and compare that stored form, or the two writers' markers differ
#: (and librdkafka's copy of a metadata without the NUL is read past its end).
_STORED_TERMINATOR = "\0"


def stored_metadata(metadata: str) -> str:
    """The bytes the broker holds for ``metadata`` when this package commits it (with librdkafka's NUL)."""
    return metadata + _STORED_TERMINATOR


def metadata_read_back(stored: str) -> str:
    """What this package's reads make of stored metadata ``stored``: the text up to its first NUL."""
    return stored.split(_STORED_TERMINATOR, 1)[0]


def offsets_pending_error(group_id: str, partitions: Iterable[str], *, waited_s: float,
                          transaction_timeout_ms: int, observer: bool = False) -> GroupOffsetsError:
    """The error of a stable read that waited out its bound and still found commits pending (both writers').

    :param partitions: the pending partitions, as ``topic-partition``.
    :param waited_s: how long the read waited.
    :param transaction_timeout_ms: the spec's timeout the wait followed.
    :param observer: the read was an observer's (health, pre-flight), whose wait is capped.
    """
    bound = (
        "an observer's wait, which the transaction may still outlive" if observer else
        f"the spec's transaction_timeout_ms {transaction_timeout_ms} plus {STABLE_READ_MARGIN_MS // 1000} s for the "
        "broker to abort a transaction that outlives it"
    )
    return GroupOffsetsError(
        f"group {group_id!r} still holds a pending transactional offset commit on {', '.join(sorted(partitions))} "
        f"after {waited_s:.0f} s of waiting ({bound}): a transaction "
        "that commits offsets to the sink group is still open",
        fix="a lost task or driver of this pipeline, or another client committing to the group, holds it: once no "
        "job of this pipeline runs, `eos abort --spec <spec file> --execute` aborts the pipeline's open "
        "transactions, then retry; one begun with a longer transaction timeout than the spec's (an earlier spec's "
        "transaction_timeout_ms) lasts until that timeout",
    )


def offset_fetch_request(group_id: str) -> str:
    """The group read's request as a no-answer error names it (``OffsetFetch('<group>')``), whichever client sent it."""
    return f"OffsetFetch({group_id!r})"


def read_committed_offsets(
    admin: AdminClient, group_id: str, partitions: Iterable[TopicPartition], *, transaction_timeout_ms: int,
    timeout_s: float = 30, brokers: str | None = None,
) -> CommittedOffsets:
    """Committed offset and metadata per partition; ``None`` where the group has none.

    ``require_stable`` makes the coordinator resolve a pending transactional offset commit
    first, so a commit in flight is never mistaken for the previous batch's state; while one is
    pending (``UNSTABLE_OFFSET_COMMIT``, also just after a commit, until its marker is applied)
    the read is repeated. An open transaction ends at the latest when the broker aborts it after
    its timeout, so the read waits for as long as a transaction of ``transaction_timeout_ms`` can
    be open (:func:`~airflow_provider_eos.core.transactions.stable_read.stable_read_timeout_ms`).

    :param transaction_timeout_ms: the spec's ``transaction_timeout_ms``, the sink's transactions' timeout.
    :param timeout_s: each request's timeout.
    :param brokers: the ``bootstrap.servers`` read from (``spec.brokers``): given, a read no broker answered
        raises :class:`~airflow_provider_eos.core.errors.KafkaNoAnswerError` naming them (as every kafka-python
        call does), instead of :class:`GroupOffsetsError`. Every reader of the package names them (note 70, 76).
    :raises GroupOffsetsError: naming the partitions still pending after the wait, or why the read failed.
    :raises KafkaNoAnswerError: with ``brokers``, when the request got no answer within ``timeout_s`` (retryable).
    """
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    request = ConsumerGroupTopicPartitions(group_id, [KafkaTopicPartition(t, p) for t, p in wanted])
    what = f"read offsets of group {group_id!r}"

    def fetch() -> ConsumerGroupTopicPartitions:
        result = admin.list_consumer_group_offsets([request], require_stable=True)[group_id].result(timeout_s)
        raise_if_coordinator_not_ready(what, (tp.error for tp in result.topic_partitions))
        pending = [f"{tp.topic}-{tp.partition}" for tp in result.topic_partitions if offsets_pending(tp.error)]
        if pending:
            raise OffsetsPending(what, pending)
        return result

    names = {ResourceType.GROUP: [group_id], ResourceType.TOPIC: sorted({t for t, _ in wanted})}
    stable_s = stable_read_timeout_ms(transaction_timeout_ms) / 1000
    try:
        result = STABLE_OFFSETS.bounded(timeout_s=max(timeout_s, stable_s)).call(fetch, what=what)
    except RetryExhaustedError as exc:
        if isinstance(exc.last_error, OffsetsPending):
            raise offsets_pending_error(group_id, exc.last_error.partitions, waited_s=exc.elapsed_s,
                                        transaction_timeout_ms=transaction_timeout_ms) from exc
        raise _read_error(group_id, exc, names) from exc
    except (KafkaException, TimeoutError) as exc:  # TimeoutError: the future's own wait ran out first
        raise _read_error(group_id, exc, names, brokers=brokers, timeout_s=timeout_s) from exc
    found: CommittedOffsets = dict.fromkeys(wanted)
    for tp in result.topic_partitions:
        if tp.error is not None:
            raise_if_refused(tp.error, "OffsetFetch", {**names, ResourceType.TOPIC: [tp.topic]})
            raise GroupOffsetsError(f"group {group_id!r} partition {tp.topic}-{tp.partition}: {tp.error}")
        if tp.offset >= 0:
            found[TopicPartition(tp.topic, tp.partition)] = CommittedOffset(tp.offset, tp.metadata or "")
    return found


def _read_error(group_id: str, exc: Exception, names: Names, *, brokers: str | None = None,
                timeout_s: float = 30) -> GroupOffsetsError:
    raise_if_refused(exc, "OffsetFetch", names)
    if brokers is not None:
        raise_if_unanswered(exc, brokers=brokers, what=offset_fetch_request(group_id), timeout_s=timeout_s)
    detail = exc.message if isinstance(exc, RetryExhaustedError) else exc  # its own fix is not this one
    return group_read_failed(group_id, str(detail))


def group_read_failed(group_id: str, detail: str) -> GroupOffsetsError:
    """The error of a read of the group's offsets that failed for ``detail`` (either client's reader)."""
    return GroupOffsetsError(
        f"could not read committed offsets of group {group_id!r}: {detail}",
        fix="check that the broker is reachable with the spec's kafka settings and that the principal may "
        "Describe the group",
    )


def write_committed_offsets(
    admin: AdminClient, group_id: str, offsets: Mapping[TopicPartition, tuple[int, str]], *, timeout_s: float = 30,
    brokers: str | None = None,
) -> None:
    """Commit ``{partition: (offset, metadata)}`` for a group without members over librdkafka: the repairs' write
    where kafka-python cannot take the settings (SASL OAUTHBEARER; otherwise
    :func:`~airflow_provider_eos.kafka.group_offset_commit.commit_group_offsets`, design note 88), and the tests'.

    :param brokers: the ``bootstrap.servers`` written to (``spec.brokers``), as a no-answer error names them.
    :raises KafkaWriteNoAnswerError: the OffsetCommit got no answer within ``timeout_s``: the broker may have
        applied it, so what the group holds is unknown until verify reads it (not retryable as is).
    :raises AclMissingError: the principal may not commit to the group or the topics.
    :raises GroupOffsetsError: the group refused the offsets, or the coordinator stayed unavailable.
    """
    request = ConsumerGroupTopicPartitions(
        group_id, [KafkaTopicPartition(t, p, off, meta) for (t, p), (off, meta) in sorted(offsets.items())]
    )
    what = f"write offsets of group {group_id!r}"
    names = {ResourceType.GROUP: [group_id], ResourceType.TOPIC: sorted({t for t, _ in offsets})}

    def alter() -> None:
        result = admin.alter_consumer_group_offsets([request])[group_id].result(timeout_s)
        errors = [(tp, tp.error) for tp in result.topic_partitions if tp.error is not None]
        raise_if_coordinator_not_ready(what, (err for _, err in errors))
        for tp, err in errors:
            raise_if_refused(err, "OffsetCommit", {**names, ResourceType.TOPIC: [tp.topic]})
        if errors:
            detail = ", ".join(f"{tp.topic}-{tp.partition}: {err}" for tp, err in errors)
            raise GroupOffsetsError(
                f"group {group_id!r} refused offsets for {detail}; nothing is guaranteed committed",
                fix="the group must have no active members (stop the job first) and the principal needs Read on it",
            )

    try:
        COORDINATOR_LOADING.bounded(timeout_s=timeout_s).call(alter, what=what)
    except (KafkaException, RetryExhaustedError, TimeoutError) as exc:  # TimeoutError: the future's wait ran out
        raise_if_refused(exc, "OffsetCommit", names)
        # Unlike a refusal, no answer says nothing about the write: the broker may have applied it.
        raise_if_unanswered(exc, brokers=brokers or "the admin client's bootstrap.servers",
                            what=f"OffsetCommit({group_id!r})", timeout_s=timeout_s, error=KafkaWriteNoAnswerError)
        raise GroupOffsetsError(
            f"could not write offsets of group {group_id!r}: {exc}",
            fix="the group must have no active members (stop the job first)",
        ) from exc


def verification_partitions(admin: AdminClient, spec: PipelineSpec, reader: CheckpointReader,
                            *, timeout_s: float = 30) -> set[TopicPartition]:
    """The input partitions a verification compares: those of the input topics now, plus those the
    checkpoint's last committed and planned batches name, so a partition only one side knows is
    compared too. A topic missing from the cluster contributes only the checkpoint's partitions.

    :raises KafkaNoAnswerError: when the brokers gave the metadata request no answer within ``timeout_s``.
    """
    partitions = reader.recent_partitions() if reader.exists() else set()
    brokers = spec.brokers
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise_if_unanswered(exc, brokers=brokers, what="Metadata", timeout_s=timeout_s)
        raise GroupOffsetsError(
            f"could not read topic metadata from {brokers!r}: {exc}",
            fix="check that the broker is reachable with the spec's kafka settings",
        ) from exc
    for topic in spec.input_topics:
        found = metadata.topics.get(topic)
        if found is not None and found.error is not None:
            raise_if_refused(found.error, "Metadata", {ResourceType.TOPIC: [topic]}, settings=spec.kafka)
        if found is None:
            raise_if_topics_refused(admin, [topic], timeout_s=timeout_s, brokers=brokers, settings=spec.kafka)
        if found is None or found.error is not None:
            log.warning("input topic %r is not in the cluster's metadata; comparing the checkpoint's partitions", topic)
            continue
        partitions.update(TopicPartition(topic, p) for p in found.partitions)
    return partitions
