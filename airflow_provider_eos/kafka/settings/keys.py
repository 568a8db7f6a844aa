"""The table of librdkafka keys this package knows: which client role each belongs to and what it becomes in
the Java client under Spark and in kafka-python.

The spec's ``kafka`` dict is librdkafka's dialect. Every key a dialect accepts is listed here
with its translation; a key a dialect cannot take is refused by name, and a key dropped for a
dialect is dropped only with the reason written next to it. Keys missing from the table are
refused for the Java client and kafka-python (librdkafka itself judges them for its clients).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = [
    "CONSUMER_ALIASES",
    "PRODUCER_ALIASES",
    "SETTINGS",
    "SPECIAL",
    "Dropped",
    "Refused",
    "Renamed",
    "Rule",
    "Scope",
    "Setting",
    "Special",
]

#: ``common``: every client (connection, security, timeouts); ``producer``/``consumer``: one role only.
Scope = Literal["common", "producer", "consumer"]


@dataclass(frozen=True)
class Renamed:
    """The dialect takes the value under ``name``; ``kind`` says how the value is read, ``scale`` multiplies ints."""

    name: str
    kind: Literal["text", "int", "bool"] = "text"
    scale: int = 1


@dataclass(frozen=True)
class Dropped:
    """The key means nothing to the dialect and leaving it out changes nothing the pipeline relies on."""

    reason: str


@dataclass(frozen=True)
class Refused:
    """The dialect cannot express the key; the spec must change (``fix``)."""

    problem: str
    fix: str


@dataclass(frozen=True)
class Special:
    """The dialect's module translates the key together with others (security, values that decide)."""


SPECIAL = Special()
Rule = Renamed | Dropped | Refused | Special


@dataclass(frozen=True)
class Setting:
    """One librdkafka key: its role and its translation per dialect.

    ``kafka_python`` matters for ``common`` keys only: kafka-python serves the admin role, which
    neither produces nor consumes, so producer and consumer keys are dropped for it.
    """

    scope: Scope
    java: Rule
    kafka_python: Rule


_LIBRDKAFKA_LOGGING = Dropped("librdkafka's own logging and diagnostics; the other clients log through their loggers")
_OLD_BROKERS = Dropped(
    "only matters for brokers older than 0.10; the Java client and kafka-python always ask ApiVersions"
)
_ADMIN = Dropped("the admin client neither produces nor consumes")
_JAVA_SOCKET = Dropped("the Java client always sets TCP_NODELAY and SO_KEEPALIVE on its sockets")
_OAUTH = Refused(
    "OAUTHBEARER settings are not translated",
    "authenticate the pipeline's principal with SASL PLAIN or SCRAM (sasl.username and sasl.password)",
)
_LIBRDKAFKA_KERBEROS = Refused(
    "librdkafka's kinit settings have no meaning for this client",
    "remove it; the Java client logs in from sasl.kerberos.keytab and sasl.kerberos.principal",
)


