"""Transaction recovery against a live cluster: scan, abort lingering and hanging transactions.

The KIP-664 admin calls (ListTransactions, DescribeTransactions, DescribeProducers,
AbortTransaction) come from kafka-python 3.x, because confluent-kafka has none of them;
fencing uses confluent-kafka's transactional producer, the same client the sink uses, so
the fence registers exactly as the sink would. The decisions (what is lingering, hanging,
safe) are :mod:`airflow_provider_eos.core.transactions`; this module only does the I/O.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
import uuid
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core import transactions as txn
from airflow_provider_eos.core.acls import ResourceType
from airflow_provider_eos.core.acls.denials import acl_missing
from airflow_provider_eos.core.errors import AclMissingError, EosError, KafkaConfigError, KafkaNoAnswerError
from airflow_provider_eos.core.kafka_defaults import KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from airflow_provider_eos.core.retry import within
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.denials import raise_if_refused
from airflow_provider_eos.kafka.login import check_login
from airflow_provider_eos.kafka.settings.kafka_python import kafka_python_config
from airflow_provider_eos.kafka.settings.kafka_python import protect_secrets as _protect_secrets

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

    from airflow_provider_eos.core.spec import PipelineSpec

log = logging.getLogger(__name__)

__all__ = [
    "KafkaConfigError",
    "TransactionsAdminError",
    "admin_call",
    "admin_client",
    "answered_within",
    "broker_max_transaction_timeout_ms",
    "describe_producers",
    "describe_transactions",
    "kafka_python_config",
    "list_transactions",
    "may_describe_every_id",
    "partition_offsets",
    "scan_hanging",
    "scan_prefix",
    "topic_partitions",
]

#: Kafka's default ``transaction.max.timeout.ms``, used when the brokers do not report theirs.
_TOPIC_AUTHORIZATION_FAILED = 29  # Kafka's protocol error code


class TransactionsAdminError(EosError):
    """A transaction admin call failed; the message names the call and the broker's error."""


@contextlib.contextmanager
def admin_client(config: Mapping[str, Any] | PipelineSpec, *, timeout_ms: int = 30_000) -> Iterator[KafkaAdminClient]:
    """A connected kafka-python admin client, closed on exit.

    :param config: a pipeline spec (its ``kafka`` dict is used) or a librdkafka config.
    :param timeout_ms: how long to wait for the bootstrap connection.
    :raises TransactionsAdminError: if no broker can be reached.
    """
    from kafka.admin import KafkaAdminClient
    from kafka.errors import KafkaError

    librdkafka = config.kafka if hasattr(config, "kafka") else config
    settings = kafka_python_config(librdkafka)
    # kafka-python reports a refused login only as "unable to bootstrap": ask librdkafka first.
    check_login(librdkafka, timeout_s=timeout_ms / 1000)
    _protect_secrets(settings)
    try:
        admin = KafkaAdminClient(**settings, bootstrap_timeout_ms=timeout_ms)
    except KafkaError as exc:
        raise TransactionsAdminError(
            f"could not connect the transaction admin client to {librdkafka.get('bootstrap.servers')!r}: {exc!r}",
            fix="check that the broker is reachable and the spec's kafka security settings are right",
        ) from exc
    try:
        yield admin
    finally:
        admin.close()


def _principal(admin: KafkaAdminClient) -> str | None:
    """``User:NAME`` of a SASL/PLAIN or SCRAM admin client (kafka-python's own setting names)."""
    mechanism = str(admin.config.get("sasl_mechanism") or "").upper()
    username = admin.config.get("sasl_plain_username")
    return f"User:{username}" if username and (mechanism == "PLAIN" or mechanism.startswith("SCRAM")) else None


def call_deadline_s(admin: KafkaAdminClient) -> float:
    """How long one admin call of ``admin`` may take: a reconnection (its bootstrap wait) and a request's timeout.

    kafka-python bounds neither: a call waits on its event loop, whose retries of a request that got
    no answer go on for as long as the broker stays connected and silent.
    """
    return (int(admin.config["bootstrap_timeout_ms"]) + int(admin.config["request_timeout_ms"])) / 1000


