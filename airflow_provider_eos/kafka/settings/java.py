"""The spec's librdkafka settings for the Java Kafka client under Spark: Kafka source and sink options.

Spark's Kafka source (a Java consumer) and Spark's own Kafka sink (a Java producer, the
at-least-once writer) take Kafka settings as options with a ``kafka.`` prefix and the Java
client's names. :func:`java_client_config` translates key by key through
:data:`~airflow_provider_eos.kafka.settings.keys.SETTINGS`: renamed keys carry their value over,
SASL/SSL settings go through :mod:`~airflow_provider_eos.kafka.settings.java_security`, keys of
the other role or without meaning for the Java client are dropped only for the reason the table
gives (named at DEBUG), and anything else is refused with :class:`KafkaConfigError`.

The result holds secrets (``sasl.jaas.config`` carries the password, ``ssl.keystore.key`` the
private key): log it only through :func:`airflow_provider_eos.core.secrets.redact_config`.
Spark hides option values that match its redaction regexes (``sasl.jaas.config`` matches by its
``password=``), not an inline PEM key; :data:`SPARK_OPTIONS_REDACTION_REGEX` covers both.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, Literal

from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings.java_security import java_sasl, java_ssl
from airflow_provider_eos.kafka.settings.keys import Renamed
from airflow_provider_eos.kafka.settings.librdkafka import common_config, sink_producer_config
from airflow_provider_eos.kafka.settings.translation import require_bootstrap_servers, settings_to_translate
from airflow_provider_eos.kafka.settings.values import (
    JAVA,
    as_bool,
    as_int,
    as_text,
    bootstrap_servers,
    refuse,
    security_protocol,
)

__all__ = [
    "SPARK_OPTIONS_REDACTION_REGEX",
    "SPARK_PREFIX",
    "JavaRole",
    "java_admin_config",
    "java_client_config",
    "java_sink_producer_config",
    "spark_sink_options",
    "spark_source_defaults",
    "spark_source_options",
]

log = logging.getLogger(__name__)

#: ``consumer`` for Spark's Kafka source, ``producer`` for Spark's Kafka sink.
JavaRole = Literal["consumer", "producer"]

SPARK_PREFIX = "kafka."
"""Spark's prefix for Kafka client settings among a Kafka source's or sink's options."""

SPARK_OPTIONS_REDACTION_REGEX = r"(?i)url|jaas|password|keystore\.key"
"""A value for ``spark.sql.redaction.options.regex`` that hides these options in Spark's plans and UI."""

_COMPRESSION = frozenset({"none", "gzip", "snappy", "lz4", "zstd"})
_SECURITY_KEYS = frozenset(
    {
        "security.protocol",
        "sasl.mechanism",
        "sasl.mechanisms",
        "sasl.username",
        "sasl.password",
        "sasl.kerberos.service.name",
        "sasl.kerberos.principal",
        "sasl.kerberos.keytab",
        "ssl.ca.location",
        "ssl.ca.pem",
        "ssl.certificate.location",
        "ssl.key.location",
        "ssl.certificate.pem",
        "ssl.key.pem",
        "ssl.key.password",
        "ssl.keystore.location",
        "ssl.keystore.password",
        "ssl.endpoint.identification.algorithm",
        "enable.ssl.certificate.verification",
    }
)
# Java's default request.timeout.ms; delivery.timeout.ms must cover linger.ms plus it.
_JAVA_REQUEST_TIMEOUT_MS = 30_000


def _renamed(key: str, rule: Renamed, value: Any) -> str:
    if rule.kind == "int":
        return str(as_int(key, value) * rule.scale)
    if rule.kind == "bool":
        return "true" if as_bool(key, value) else "false"
    return as_text(value)


def _special(key: str, value: Any, role: JavaRole) -> dict[str, str]:
    """The keys translated by value rather than by name (security excepted)."""
    if key in ("bootstrap.servers", "metadata.broker.list"):
        return {"bootstrap.servers": ",".join(bootstrap_servers(key, value))}
    if key in ("compression.type", "compression.codec"):
        codec = as_text(value).lower()
        if codec not in _COMPRESSION:
            raise refuse(key, JAVA, f"is {codec!r}", f"use one of {', '.join(sorted(_COMPRESSION))}")
        return {"compression.type": codec}
    if key == "partitioner":
        if as_text(value) != "murmur2_random":
            raise refuse(
                key,
                JAVA,
                f"{as_text(value)!r} has no Java partitioner; the Java producer hashes keys with murmur2",
                "use murmur2_random, the partitioner the Java producer and this package's sink share",
            )
        log.debug("kafka['partitioner'] murmur2_random is the Java producer's default partitioning")
        return {}
    if key == "enable.auto.commit":
        if as_bool(key, value):
            raise refuse(
                key,
                JAVA,
                "Spark's Kafka source refuses kafka.enable.auto.commit; it never commits offsets",
                "remove it (the sink commits the group's offsets inside its transactions)",
            )
        log.debug("kafka['enable.auto.commit'] false is what Spark's Kafka source sets itself")
        return {}
    raise AssertionError(f"no Java translation for special key {key!r} in role {role}")  # the table and this disagree


