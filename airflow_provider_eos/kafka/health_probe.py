"""Take health samples from the live cluster and the checkpoint; the rules are :mod:`airflow_provider_eos.core.health`.

One :func:`probe` reads, in this order:

1. the partitions of the input, output and dead-letter topics (metadata);
2. the sink group's committed offsets and batch markers for the input partitions, the
   checkpoint's newest commit, the verification verdict, and the group's offsets again. If the
   group changed while the checkpoint was read (the job committed a batch meanwhile), the read
   is repeated; a verdict taken across a commit could report a false ``KAFKA_BEHIND`` or
   ``DIVERGED``;
3. per partition the last stable offset (ListOffsets ``read_committed``), the high watermark
   (``read_uncommitted``) and, for inputs, the log start offset. They are read after the
   group's offsets, so a lag is never understated;
4. for input partitions with lag, whether the waiting records are older than the warn and stop
   thresholds (ListOffsets by timestamp: the first offset at or after ``now - age``; a waiting
   record before it is older), so one sample can tell input that just arrived from input left
   waiting (core/health/commit_age.py);
5. the transactional ids under the prefix (kafka-python's ListTransactions and
   DescribeTransactions, which confluent-kafka lacks) and, when an input partition is pinned,
   the brokers' ``transaction.max.timeout.ms`` (a hanging input partition is judged against it;
   not read when the principal may not describe the brokers' configuration);
6. the batch in flight (the newest ``offsets/N`` without ``commits/N``) and the files and bytes the
   driver writer's tasks have spilled for it so far (``eos/spill/N``): a long batch that keeps
   spilling advances before it commits (core/health/in_flight.py).

Every read is a plain admin request: the job's cooperation is not needed, and nothing is
written. A storage failure while the checkpoint is read (an ``OSError``: WebHDFS through the
checkpoint reader, ``requests``, s3fs) fails the sample with a retryable
:class:`HealthProbeError` naming the checkpoint: the next sample may read it, and a watch that
could not look has found nothing against the stream.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pendulum
from confluent_kafka import IsolationLevel, KafkaException
from confluent_kafka.admin import AdminClient, OffsetSpec

from airflow_provider_eos.core.acls import ResourceType
from airflow_provider_eos.core.broker_protocol import BrokerProtocol
from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.checkpoint.location import SPILL_FOLDER
from airflow_provider_eos.core.errors import EosError, KafkaNoAnswerError
from airflow_provider_eos.core.health import (
    HealthSample,
    HealthThresholds,
    InFlightBatch,
    InputPartitionSample,
    OutputPartitionSample,
    RunInput,
)
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import Transaction, to_epoch_ms
from airflow_provider_eos.core.verification import writers_in_use
from airflow_provider_eos.core.writers_choice import read_writers_choice
from airflow_provider_eos.kafka.denials import raise_if_refused, raise_if_topics_refused
from airflow_provider_eos.kafka.health_settled_read import HealthProbeError, reading_checkpoint, settled_read
from airflow_provider_eos.kafka.log_offsets import list_log_offsets
from airflow_provider_eos.kafka.login import connected_admin, destroy_admin
from airflow_provider_eos.kafka.retriable import raise_if_unanswered
from airflow_provider_eos.kafka.settings import admin_config

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec


__all__ = ["HealthProbeError", "probe", "probe_run_input"]

def _kafka_error(what: str, spec: PipelineSpec, exc: BaseException, *, request: str,
                 timeout_s: float) -> HealthProbeError:
    """The sample's error for a failed read ``what``; raises the no-answer error instead when no broker answered."""
    raise_if_unanswered(exc, brokers=spec.brokers, what=request, timeout_s=timeout_s)
    return HealthProbeError(
        f"{what} failed against {spec.brokers!r}: {exc}",
        fix="check that the broker is reachable with the spec's kafka settings and that the principal may "
        "Describe the topics and the group",
    )