SETTINGS: dict[str, Setting] = {
    # -- connection and security (every client) ---------------------------------------------------
    "bootstrap.servers": Setting("common", SPECIAL, SPECIAL),
    "metadata.broker.list": Setting("common", SPECIAL, SPECIAL),
    "client.id": Setting("common", Renamed("client.id"), Renamed("client_id")),
    "security.protocol": Setting("common", SPECIAL, SPECIAL),
    "sasl.mechanism": Setting("common", SPECIAL, SPECIAL),
    "sasl.mechanisms": Setting("common", SPECIAL, SPECIAL),
    "sasl.username": Setting("common", SPECIAL, Renamed("sasl_plain_username")),
    "sasl.password": Setting("common", SPECIAL, Renamed("sasl_plain_password")),
    "sasl.kerberos.service.name": Setting("common", SPECIAL, Renamed("sasl_kerberos_service_name")),
    "sasl.kerberos.principal": Setting("common", SPECIAL, SPECIAL),
    "sasl.kerberos.keytab": Setting("common", SPECIAL, SPECIAL),
    "sasl.kerberos.kinit.cmd": Setting("common", _LIBRDKAFKA_KERBEROS, _LIBRDKAFKA_KERBEROS),
    "sasl.kerberos.min.time.before.relogin": Setting("common", _LIBRDKAFKA_KERBEROS, _LIBRDKAFKA_KERBEROS),
    "sasl.oauthbearer.config": Setting("common", _OAUTH, _OAUTH),
    "sasl.oauthbearer.method": Setting("common", _OAUTH, _OAUTH),
    "sasl.oauthbearer.client.id": Setting("common", _OAUTH, _OAUTH),
    "sasl.oauthbearer.client.secret": Setting("common", _OAUTH, _OAUTH),
    "sasl.oauthbearer.token.endpoint.url": Setting("common", _OAUTH, _OAUTH),
    "sasl.oauthbearer.scope": Setting("common", _OAUTH, _OAUTH),
    "enable.sasl.oauthbearer.unsecure.jwt": Setting("common", _OAUTH, _OAUTH),
    "ssl.ca.location": Setting("common", SPECIAL, SPECIAL),
    "ssl.ca.pem": Setting(
        "common",
        SPECIAL,
        Refused("kafka-python reads the CA from a file only", "put the CA in a file and set ssl.ca.location instead"),
    ),
    "ssl.certificate.location": Setting("common", SPECIAL, Renamed("ssl_certfile")),
    "ssl.key.location": Setting("common", SPECIAL, Renamed("ssl_keyfile")),
    "ssl.certificate.pem": Setting(
        "common",
        SPECIAL,
        Refused(
            "kafka-python reads the client certificate from a file only",
            "put it in a file and set ssl.certificate.location instead",
        ),
    ),
    "ssl.key.pem": Setting(
        "common",
        SPECIAL,
        Refused(
            "kafka-python reads the private key from a file only",
            "put it in a file readable only by the job and set ssl.key.location instead",
        ),
    ),
    "ssl.key.password": Setting("common", SPECIAL, Renamed("ssl_password")),
    "ssl.keystore.location": Setting(
        "common",
        SPECIAL,
        Refused(
            "kafka-python takes PEM files, not a PKCS#12 keystore",
            "convert it (openssl pkcs12 -in keystore.p12 -nokeys -out client.pem; ... -nocerts -out client.key) "
            "and set ssl.certificate.location and ssl.key.location instead",
        ),
    ),
    "ssl.keystore.password": Setting(
        "common", SPECIAL, Refused("kafka-python takes PEM files, not a PKCS#12 keystore", "see ssl.keystore.location")
    ),
    "ssl.crl.location": Setting(
        "common",
        Refused(
            "the Java client has no certificate revocation list setting",
            "remove it and enable revocation checking in the JVM (com.sun.net.ssl.checkRevocation)",
        ),
        # kafka-python 3.0.12 (the pinned line) passes its ssl_crlfile to load_verify_locations(crl=...), which
        # Python's SSLContext does not take: every TLS connection of the admin client would fail.
        Refused(
            "kafka-python cannot load a certificate revocation list (its ssl_crlfile fails every TLS "
            "connection: 'crl' is an invalid keyword argument for load_verify_locations())",
            "remove it (the Java client refuses it too) and replace a revoked broker certificate on the brokers",
        ),
    ),
    "ssl.cipher.suites": Setting(
        "common",
        Refused(
            "librdkafka takes OpenSSL cipher names, the Java client IANA names",
            "remove it (both clients default to strong suites) or restrict the suites on the brokers",
        ),
        Refused("kafka-python's admin client takes no cipher list", "remove it or restrict the suites on the brokers"),
    ),
    "ssl.endpoint.identification.algorithm": Setting("common", SPECIAL, SPECIAL),
    "enable.ssl.certificate.verification": Setting("common", SPECIAL, SPECIAL),
    # -- timeouts, backoffs, sockets (every client) -------------------------------------------------
    "socket.timeout.ms": Setting("common", Renamed("request.timeout.ms", "int"), Renamed("request_timeout_ms", "int")),
    "metadata.max.age.ms": Setting(
        "common", Renamed("metadata.max.age.ms", "int"), Renamed("metadata_max_age_ms", "int")
    ),
    "topic.metadata.refresh.interval.ms": Setting(
        "common", Renamed("metadata.max.age.ms", "int"), Renamed("metadata_max_age_ms", "int")
    ),
    "reconnect.backoff.ms": Setting(
        "common", Renamed("reconnect.backoff.ms", "int"), Renamed("reconnect_backoff_ms", "int")
    ),
    "reconnect.backoff.max.ms": Setting(
        "common", Renamed("reconnect.backoff.max.ms", "int"), Renamed("reconnect_backoff_max_ms", "int")
    ),
    "retry.backoff.ms": Setting("common", Renamed("retry.backoff.ms", "int"), Renamed("retry_backoff_ms", "int")),
    "retry.backoff.max.ms": Setting(
        "common",
        Renamed("retry.backoff.max.ms", "int"),
        Dropped("kafka-python backs off retries by retry_backoff_ms alone; the bound only caps growth"),
    ),
    "connections.max.idle.ms": Setting(
        "common", Renamed("connections.max.idle.ms", "int"), Renamed("connections_max_idle_ms", "int")
    ),
    "socket.connection.setup.timeout.ms": Setting(
        "common",
        Renamed("socket.connection.setup.timeout.ms", "int"),
        Dropped("kafka-python bounds connecting by request_timeout_ms and bootstrap_timeout_ms"),
    ),
    "socket.send.buffer.bytes": Setting(
        "common", Renamed("send.buffer.bytes", "int"), Renamed("send_buffer_bytes", "int")
    ),
    "socket.receive.buffer.bytes": Setting(
        "common", Renamed("receive.buffer.bytes", "int"), Renamed("receive_buffer_bytes", "int")
    ),
    "client.dns.lookup": Setting("common", Renamed("client.dns.lookup"), Renamed("client_dns_lookup")),
    "socket.nagle.disable": Setting("common", _JAVA_SOCKET, Dropped("kafka-python sets TCP_NODELAY by default")),
    "socket.keepalive.enable": Setting(
        "common", _JAVA_SOCKET, Dropped("the admin client's connections are short-lived")
    ),
    "api.version.request": Setting("common", _OLD_BROKERS, _OLD_BROKERS),
    "api.version.request.timeout.ms": Setting("common", _OLD_BROKERS, _OLD_BROKERS),
    "api.version.fallback.ms": Setting("common", _OLD_BROKERS, _OLD_BROKERS),
    "broker.version.fallback": Setting("common", _OLD_BROKERS, _OLD_BROKERS),
    "debug": Setting("common", _LIBRDKAFKA_LOGGING, _LIBRDKAFKA_LOGGING),
    "log_level": Setting("common", _LIBRDKAFKA_LOGGING, _LIBRDKAFKA_LOGGING),
    "log.queue": Setting("common", _LIBRDKAFKA_LOGGING, _LIBRDKAFKA_LOGGING),
    "log.thread.name": Setting("common", _LIBRDKAFKA_LOGGING, _LIBRDKAFKA_LOGGING),
    "log.connection.close": Setting("common", _LIBRDKAFKA_LOGGING, _LIBRDKAFKA_LOGGING),
    "statistics.interval.ms": Setting("common", _LIBRDKAFKA_LOGGING, _LIBRDKAFKA_LOGGING),
    # -- producer -----------------------------------------------------------------------------------
    "acks": Setting("producer", Renamed("acks"), _ADMIN),
    "request.required.acks": Setting("producer", Renamed("acks"), _ADMIN),
    "enable.idempotence": Setting("producer", Renamed("enable.idempotence", "bool"), _ADMIN),
    "transactional.id": Setting("producer", Renamed("transactional.id"), _ADMIN),
    "transaction.timeout.ms": Setting("producer", Renamed("transaction.timeout.ms", "int"), _ADMIN),
    "linger.ms": Setting("producer", Renamed("linger.ms", "int"), _ADMIN),
    "queue.buffering.max.ms": Setting("producer", Renamed("linger.ms", "int"), _ADMIN),
    "batch.size": Setting("producer", Renamed("batch.size", "int"), _ADMIN),
    "batch.num.messages": Setting(
        "producer", Dropped("the Java producer bounds a batch by batch.size bytes, not by a record count"), _ADMIN
    ),
    "compression.type": Setting("producer", SPECIAL, _ADMIN),
    "compression.codec": Setting("producer", SPECIAL, _ADMIN),
    "message.timeout.ms": Setting("producer", Renamed("delivery.timeout.ms", "int"), _ADMIN),
    "delivery.timeout.ms": Setting("producer", Renamed("delivery.timeout.ms", "int"), _ADMIN),
    "request.timeout.ms": Setting("producer", Renamed("request.timeout.ms", "int"), _ADMIN),
    "max.in.flight.requests.per.connection": Setting(
        "producer", Renamed("max.in.flight.requests.per.connection", "int"), _ADMIN
    ),
    "max.in.flight": Setting("producer", Renamed("max.in.flight.requests.per.connection", "int"), _ADMIN),
    "retries": Setting("producer", Renamed("retries", "int"), _ADMIN),
    "message.send.max.retries": Setting("producer", Renamed("retries", "int"), _ADMIN),
    "message.max.bytes": Setting("producer", Renamed("max.request.size", "int"), _ADMIN),
    "queue.buffering.max.kbytes": Setting("producer", Renamed("buffer.memory", "int", scale=1024), _ADMIN),
    "queue.buffering.max.messages": Setting(
        "producer", Dropped("the Java producer bounds its buffer by buffer.memory bytes, not by a record count"), _ADMIN
    ),
    "partitioner": Setting("producer", SPECIAL, _ADMIN),
    # -- consumer -----------------------------------------------------------------------------------
    "isolation.level": Setting("consumer", Renamed("isolation.level"), _ADMIN),
    "enable.auto.commit": Setting("consumer", SPECIAL, _ADMIN),
    "auto.offset.reset": Setting(
        "consumer",
        Refused(
            "Spark's Kafka source refuses kafka.auto.offset.reset",
            "remove it and set the spec's starting_offsets",
        ),
        _ADMIN,
    ),
    "enable.auto.offset.store": Setting(
        "consumer", Dropped("Spark's Kafka source keeps its offsets in the checkpoint, never in the group"), _ADMIN
    ),
    "enable.partition.eof": Setting(
        "consumer", Dropped("a librdkafka consumer event; the Java consumer has no such event"), _ADMIN
    ),
    "fetch.wait.max.ms": Setting("consumer", Renamed("fetch.max.wait.ms", "int"), _ADMIN),
    "fetch.min.bytes": Setting("consumer", Renamed("fetch.min.bytes", "int"), _ADMIN),
    "fetch.max.bytes": Setting("consumer", Renamed("fetch.max.bytes", "int"), _ADMIN),
    "max.partition.fetch.bytes": Setting("consumer", Renamed("max.partition.fetch.bytes", "int"), _ADMIN),
    "fetch.message.max.bytes": Setting("consumer", Renamed("max.partition.fetch.bytes", "int"), _ADMIN),
    "session.timeout.ms": Setting("consumer", Renamed("session.timeout.ms", "int"), _ADMIN),
    "heartbeat.interval.ms": Setting("consumer", Renamed("heartbeat.interval.ms", "int"), _ADMIN),
    "max.poll.interval.ms": Setting("consumer", Renamed("max.poll.interval.ms", "int"), _ADMIN),
    "check.crcs": Setting("consumer", Renamed("check.crcs", "bool"), _ADMIN),
    "client.rack": Setting("consumer", Renamed("client.rack"), _ADMIN),
    "queued.min.messages": Setting(
        "consumer", Dropped("librdkafka's prefetch queue; the Java consumer fetches per poll"), _ADMIN
    ),
    "queued.max.messages.kbytes": Setting(
        "consumer", Dropped("librdkafka's prefetch queue; the Java consumer fetches per poll"), _ADMIN
    ),
}
"""Every librdkafka key the package translates, drops with a reason, or refuses for the other dialects."""


PRODUCER_ALIASES: dict[str, str] = {
    "queue.buffering.max.ms": "linger.ms",
    "compression.codec": "compression.type",
    "delivery.timeout.ms": "message.timeout.ms",
    "request.required.acks": "acks",
    "max.in.flight": "max.in.flight.requests.per.connection",
    "message.send.max.retries": "retries",
}
"""librdkafka's pairs of names for one producer setting: each key with the name this package uses.

librdkafka takes either name; the sink sets some of these settings itself (``linger.ms``,
``compression.type``, ``message.timeout.ms``, ``acks``), so a spec's alias must become the package's
name before those defaults are added, or the producer would get both names with different values.
"""


CONSUMER_ALIASES: dict[str, str] = {"fetch.message.max.bytes": "max.partition.fetch.bytes"}
"""librdkafka's pairs of names for one consumer setting: each key with the name this package uses (librdkafka
names ``fetch.message.max.bytes`` when it refuses a spec's ``max.partition.fetch.bytes``)."""