def _put(out: dict[str, str], origin: dict[str, str], key: str, translated: Mapping[str, str]) -> None:
    for java_key, java_value in translated.items():
        if java_key in out and out[java_key] != java_value:
            raise refuse(
                key,
                JAVA,
                f"sets the Java client's {java_key!r}, as kafka[{origin[java_key]!r}] does, to another value",
                f"set only one of {origin[java_key]!r} and {key!r}",
            )
        out[java_key], origin[java_key] = java_value, key


def java_client_config(librdkafka: Mapping[str, Any], role: JavaRole) -> dict[str, str]:
    """Translate a librdkafka config into the Java client's config for one role (string values).

    :param librdkafka: the spec's ``kafka`` dict (or any librdkafka config).
    :param role: ``consumer`` (Spark's Kafka source) or ``producer`` (Spark's Kafka sink).
    :returns: Java client settings, without Spark's ``kafka.`` prefix. Holds secrets.
    :raises KafkaConfigError: naming the key, the client and the fix, for any setting that
        cannot be translated.
    """
    out: dict[str, str] = {}
    origin: dict[str, str] = {}
    security: dict[str, Any] = {}
    purpose = "Spark's Kafka source and sink"
    for key, value, rule in settings_to_translate(librdkafka, JAVA, purpose, lambda setting: setting.java,
                                                  role=role, claimed=_SECURITY_KEYS):
        if rule is None:
            security[key] = value
        elif isinstance(rule, Renamed):
            _put(out, origin, key, {rule.name: _renamed(key, rule, value)})
        else:
            _put(out, origin, key, _special(key, value, role))
    require_bootstrap_servers("bootstrap.servers" in out)
    protocol = security_protocol("security.protocol", security.get("security.protocol", "PLAINTEXT"))
    if "security.protocol" in security:
        out["security.protocol"] = protocol
    for key, translated in (("sasl.*", java_sasl(security, protocol)), ("ssl.*", java_ssl(security))):
        _put(out, origin, key, translated)
    if role == "producer":
        _check_delivery_timeout(out, origin)
    return out


def _check_delivery_timeout(out: Mapping[str, str], origin: Mapping[str, str]) -> None:
    # The Java producer refuses to start otherwise; librdkafka has no such rule.
    if "delivery.timeout.ms" not in out:
        return
    needed = int(out.get("linger.ms", 5)) + int(out.get("request.timeout.ms", _JAVA_REQUEST_TIMEOUT_MS))
    if int(out["delivery.timeout.ms"]) < needed:
        key = origin["delivery.timeout.ms"]
        raise refuse(
            key,
            JAVA,
            f"is {out['delivery.timeout.ms']} ms, below linger.ms + request.timeout.ms ({needed} ms), which the "
            "Java producer requires",
            f"raise {key} to at least {needed}, or lower linger.ms / socket.timeout.ms",
        )


def _spark_options(config: Mapping[str, str]) -> dict[str, str]:
    return {f"{SPARK_PREFIX}{key}": value for key, value in config.items()}


#: Records per poll of the Spark Kafka source's consumers (Kafka's default: 500). After every poll Spark asks
#: the partition's earliest and latest offsets, two ListOffsets round trips (its check of what the poll
#: returned, SPARK-34187): at 500 records a poll that is 400 requests per 100,000 records, which the tasks wait
#: for and the brokers serve. A poll returns only what the consumer already fetched for the task's one
#: partition (``max.partition.fetch.bytes``, 1 MiB by default), so the larger cap holds no more memory: it
#: lets one poll take a whole fetch of records down to about 100 bytes (docs/design-notes.md note 45).
SPARK_SOURCE_MAX_POLL_RECORDS = 10_000

#: How long the broker may hold a fetch of the Spark Kafka source's consumers waiting for new records
#: (Kafka's default: 500 ms). A task reads only offsets the driver planned, which exist; the only fetch that
#: ever waits is the one the consumer sends ahead after the poll that reached the partition's end. The
#: offsets check Spark makes after that poll then queues behind it on the same connection: every task that
#: reads up to the end of its partition, as a caught-up query's tasks do in every batch, was held this long
#: (docs/design-notes.md note 46). A spec's own ``fetch.wait.max.ms`` is kept.
SPARK_SOURCE_FETCH_MAX_WAIT_MS = 10