def _topic_partitions(
    admin: AdminClient, spec: PipelineSpec, timeout_s: float
) -> tuple[list[TopicPartition], list[tuple[TopicPartition, str]], list[str]]:
    """Input partitions, ``(partition, role)`` of output and DLQ, and the topics that are missing."""
    try:
        metadata = admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        raise _kafka_error("reading topic metadata", spec, exc, request="Metadata", timeout_s=timeout_s) from exc
    missing: list[str] = []

    def partitions(topic: str) -> list[TopicPartition]:
        found = metadata.topics.get(topic)
        if found is not None and found.error is not None:
            # An unauthorized topic is no missing topic: say which ACL would show it.
            raise_if_refused(found.error, "Metadata", {ResourceType.TOPIC: [topic]}, settings=spec.kafka)
        if found is None or found.error is not None:
            missing.append(topic)
            return []
        return [TopicPartition(topic, p) for p in sorted(found.partitions)]

    inputs = [tp for topic in spec.input_topics for tp in partitions(topic)]
    outputs = [(tp, "output") for tp in partitions(spec.output_topic)]
    if spec.dlq_topic:
        outputs += [(tp, "dlq") for tp in partitions(spec.dlq_topic)]
    raise_if_topics_refused(admin, missing, timeout_s=timeout_s, brokers=spec.brokers, settings=spec.kafka)
    return inputs, outputs, missing


def _list_offsets(
    admin: AdminClient,
    spec: PipelineSpec,
    partitions: Iterable[TopicPartition],
    offset_spec: OffsetSpec,
    isolation: IsolationLevel,
    timeout_s: float,
) -> dict[TopicPartition, int]:
    request = f"ListOffsets ({isolation.name.lower()})"
    try:
        return list_log_offsets(admin, partitions, offset_spec=offset_spec, isolation=isolation, timeout_s=timeout_s)
    except (KafkaException, TimeoutError) as exc:  # TimeoutError: a partition's future's wait ran out
        raise_if_refused(exc, "ListOffsets", {ResourceType.TOPIC: sorted({tp.topic for tp in partitions})},
                         settings=spec.kafka)
        raise _kafka_error(request, spec, exc, request=request, timeout_s=timeout_s) from exc


def _in_flight(reader: CheckpointReader, last_committed: int | None) -> InFlightBatch | None:
    """The batch planned and not committed, and how much of it the driver writer's tasks have spilled so far."""
    planned = reader.latest_planned_batch()
    if planned is None or (last_committed is not None and planned <= last_committed):
        return None
    try:
        found = reader.fs.find(reader.path(*SPILL_FOLDER, str(planned)), detail=True)
    except FileNotFoundError:
        found = {}
    sizes = [int(info.get("size") or 0) for info in found.values() if info.get("type") == "file"]
    return InFlightBatch(batch=planned, spill_files=len(sizes), spill_bytes=sum(sizes))


def _waiting_ms(
    admin: AdminClient,
    spec: PipelineSpec,
    lagging: Mapping[TopicPartition, tuple[int, int]],
    taken_at_ms: int,
    ages_ms: Sequence[int],
    timeout_s: float,
) -> dict[TopicPartition, int]:
    """Per lagging input partition, the longest of ``ages_ms`` that a waiting record is older than (0: none).

    ListOffsets by timestamp answers the first offset whose record is at least as new as ``now - age``
    (-1 when every record is older); a record between the group's offset and that one, below the LSO,
    waits and is older than ``age``. The brokers' record timestamps are the clock: producers' create
    times unless the topic keeps the append time.

    :param lagging: ``(group's offset or the log start, LSO)`` per partition with lag.
    """
    waited = dict.fromkeys(lagging, 0)
    for age in sorted(set(ages_ms)):
        at = _list_offsets(admin, spec, lagging, OffsetSpec.for_timestamp(taken_at_ms - age),
                           IsolationLevel.READ_UNCOMMITTED, timeout_s)
        for tp, (base, lso) in lagging.items():
            newer_from = lso if at[tp] < 0 else min(at[tp], lso)
            if newer_from > base:
                waited[tp] = age
    return waited


