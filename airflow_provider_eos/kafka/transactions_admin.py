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
import ssl
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from airflow_provider_eos.core import transactions as txn
from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactional_ids import writer_index

if TYPE_CHECKING:
    from kafka.admin import KafkaAdminClient

    from airflow_provider_eos.core.spec import PipelineSpec

log = logging.getLogger(__name__)

__all__ = [
    "KafkaConfigError",
    "TransactionsAdminError",
    "abort_hanging",
    "abort_open_transactions",
    "admin_client",
    "broker_max_transaction_timeout_ms",
    "describe_producers",
    "describe_transactions",
    "fence",
    "kafka_python_config",
    "list_transactions",
    "partition_offsets",
    "scan_hanging",
    "scan_prefix",
    "topic_partitions",
]

#: Kafka's default ``transaction.max.timeout.ms``, used when the brokers do not report theirs.
DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 900_000


class TransactionsAdminError(EosError):
    """A transaction admin call failed; the message names the call and the broker's error."""


class KafkaConfigError(EosError):
    """The spec's librdkafka settings cannot be expressed for kafka-python."""


# -- librdkafka -> kafka-python ----------------------------------------------------------------

# librdkafka key -> kafka-python key, for values that carry over unchanged (apart from type).
_DIRECT = {
    "client.id": "client_id",
    "sasl.username": "sasl_plain_username",
    "sasl.password": "sasl_plain_password",
    "sasl.kerberos.service.name": "sasl_kerberos_service_name",
    "ssl.ca.location": "ssl_cafile",
    "ssl.certificate.location": "ssl_certfile",
    "ssl.key.location": "ssl_keyfile",
    "ssl.key.password": "ssl_password",
    "ssl.crl.location": "ssl_crlfile",
}
_INTEGER = {
    "socket.timeout.ms": "request_timeout_ms",
    "metadata.max.age.ms": "metadata_max_age_ms",
    "reconnect.backoff.ms": "reconnect_backoff_ms",
    "reconnect.backoff.max.ms": "reconnect_backoff_max_ms",
    "retry.backoff.ms": "retry_backoff_ms",
    "connections.max.idle.ms": "connections_max_idle_ms",
}
_SECURITY_PROTOCOLS = {"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}
_SASL_MECHANISMS = {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI"}
_TRUE = {"true", "1", "yes", "on"}
_FALSE = {"false", "0", "no", "off"}


def _as_bool(key: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE | _FALSE:
        return text in _TRUE
    raise KafkaConfigError(f"kafka[{key!r}] is {value!r}, not a boolean", fix=f"set kafka[{key!r}] to true or false")


def _as_int(key: str, value: object) -> int:
    if isinstance(value, bool):
        raise KafkaConfigError(f"kafka[{key!r}] is {value!r}, not an integer", fix=f"set kafka[{key!r}] to a number")
    try:
        return int(str(value).strip())
    except ValueError:
        raise KafkaConfigError(
            f"kafka[{key!r}] is {value!r}, not an integer", fix=f"set kafka[{key!r}] to a number"
        ) from None


def kafka_python_config(librdkafka: Mapping[str, Any]) -> dict[str, Any]:
    """Translate a librdkafka client config into ``KafkaAdminClient`` keyword arguments.

    Connection and security settings carry over (bootstrap servers, client id, security
    protocol, SASL PLAIN/SCRAM/GSSAPI, SSL files and password, hostname verification,
    timeouts). Keys without a kafka-python equivalent (producer and consumer tuning, librdkafka
    internals) are skipped with a debug log naming the key; values are never logged, because
    some are secrets.

    :param librdkafka: the spec's ``kafka`` dict (or any librdkafka config).
    :returns: keyword arguments for ``kafka.admin.KafkaAdminClient``.
    :raises KafkaConfigError: naming the key, if a setting cannot be honoured (a mechanism
        kafka-python cannot take from a config, such as OAUTHBEARER, or a malformed value).
    """
    out: dict[str, Any] = {}
    verify_certificates = True
    for key, value in librdkafka.items():
        if key == "bootstrap.servers":
            servers = [s.strip() for s in str(value).split(",") if s.strip()]
            if not servers:
                raise KafkaConfigError(
                    "kafka['bootstrap.servers'] is empty", fix="set it to the broker list, e.g. 'localhost:9092'"
                )
            out["bootstrap_servers"] = servers
        elif key == "security.protocol":
            protocol = str(value).strip().upper()
            if protocol not in _SECURITY_PROTOCOLS:
                raise KafkaConfigError(
                    f"kafka['security.protocol'] is {value!r}",
                    fix=f"use one of {', '.join(sorted(_SECURITY_PROTOCOLS))}",
                )
            out["security_protocol"] = protocol
        elif key in ("sasl.mechanism", "sasl.mechanisms"):
            mechanism = str(value).strip().upper()
            if mechanism not in _SASL_MECHANISMS:
                raise KafkaConfigError(
                    f"kafka[{key!r}] is {value!r}, which the transaction admin client (kafka-python) "
                    "cannot configure from the spec",
                    fix=f"use one of {', '.join(sorted(_SASL_MECHANISMS))} for the pipeline's principal",
                )
            out["sasl_mechanism"] = mechanism
        elif key in _DIRECT:
            out[_DIRECT[key]] = str(value)
        elif key in _INTEGER:
            out[_INTEGER[key]] = _as_int(key, value)
        elif key == "ssl.endpoint.identification.algorithm":
            algorithm = str(value).strip().lower()
            if algorithm not in ("https", "none", ""):
                raise KafkaConfigError(
                    f"kafka['ssl.endpoint.identification.algorithm'] is {value!r}", fix="use 'https' or 'none'"
                )
            out["ssl_check_hostname"] = algorithm == "https"
        elif key == "enable.ssl.certificate.verification":
            verify_certificates = _as_bool(key, value)
        else:
            log.debug("kafka config key %r has no kafka-python equivalent for the admin client; skipped", key)
    if "bootstrap_servers" not in out:
        raise KafkaConfigError(
            "kafka['bootstrap.servers'] is missing", fix="set it to the broker list, e.g. 'localhost:9092'"
        )
    if not verify_certificates:
        # kafka-python has no switch for this; only a ready-made SSLContext expresses it.
        context = ssl.create_default_context(cafile=out.get("ssl_cafile"))
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        if out.get("ssl_certfile"):
            context.load_cert_chain(out["ssl_certfile"], out.get("ssl_keyfile"), out.get("ssl_password"))
        out["ssl_context"] = context
        out["ssl_check_hostname"] = False
    return out


_SECRET_KEYS = ("sasl_plain_password", "ssl_password")


class _RedactSecrets(logging.Filter):
    """Drops kafka-python log records that would show a secret.

    kafka-python logs its whole config at DEBUG when the admin client starts, and its
    protocol loggers dump request bodies (SASL authentication included) at DEBUG.
    """

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("Starting KafkaAdminClient with configuration"):
            return False
        if not self.secrets:
            return True
        try:
            text = record.getMessage()
        except Exception:
            return False
        return not any(secret in text for secret in self.secrets)


_REDACT = _RedactSecrets()


def _protect_secrets(settings: Mapping[str, Any]) -> None:
    # Logger filters do not apply to child loggers, so the filter goes on every kafka-python
    # logger that exists once the admin client's modules are imported.
    _REDACT.secrets.update(str(settings[key]) for key in _SECRET_KEYS if settings.get(key))
    for name in [*logging.Logger.manager.loggerDict, "kafka"]:
        if name == "kafka" or name.startswith("kafka."):
            logger = logging.getLogger(name)
            if _REDACT not in logger.filters:
                logger.addFilter(_REDACT)


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


def _call(what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    from kafka.errors import KafkaError

    try:
        return fn(*args, **kwargs)
    except KafkaError as exc:
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
    by_broker = _call("ListTransactions", admin.list_transactions, producer_id_filters=ids)
    return [
        txn.TransactionListing(item.transactional_id, item.producer_id, txn.TxnState.parse(item.state))
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
        found = _call("DescribeTransactions", admin.describe_transactions, wanted)
        return {txn_id: _transaction(txn_id, found[txn_id]) if txn_id in found else None for txn_id in wanted}
    except TransactionsAdminError as exc:
        if not isinstance(exc.__cause__, TransactionalIdNotFoundError):
            raise
    result: dict[str, txn.Transaction | None] = {}
    for txn_id in wanted:
        try:
            one = admin.describe_transactions([txn_id])
        except TransactionalIdNotFoundError:
            result[txn_id] = None
            continue
        except Exception as exc:
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

    listed = list_transactions(admin)
    ours = [item.transactional_id for item in listed if belongs_to_prefix(prefix, item.transactional_id)]
    return [t for t in describe_transactions(admin, ours).values() if t is not None]


def topic_partitions(admin: KafkaAdminClient, topics: Iterable[str]) -> tuple[list[TopicPartition], list[str]]:
    """The partitions of ``topics``; returns ``(partitions, topics that do not exist)``."""
    names = sorted(set(topics))
    if not names:
        return [], []
    described = _call("Metadata", admin.describe_topics, names)
    partitions: list[TopicPartition] = []
    missing: list[str] = []
    for topic in described:
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
    lso = _call("ListOffsets(read_committed)", admin.list_partition_offsets, specs, IsolationLevel.READ_COMMITTED)
    hwm = _call("ListOffsets(read_uncommitted)", admin.list_partition_offsets, specs, IsolationLevel.READ_UNCOMMITTED)
    return [
        txn.PartitionOffsets(tp, lso[KafkaTopicPartition(*tp)].offset, hwm[KafkaTopicPartition(*tp)].offset)
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
    found = _call("DescribeProducers", admin.describe_producers, [KafkaTopicPartition(*tp) for tp in wanted])
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

    cluster = _call("DescribeCluster", admin.describe_cluster)
    resources = [
        ConfigResource(ConfigResourceType.BROKER, str(b["broker_id"]), {"transaction.max.timeout.ms": None})
        for b in cluster["brokers"]
    ]
    if not resources:
        return DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
    described = _call("DescribeConfigs", admin.describe_configs, resources, config_filter="all")
    values = [
        int(entry["value"])
        for configs in described.get("broker", {}).values()
        for key, entry in configs.items()
        if key == "transaction.max.timeout.ms" and entry.get("value") is not None
    ]
    return max(values) if values else DEFAULT_MAX_TRANSACTION_TIMEOUT_MS


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


# -- acting ------------------------------------------------------------------------------------


def fence(spec: PipelineSpec, transactional_id: str, *, timeout_s: float = 60) -> None:
    """Abort ``transactional_id``'s open transaction by fencing it.

    ``init_transactions`` with the same id makes the coordinator abort the open transaction
    (writing abort markers, so the LSO moves on) and bump the epoch, so the old producer, if
    it still runs, fails on its next call.

    :raises TransactionalIdError: if the id is outside the spec's prefix (never fenced).
    :raises TransactionsAdminError: if the fence fails.
    """
    from confluent_kafka import KafkaException, Producer

    from airflow_provider_eos.kafka.client_config import common_config

    # Builds the id back through the scheme's owner, so only ids of this pipeline get here.
    expected = spec.transactional_id(writer_index(spec.transactional_id_prefix, transactional_id))
    producer = Producer({
        **common_config(spec),
        "transactional.id": expected,
        "transaction.timeout.ms": spec.transaction_timeout_ms,
        "log_level": 4,
    })
    try:
        producer.init_transactions(timeout_s)
    except KafkaException as exc:
        raise TransactionsAdminError(
            f"fencing transactional id {expected!r} (init_transactions) failed: {exc}",
            fix="retry; if it keeps failing, check the broker and that the principal may Write the transactional id",
        ) from exc
    finally:
        producer.close()


def abort_hanging(admin: KafkaAdminClient, row: txn.AbortRow) -> bool:
    """Abort one hanging transaction with the admin AbortTransaction (WriteTxnMarkers abort).

    The producer is looked up again first, as Kafka's ``abort --start-offset`` does, so a
    transaction that was resolved since the scan is not aborted blindly.

    :returns: ``True`` if an abort was sent, ``False`` if the transaction is no longer open.
    :raises TransactionsAdminError: if the abort fails.
    """
    from kafka.admin import AbortTransactionSpec
    from kafka.structs import TopicPartition as KafkaTopicPartition

    (tp,) = row.partitions
    current = describe_producers(admin, [tp]).get(tp, [])
    match = next(
        (p for p in current if p.producer_id == row.producer_id and p.current_txn_start_offset == row.start_offset),
        None,
    )
    if match is None:
        return False
    # Kafka's tool sends coordinator epoch 0 when DescribeProducers reports none (-1): any
    # marker epoch is >= 0, so the leader accepts it.
    spec = AbortTransactionSpec(
        KafkaTopicPartition(tp.topic, tp.partition),
        match.producer_id,
        match.producer_epoch,
        max(match.coordinator_epoch, 0),
    )
    _call(f"AbortTransaction on {tp} (producer {match.producer_id})", admin.abort_transaction, spec)
    return True


def _last_commit_time(spec: PipelineSpec, storage_options: Mapping[str, Any] | None) -> dt.datetime | None:
    from airflow_provider_eos.core.checkpoint import CheckpointReader

    reader = CheckpointReader(spec.checkpoint_location, storage_options)
    if not reader.exists():
        return None
    # The same value as snapshot().last_commit_time without parsing any offsets file: after a
    # crash the abort must not depend on more of the checkpoint than it needs.
    last = reader.latest_committed_batch()
    return None if last is None else reader.commit_time(last)


def _scan(
    admin: KafkaAdminClient, spec: PipelineSpec, partitions: list[TopicPartition], now: dt.datetime, min_age_ms: int
) -> tuple[list[txn.Transaction], list[txn.HangingTransaction], list[txn.PartitionOffsets]]:
    transactions = scan_prefix(admin, spec.transactional_id_prefix)
    hanging, offsets = scan_hanging(admin, partitions, now=now, max_transaction_timeout_ms=min_age_ms)
    return transactions, hanging, offsets


def _aborted_still_open(
    admin: KafkaAdminClient, done: Iterable[txn.AbortRow], scanned: Iterable[TopicPartition]
) -> bool:
    """Whether a producer just aborted still shows an open transaction on a scanned partition.

    Checked per producer, not by LSO < high watermark: another application's transaction on
    the same partition may keep the LSO pinned, and that one is not ours to wait for.
    """
    aborted = [row for row in done if row.outcome is txn.Outcome.ABORTED]
    producers = {row.producer_id for row in aborted}
    watch = {tp for row in aborted for tp in row.partitions} & set(scanned)
    if not watch:
        return False
    found = describe_producers(admin, watch)
    return any(p.producer_id in producers and p.has_open_transaction for states in found.values() for p in states)


def abort_open_transactions(
    spec: PipelineSpec,
    *,
    force: bool = False,
    execute: bool = True,
    now: dt.datetime | None = None,
    hanging_min_age_ms: int | None = None,
    quiet_period_ms: int | None = None,
    storage_options: Mapping[str, Any] | None = None,
    settle_timeout_s: float = 30,
) -> txn.AbortReport:
    """Scan, check safety, abort what is open under the pipeline's prefix, and rescan.

    Lingering transactions (ongoing under the prefix) are fenced; hanging transactions on the
    output and dead-letter partitions are aborted with AbortTransaction, except those the
    coordinator attributes to an id outside the prefix. Transactions of other ids are never
    touched.

    :param spec: the pipeline.
    :param force: act even if the job looks alive (recent checkpoint commit, young transaction).
    :param execute: ``False`` for a dry run: scan and report, change nothing, never refuse.
    :param now: the current time (default: now); ages and the safety check use it.
    :param hanging_min_age_ms: age above which an open partition transaction is a hanging
        candidate (default: the brokers' ``transaction.max.timeout.ms``, as Kafka's tool).
    :param quiet_period_ms: a checkpoint commit newer than this means the job may be alive
        (default: :func:`~airflow_provider_eos.core.transactions.default_quiet_period_ms`).
    :param storage_options: fsspec options for the checkpoint location.
    :param settle_timeout_s: how long the rescan waits for aborted transactions to disappear.
    :raises UnsafeToActError: if there is something to abort, the job looks alive, ``execute`` is
        set and ``force`` is not.
    :raises TransactionsAdminError: if the cluster cannot be read.
    """
    started = time.monotonic()
    scanned_at = now or dt.datetime.now(dt.UTC)

    def current_time() -> dt.datetime:
        return scanned_at + dt.timedelta(seconds=time.monotonic() - started)

    prefix = spec.transactional_id_prefix
    quiet = (
        quiet_period_ms
        if quiet_period_ms is not None
        else txn.default_quiet_period_ms(spec.transaction_timeout_ms, spec.trigger_interval_ms)
    )
    last_commit = _last_commit_time(spec, storage_options)
    topics = [spec.output_topic] + ([spec.dlq_topic] if spec.dlq_topic else [])
    notes: list[str] = []
    with admin_client(spec) as admin:
        partitions, missing = topic_partitions(admin, topics)
        if missing:
            notes.append(f"topic(s) {', '.join(missing)} do not exist; no hanging transactions there")
        min_age = hanging_min_age_ms if hanging_min_age_ms is not None else broker_max_transaction_timeout_ms(admin)
        transactions, hanging, offsets_before = _scan(admin, spec, partitions, scanned_at, min_age)
        safety_args = {
            "last_commit_time": last_commit,
            "now": scanned_at,
            "transaction_timeout_ms": spec.transaction_timeout_ms,
            "quiet_period_ms": quiet,
            "force": force,
        }
        planned = txn.plan_abort(
            prefix, transactions, hanging, now=scanned_at, transaction_timeout_ms=spec.transaction_timeout_ms
        )
        # Refuse only when there is something to do: a scan that finds nothing harms no one.
        if execute and any(row.action.acts for row in planned):
            safety = txn.check_safe_to_act(prefix, transactions, **safety_args)
        else:
            safety = txn.evaluate_safety(prefix, transactions, **safety_args)
        if not execute:
            rows = tuple(
                row.with_outcome(txn.Outcome.WOULD_ABORT if row.action.acts else txn.Outcome.LEFT) for row in planned
            )
            return txn.AbortReport(
                prefix=prefix,
                scanned_at=scanned_at,
                executed=False,
                safety=safety,
                rows=rows,
                offsets_before=tuple(offsets_before),
                offsets_after=tuple(offsets_before),
                remaining=tuple(row for row in rows if row.action.acts),
                hanging_min_age_ms=min_age,
                notes=tuple(notes),
            )

        done: list[txn.AbortRow] = []
        for row in planned:
            if not row.action.acts:
                done.append(row.with_outcome(txn.Outcome.LEFT))
                continue
            try:
                if row.action is txn.Action.FENCE and row.transactional_id is not None:
                    log.info("fencing transactional id %s (producer %s)", row.transactional_id, row.producer_id)
                    fence(spec, row.transactional_id)
                    done.append(row.with_outcome(txn.Outcome.ABORTED))
                elif abort_hanging(admin, row):
                    log.info("aborted hanging transaction of producer %s on %s", row.producer_id, row.partitions[0])
                    done.append(row.with_outcome(txn.Outcome.ABORTED))
                else:
                    gone = "no longer open when the abort was about to be sent"
                    done.append(row.with_outcome(txn.Outcome.LEFT, gone))
            except EosError as exc:
                log.warning("could not abort %s: %s", row.transactional_id or row.partitions, exc.message)
                done.append(row.with_outcome(txn.Outcome.FAILED, exc.message))

        # Markers are written asynchronously after the fence returns; wait until the rescan
        # shows nothing left to abort (or the wait runs out, and the report says what is left).
        deadline = time.monotonic() + settle_timeout_s
        while True:
            moment = current_time()
            transactions2, hanging2, offsets_after = _scan(admin, spec, partitions, moment, min_age)
            remaining = txn.plan_abort(
                prefix, transactions2, hanging2, now=moment, transaction_timeout_ms=spec.transaction_timeout_ms
            )
            settled = not any(row.action.acts for row in remaining) and not _aborted_still_open(admin, done, partitions)
            if settled or time.monotonic() >= deadline:
                break
            time.sleep(0.5)
    return txn.AbortReport(
        prefix=prefix,
        scanned_at=scanned_at,
        executed=True,
        safety=safety,
        rows=tuple(done),
        offsets_before=tuple(offsets_before),
        offsets_after=tuple(offsets_after),
        remaining=tuple(remaining),
        hanging_min_age_ms=min_age,
        notes=tuple(notes),
    )