def spark_source_defaults() -> dict[str, str]:
    """The Java consumer settings the job's Kafka source takes beyond the spec's (the Java client's names)."""
    return {"max.poll.records": str(SPARK_SOURCE_MAX_POLL_RECORDS),
            "fetch.max.wait.ms": str(SPARK_SOURCE_FETCH_MAX_WAIT_MS)}


def spark_source_options(spec: PipelineSpec) -> dict[str, str]:
    """The spec's Kafka settings as Spark Kafka source options (``kafka.`` prefix, Java names). Holds secrets.

    The source gets :func:`spark_source_defaults` where the spec says nothing: the spec's ``kafka`` is
    librdkafka's dialect, which has no ``max.poll.records``; its ``fetch.wait.max.ms`` is kept.

    :raises KafkaConfigError: for a setting the Java consumer cannot take.
    """
    return _spark_options({**spark_source_defaults(), **java_client_config(spec.kafka, "consumer")})


def spark_sink_options(spec: PipelineSpec) -> dict[str, str]:
    """The spec's Kafka settings as options of Spark's own Kafka sink (``kafka.`` prefix, Java names). Holds secrets.

    :raises KafkaConfigError: for a setting the Java producer cannot take.
    """
    return _spark_options(java_client_config(spec.kafka, "producer"))


#: librdkafka's default ``batch.size`` (bytes per partition batch): the Python writer's producers
#: batch up to it, the Java producer's default is 16 KiB.
_LIBRDKAFKA_BATCH_SIZE = 1_000_000
#: The Java transactional producer's ``retry.backoff.ms`` unless the spec sets one. Its
#: ``initTransactions`` first looks the coordinator up and then sends InitProducerId as a retried
#: request, which the sender holds back for the backoff: 100 ms of Kafka's default in every new
#: producer's init (docs/design-notes.md note 44 has the measurement). The transaction manager's
#: backoff is fixed (no exponential growth), so a retriable transactional error is asked again at this pace.
_JAVA_TRANSACTIONAL_RETRY_BACKOFF_MS = 20


def java_sink_producer_config(spec: PipelineSpec) -> dict[str, str]:
    """The exactly-once sink's transactional producer in the Java client's dialect (the JVM executor writer).

    The Python writer's own settings (:func:`~airflow_provider_eos.kafka.settings.librdkafka.sink_producer_config`:
    acks=all, idempotence, the transaction timeout, the spec's compression, linger and batch size,
    ``message.timeout.ms`` within the transaction timeout) translated key by key, without the
    ``transactional.id``: the JVM writer sets each input partition's (``spec.partition_transactional_id``).
    Where librdkafka's default differs and the spec says nothing, the Java producer gets librdkafka's
    (``batch.size``), so both writers batch alike; and a short ``retry.backoff.ms``, which the Java
    producer's ``initTransactions`` otherwise waits out once per new producer. A transaction timeout
    below the Java request timeout lowers ``request.timeout.ms`` with it (the Java producer requires
    ``delivery.timeout.ms >= linger.ms + request.timeout.ms``; librdkafka has no such rule).
    Holds secrets.

    :raises KafkaConfigError: for a setting the Java producer cannot take.
    """
    librdkafka = {k: v for k, v in sink_producer_config(spec).items() if k != "transactional.id"}
    librdkafka.setdefault("batch.size", _LIBRDKAFKA_BATCH_SIZE)
    linger = int(librdkafka["linger.ms"])  # the sink's or the spec's, aliases already reduced to it
    delivery = int(librdkafka["message.timeout.ms"])
    timeouts = ("request.timeout.ms", "socket.timeout.ms")
    if not any(k in librdkafka for k in timeouts) and delivery < linger + _JAVA_REQUEST_TIMEOUT_MS:
        librdkafka["request.timeout.ms"] = max(1_000, delivery - linger)
    librdkafka.setdefault("retry.backoff.ms", _JAVA_TRANSACTIONAL_RETRY_BACKOFF_MS)
    return java_client_config(librdkafka, "producer")


def java_admin_config(spec: PipelineSpec) -> dict[str, str]:
    """The spec's connection settings for a Java admin client (the JVM executor writer's offset reads). Holds secrets.

    :raises KafkaConfigError: for a setting the Java client cannot take.
    """
    # The key table has no admin role: connection settings (bootstrap, SASL, TLS) are the same for every
    # Java client, and the producer role translates them as they are.
    return java_client_config(common_config(spec), "producer")