def _open_transactions(
    spec: PipelineSpec, *, max_timeout: bool, timeout_s: float
) -> tuple[tuple[Transaction, ...], BrokerProtocol, int | None, str | None]:
    """The transactions under the prefix, the protocol the brokers run and, if ``max_timeout``, their
    ``transaction.max.timeout.ms`` (``None`` when it cannot be read, with why); one kafka-python session,
    each of its calls bounded by the sample's ``timeout_s`` (a broker that never answers fails the sample)."""
    from airflow_provider_eos.kafka.broker_protocol import read_broker_protocol
    from airflow_provider_eos.kafka.transactions_admin import (
        admin_client,
        broker_max_transaction_timeout_ms,
        scan_prefix,
    )

    with admin_client(spec, timeout_ms=int(timeout_s * 1000)) as admin:
        transactions = tuple(scan_prefix(admin, spec.transactional_id_prefix))
        protocol = read_broker_protocol(admin)
        limit, unread = None, None
        if max_timeout:
            try:
                limit = broker_max_transaction_timeout_ms(admin)
            except KafkaNoAnswerError:
                raise  # the broker, not a permission: the sample fails as for the scan
            except EosError as err:
                # The health role's set describes topics, the group and the prefix only; reading the brokers'
                # configuration is an optional grant. Without it a pinned input partition is judged against
                # Kafka's default, and the report says so and how to change that (design note 62).
                unread = err.message
        return transactions, protocol, limit, unread


def probe(
    spec: PipelineSpec,
    *,
    storage_options: Mapping[str, Any] | None = None,
    timeout_s: float = 30,
    include_transactions: bool = True,
    input_ages_ms: Sequence[int] | None = None,
) -> HealthSample:
    """Take one health sample of the pipeline.

    :param spec: the pipeline.
    :param storage_options: fsspec options for the checkpoint location (credentials ...).
    :param timeout_s: per-request timeout.
    :param include_transactions: list the transactional ids under the prefix (needs
        kafka-python's admin client; off only for callers that cannot reach the coordinators).
    :param input_ages_ms: the ages waiting input is compared with (each input partition's
        ``waiting_ms``): the thresholds' warn and stop; default those derived from the spec.
    :raises HealthProbeError: if metadata or offsets cannot be read, or the checkpoint's storage fails (retryable).
    :raises GroupOffsetsError: if the group's offsets cannot be read.
    :raises TransactionsAdminError: if the transactions cannot be listed.
    :raises KafkaNoAnswerError: if a connected broker did not answer a request in time (retryable).
    :raises CheckpointError: if a checkpoint file is malformed.
    """
    taken_at = to_epoch_ms(pendulum.now("UTC"))
    admin = connected_admin("probe-admin", {**admin_config(spec), "log_level": 3})
    try:
        return _sample_with(admin, spec, taken_at=taken_at, storage_options=storage_options, timeout_s=timeout_s,
                            include_transactions=include_transactions, input_ages_ms=input_ages_ms)
    finally:
        destroy_admin(admin)  # here, not by the garbage collector on librdkafka's thread (design note 83)