def answered_within(admin: KafkaAdminClient, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` (a call of ``admin``, or a request sent through it), within :func:`call_deadline_s`.

    Every kafka-python call of the package goes through here (mostly by :func:`admin_call`): a broker that
    is connected and never answers (its process paused or stuck) would hold the call, and the task, the
    trigger or the command waiting on it, forever. The call left behind ends when ``admin`` is closed
    (:func:`admin_client` closes it on the way out).

    :raises KafkaNoAnswerError: the call did not return within the deadline (retryable).
    """
    deadline_s = call_deadline_s(admin)
    return within(lambda: fn(*args, **kwargs), timeout_s=deadline_s, name=f"eos-kafka-{what.split('(')[0]}",
                  on_timeout=lambda: KafkaNoAnswerError(_brokers(admin), what, deadline_s))


def raise_if_no_answer(admin: KafkaAdminClient, what: str, exc: BaseException) -> None:
    """Raise :class:`KafkaNoAnswerError` from ``exc`` if kafka-python gave up waiting for the broker itself
    (its request timeout, a lost connection): the same retryable error as the deadline's."""
    from airflow_provider_eos.kafka.retriable import kafka_python_no_answer

    if kafka_python_no_answer(exc):
        raise KafkaNoAnswerError(_brokers(admin), what, int(admin.config["request_timeout_ms"]) / 1000,
                                 detail=f"{type(exc).__name__}: {exc}") from exc


def _brokers(admin: KafkaAdminClient) -> str:
    servers = admin.config.get("bootstrap_servers")
    return servers if isinstance(servers, str) else ",".join(servers or ())


def admin_call(what: str, fn: Any, *args: Any, refused: Mapping[ResourceType, Iterable[str]] | None = None,
          **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` (a method of a kafka-python admin client) within its deadline, its Kafka errors
    typed: an authorization refusal of the resources in ``refused`` (the request's, by type) as
    :class:`~airflow_provider_eos.core.errors.AclMissingError`, no answer in time as
    :class:`~airflow_provider_eos.core.errors.KafkaNoAnswerError` (:func:`answered_within`)."""
    from kafka.errors import KafkaError

    admin = fn.__self__
    try:
        return answered_within(admin, what, fn, *args, **kwargs)
    except KafkaError as exc:
        raise_if_no_answer(admin, what, exc)
        raise_if_refused(exc, what.split("(")[0], refused or {}, principal=_principal(admin))
        raise TransactionsAdminError(
            f"{what} failed: {exc!r}",
            fix="check that the broker is reachable and that the principal may Describe (and, to "
            "abort, Write) the transactional ids and topics involved",
        ) from exc


# -- reading -----------------------------------------------------------------------------------


def list_transactions(
    admin: KafkaAdminClient, *, producer_ids: Iterable[int] | None = None
) -> list[txn.TransactionListing]:
    """Every transactional id on every broker (optionally only those with the given producer ids)."""
    ids = sorted(set(producer_ids)) if producer_ids is not None else None
    if ids is not None and not ids:
        return []
    by_broker = admin_call("ListTransactions", admin.list_transactions, producer_id_filters=ids)
    return [
        txn.TransactionListing(transactional_id=item.transactional_id, producer_id=item.producer_id,
                               state=txn.TxnState.parse(item.state))
        for listings in by_broker.values()
        for item in listings
    ]


def _transaction(txn_id: str, desc: Any) -> txn.Transaction:
    return txn.Transaction(
        transactional_id=txn_id,
        state=txn.TxnState.parse(desc.state),
        producer_id=desc.producer_id,
        producer_epoch=desc.producer_epoch,
        start_time_ms=desc.transaction_start_time_ms if desc.transaction_start_time_ms >= 0 else None,
        timeout_ms=desc.transaction_timeout_ms,
        partitions=frozenset(TopicPartition(tp.topic, tp.partition) for tp in desc.topic_partitions),
        coordinator_id=desc.coordinator_id,
    )


def describe_transactions(admin: KafkaAdminClient, txn_ids: Iterable[str]) -> dict[str, txn.Transaction | None]:
    """DescribeTransactions per id; ``None`` for an id its coordinator does not know.

    kafka-python fails a whole batch on the first unknown id, so a failed batch is retried
    one id at a time (ids expire between listing and describing).
    """
    from kafka.errors import TransactionalIdNotFoundError

    wanted = sorted(set(txn_ids))
    if not wanted:
        return {}
    try:
        found = admin_call("DescribeTransactions", admin.describe_transactions, wanted,
                      refused={ResourceType.TRANSACTIONAL_ID: wanted})
        return {txn_id: _transaction(txn_id, found[txn_id]) if txn_id in found else None for txn_id in wanted}
    except TransactionsAdminError as exc:
        if not isinstance(exc.__cause__, TransactionalIdNotFoundError):
            raise
    result: dict[str, txn.Transaction | None] = {}
    for txn_id in wanted:
        try:
            one = answered_within(admin, f"DescribeTransactions({txn_id!r})", admin.describe_transactions, [txn_id])
        except TransactionalIdNotFoundError:
            result[txn_id] = None
            continue
        except KafkaNoAnswerError:
            raise
        except Exception as exc:
            raise_if_no_answer(admin, f"DescribeTransactions({txn_id!r})", exc)
            raise_if_refused(exc, "DescribeTransactions", {ResourceType.TRANSACTIONAL_ID: [txn_id]},
                             principal=_principal(admin))
            raise TransactionsAdminError(
                f"DescribeTransactions of {txn_id!r} failed: {exc!r}",
                fix="check that the broker is reachable and the principal may Describe the id",
            ) from exc
        result[txn_id] = _transaction(txn_id, one[txn_id]) if txn_id in one else None
    return result


def scan_prefix(admin: KafkaAdminClient, prefix: str) -> list[txn.Transaction]:
    """Describe every transactional id under ``prefix`` that the brokers list.

    The match is :func:`~airflow_provider_eos.core.transactional_ids.belongs_to_prefix` on the
    client side, not the broker's regex filter: the rule must be exactly the one the rest of
    the package uses, and brokers before 4.1 have no filter.
    """
    from airflow_provider_eos.core.transactional_ids import belongs_to_prefix

    # ListTransactions silently leaves out the ids the principal may not DESCRIBE: without that right
    # an open transaction would read as none. Describing one id of the prefix is refused instead.
    describe_transactions(admin, [f"{prefix}-0"])
    listed = list_transactions(admin)
    ours = [item.transactional_id for item in listed if belongs_to_prefix(prefix, item.transactional_id)]
    return [t for t in describe_transactions(admin, ours).values() if t is not None]


def may_describe_every_id(admin: KafkaAdminClient) -> bool:
    """Whether the principal may DESCRIBE transactional ids outside any pipeline's prefix (``*``).

    ListTransactions leaves out the ids a principal may not describe, so without this right a
    hanging transaction of another application looks unattributed. Describing an id nobody uses
    answers it: "not found" when allowed, a refusal when not.
    """
    try:
        describe_transactions(admin, [f"eos-visibility-probe-{uuid.uuid4().hex}"])
    except AclMissingError:
        return False
    return True


def topic_partitions(admin: KafkaAdminClient, topics: Iterable[str]) -> tuple[list[TopicPartition], list[str]]:
    """The partitions of ``topics``; returns ``(partitions, topics that do not exist)``."""
    names = sorted(set(topics))
    if not names:
        return [], []
    described = admin_call("Metadata", admin.describe_topics, names, refused={ResourceType.TOPIC: names})
    partitions: list[TopicPartition] = []
    missing: list[str] = []
    for topic in described:
        if topic.get("error_code", 0) == _TOPIC_AUTHORIZATION_FAILED:
            # Kafka answers an unauthorized topic as if it did not exist: name the ACL, not a missing topic.
            raise acl_missing("Metadata", ResourceType.TOPIC, [topic["name"]], principal=_principal(admin),
                              detail="TOPIC_AUTHORIZATION_FAILED")
        if topic.get("error_code", 0) != 0 or not topic.get("partitions"):
            missing.append(topic["name"])
            continue
        partitions.extend(TopicPartition(topic["name"], p["partition_index"]) for p in topic["partitions"])
    return sorted(partitions), sorted(missing)


def partition_offsets(admin: KafkaAdminClient, partitions: Iterable[TopicPartition]) -> list[txn.PartitionOffsets]:
    """Last stable offset (``read_committed`` ListOffsets) and high watermark per partition."""
    from kafka.admin import OffsetSpec
    from kafka.protocol.consumer import IsolationLevel
    from kafka.structs import TopicPartition as KafkaTopicPartition

    wanted = sorted(set(partitions))
    if not wanted:
        return []
    specs = {KafkaTopicPartition(tp.topic, tp.partition): OffsetSpec.LATEST for tp in wanted}
    topics = {ResourceType.TOPIC: sorted({tp.topic for tp in wanted})}
    lso = admin_call("ListOffsets(read_committed)", admin.list_partition_offsets, specs,
                     IsolationLevel.READ_COMMITTED, refused=topics)
    hwm = admin_call("ListOffsets(read_uncommitted)", admin.list_partition_offsets, specs,
                     IsolationLevel.READ_UNCOMMITTED, refused=topics)
    return [
        txn.PartitionOffsets(tp=tp, lso=lso[KafkaTopicPartition(*tp)].offset, hwm=hwm[KafkaTopicPartition(*tp)].offset)
        for tp in wanted
    ]


def describe_producers(
    admin: KafkaAdminClient, partitions: Iterable[TopicPartition]
) -> dict[TopicPartition, list[txn.ProducerState]]:
    """DescribeProducers on each partition's leader."""
    from kafka.structs import TopicPartition as KafkaTopicPartition

    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    found = admin_call("DescribeProducers", admin.describe_producers, [KafkaTopicPartition(*tp) for tp in wanted],
                  refused={ResourceType.TOPIC: sorted({tp.topic for tp in wanted})})
    return {
        TopicPartition(tp.topic, tp.partition): [
            txn.ProducerState(
                producer_id=p.producer_id,
                producer_epoch=p.producer_epoch,
                last_sequence=p.last_sequence,
                last_timestamp_ms=p.last_timestamp,
                coordinator_epoch=p.coordinator_epoch,
                current_txn_start_offset=p.current_transaction_start_offset,
            )
            for p in state.active_producers
        ]
        for tp, state in found.items()
    }


def broker_max_transaction_timeout_ms(admin: KafkaAdminClient) -> int:
    """The largest ``transaction.max.timeout.ms`` among the brokers (Kafka's default if unreported).

    The largest, because any broker may coordinate a transaction, and a transaction younger
    than its coordinator's maximum may still be completed normally.
    """
    from kafka.admin import ConfigResource, ConfigResourceType

    cluster = admin_call("DescribeCluster", admin.describe_cluster)
    resources = [
        ConfigResource(ConfigResourceType.BROKER, str(b["broker_id"]), {"transaction.max.timeout.ms": None})
        for b in cluster["brokers"]
    ]
    if not resources:
        return KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
    described = admin_call("DescribeConfigs", admin.describe_configs, resources, config_filter="all",
                      refused={ResourceType.CLUSTER: []})
    brokers = described.get("broker", {})
    if not any(brokers.values()):
        # Every broker has the setting; kafka-python drops DescribeConfigs' per-resource error code, so an
        # empty answer is the refusal (CLUSTER_AUTHORIZATION_FAILED), never a reason to assume Kafka's default.
        raise acl_missing("DescribeConfigs", ResourceType.CLUSTER, [], principal=_principal(admin),
                          detail="the brokers described no configuration")
    values = [
        int(entry["value"])
        for configs in brokers.values()
        for key, entry in configs.items()
        if key == "transaction.max.timeout.ms" and entry.get("value") is not None
    ]
    return max(values) if values else KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS


def scan_hanging(
    admin: KafkaAdminClient,
    partitions: Iterable[TopicPartition],
    *,
    now: dt.datetime,
    max_transaction_timeout_ms: int,
) -> tuple[list[txn.HangingTransaction], list[txn.PartitionOffsets]]:
    """Find hanging transactions on ``partitions`` the way Kafka's ``find-hanging`` does.

    LSO vs high watermark comes first: a partition whose LSO equals its high watermark has no
    open transaction, so only pinned partitions are asked for their producers. Then
    DescribeProducers, ListTransactions for the candidates' producer ids, DescribeTransactions
    for their ids, and :func:`~airflow_provider_eos.core.transactions.find_hanging`.

    :returns: the hanging transactions and the offsets of every partition scanned.
    """
    offsets = partition_offsets(admin, partitions)
    pinned = [o.tp for o in offsets if o.pinned]
    producers = describe_producers(admin, pinned)
    candidates = txn.hanging_candidates(producers, now, max_transaction_timeout_ms)
    listings = list_transactions(admin, producer_ids={c.producer.producer_id for c in candidates})
    wanted = {c.producer.producer_id for c in candidates}
    ids = {item.transactional_id for item in listings if item.producer_id in wanted}
    descriptions = describe_transactions(admin, ids)
    hanging = txn.find_hanging(
        producers, listings, descriptions, now=now, max_transaction_timeout_ms=max_transaction_timeout_ms
    )
    return hanging, offsets