def _sample_with(  # noqa: PLR0913  # probe's options, passed on
    admin: AdminClient, spec: PipelineSpec, *, taken_at: int, storage_options: Mapping[str, Any] | None,
    timeout_s: float, include_transactions: bool, input_ages_ms: Sequence[int] | None,
) -> HealthSample:
    inputs, outputs, missing = _topic_partitions(admin, spec, timeout_s)
    notes = [f"topic {topic!r} does not exist" for topic in missing]
    reader = CheckpointReader(spec.checkpoint_location, storage_options)
    with reading_checkpoint(spec):
        group_partitions = set(inputs) | (reader.recent_partitions() if reader.exists() else set())
    committed, facts, verification = settled_read(spec, reader, group_partitions, timeout_s)
    exists, query_id, last_committed, last_commit_ms = facts
    if not exists:
        notes.append(f"no checkpoint at {spec.checkpoint_location!r} yet")

    every = inputs + [tp for tp, _ in outputs]
    lso = _list_offsets(admin, spec, every, OffsetSpec.latest(), IsolationLevel.READ_COMMITTED, timeout_s)
    hwm = _list_offsets(admin, spec, every, OffsetSpec.latest(), IsolationLevel.READ_UNCOMMITTED, timeout_s)
    start = _list_offsets(admin, spec, inputs, OffsetSpec.earliest(), IsolationLevel.READ_UNCOMMITTED, timeout_s)

    if input_ages_ms is None:
        derived = HealthThresholds.from_spec(spec)
        input_ages_ms = (derived.warn_after_ms, derived.stop_after_ms)
    lagging = {}
    for tp in inputs:
        found = committed.get(tp)
        base = found.offset if found is not None else (start.get(tp) or 0)
        if lso[tp] > base:
            lagging[tp] = (base, lso[tp])
    waiting = _waiting_ms(admin, spec, lagging, taken_at, input_ages_ms, timeout_s) if lagging else {}

    input_samples = []
    for tp in inputs:
        found = committed.get(tp)
        marker_batch = None
        if found is not None:
            try:
                marker = found.marker
            except EosError:
                # Verification reports the unreadable marker; the lag only needs the offset.
                marker = None
            marker_batch = None if marker is None else marker.batch_id
        input_samples.append(
            InputPartitionSample(
                tp=tp,
                lso=lso[tp],
                hwm=hwm[tp],
                log_start=start.get(tp),
                committed=None if found is None else found.offset,
                marker_batch=marker_batch,
                waiting_ms=waiting.get(tp),
            )
        )
    output_samples = [OutputPartitionSample(tp=tp, role=role, lso=lso[tp], hwm=hwm[tp]) for tp, role in outputs]
    input_pinned = any(lso[tp] < hwm[tp] for tp in inputs)
    with reading_checkpoint(spec):
        writers = writers_in_use(read_writers_choice(reader), spec.writers)
        in_flight = _in_flight(reader, last_committed) if exists else None
    transactions, protocol, max_timeout, max_timeout_unread = (
        _open_transactions(spec, max_timeout=input_pinned, timeout_s=timeout_s)
        if include_transactions else ((), None, None, None)
    )
    return HealthSample(
        taken_at_ms=taken_at,
        inputs=tuple(input_samples),
        outputs=tuple(output_samples),
        checkpoint_exists=exists,
        query_id=query_id,
        last_committed=last_committed,
        last_commit_time_ms=last_commit_ms,
        verification=verification,
        transactions=transactions,
        notes=tuple(notes),
        writers=writers,
        broker_protocol=protocol,
        transaction_max_timeout_ms=max_timeout,
        in_flight=in_flight,
        transaction_max_timeout_unread=max_timeout_unread,
    )


def probe_run_input(spec: PipelineSpec, admin: AdminClient, *, timeout_s: float = 30) -> RunInput:
    """Each input partition's last stable offset now: the input a run that starts now has to process.

    Read at ``read_committed``, where the job's source reads its ends (a missing input topic has no
    partition to list: the job fails on it, not this read).

    :raises HealthProbeError: if metadata or offsets cannot be read.
    :raises KafkaNoAnswerError: if a connected broker did not answer a request in time (retryable).
    :raises AclMissingError: if the principal may not describe an input topic.
    """
    read_at = to_epoch_ms(pendulum.now("UTC"))
    inputs, _, _ = _topic_partitions(admin, spec, timeout_s)
    return RunInput.of(read_at, _list_offsets(admin, spec, inputs, OffsetSpec.latest(),
                                              IsolationLevel.READ_COMMITTED, timeout_s))
