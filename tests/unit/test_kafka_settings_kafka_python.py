"""librdkafka settings -> kafka-python ``KafkaAdminClient`` arguments: a case per key, refusals, secrets out of logs.

Moved here with the translation from ``kafka/transactions_admin.py`` (the first four tests are
the ones that lived in ``tests/unit/test_transactions.py``).
"""

from __future__ import annotations

import logging
import ssl
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.errors import KafkaConfigError
from airflow_provider_eos.kafka.settings import kafka_python_config, protect_secrets
from airflow_provider_eos.kafka.settings.keys import SETTINGS

BOOT = {"bootstrap.servers": "b:9092"}


def test_kafka_python_config_translates_connection_and_security(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="airflow_provider_eos.kafka.settings"):
        config = kafka_python_config({
            "bootstrap.servers": "b1:9093, b2:9093",
            "client.id": "orders-eos",
            "security.protocol": "sasl_ssl",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "svc",
            "sasl.password": "s3cr3t-pass",
            "ssl.ca.location": "/etc/ca.pem",
            "ssl.certificate.location": "/etc/client.pem",
            "ssl.key.location": "/etc/client.key",
            "ssl.key.password": "k3y-pass",
            "ssl.endpoint.identification.algorithm": "none",
            "socket.timeout.ms": "45000",
            "linger.ms": 20,
            "queue.buffering.max.kbytes": "s3cr3t-looking-value",
        })
    assert config == {
        "bootstrap_servers": ["b1:9093", "b2:9093"],
        "client_id": "orders-eos",
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "svc",
        "sasl_plain_password": "s3cr3t-pass",
        "ssl_cafile": "/etc/ca.pem",
        "ssl_certfile": "/etc/client.pem",
        "ssl_keyfile": "/etc/client.key",
        "ssl_password": "k3y-pass",
        "ssl_check_hostname": False,
        "request_timeout_ms": 45000,
    }
    logged = caplog.text
    assert "'linger.ms'" in logged and "'queue.buffering.max.kbytes'" in logged
    assert "s3cr3t" not in logged and "k3y" not in logged


def test_kafka_python_config_without_certificate_verification_builds_a_context() -> None:
    config = kafka_python_config(
        {"bootstrap.servers": "b:9093", "security.protocol": "SSL", "enable.ssl.certificate.verification": "false"}
    )
    assert config["ssl_context"].verify_mode == ssl.CERT_NONE and config["ssl_check_hostname"] is False


@pytest.mark.parametrize(("settings", "mechanism"), [
    ({"security.protocol": "SASL_SSL"}, "GSSAPI"),  # librdkafka's default, and the Java client's
    ({"security.protocol": "sasl_plaintext", "sasl.kerberos.service.name": "kafka"}, "GSSAPI"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256"}, "SCRAM-SHA-256"),
    ({"security.protocol": "SSL"}, None),
    ({}, None),
])
def test_a_sasl_protocol_without_a_mechanism_is_gssapi_as_in_librdkafka(settings: dict, mechanism: str) -> None:
    assert kafka_python_config({**BOOT, **settings}).get("sasl_mechanism") == mechanism


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ({"bootstrap.servers": "b:1", "sasl.mechanism": "OAUTHBEARER"}, "sasl.mechanism"),
        ({"bootstrap.servers": "b:1", "security.protocol": "TLS"}, "security.protocol"),
        ({"bootstrap.servers": " , "}, "bootstrap.servers"),
        ({"client.id": "x"}, "bootstrap.servers"),
        ({"bootstrap.servers": "b:1", "socket.timeout.ms": "soon"}, "socket.timeout.ms"),
        ({"bootstrap.servers": "b:1", "enable.ssl.certificate.verification": "maybe"}, "enable.ssl"),
    ],
)
def test_kafka_python_config_rejects_what_it_cannot_honour(config: dict, named: str) -> None:
    with pytest.raises(KafkaConfigError) as raised:
        kafka_python_config(config)
    assert named in str(raised.value) and raised.value.fix


def test_kafka_python_debug_logs_never_show_secrets(caplog: pytest.LogCaptureFixture) -> None:
    protect_secrets({"sasl_plain_password": "pw-123456", "ssl_password": "kp-654321", "ssl_cafile": "/etc/ca.pem"})
    with caplog.at_level(logging.DEBUG, logger="kafka"):
        logging.getLogger("kafka.protocol.parser").debug("Send: %r", b"\x00svc\x00pw-123456")
        logging.getLogger("kafka.admin.client").debug("Starting KafkaAdminClient with configuration: %s", {"a": 1})
        logging.getLogger("kafka.net.connection").debug("harmless %s", "line")
        logging.getLogger("kafka.conn").debug("CA file %s", "/etc/ca.pem")
    assert "pw-123456" not in caplog.text
    assert "Starting KafkaAdminClient" not in caplog.text
    assert "harmless line" in caplog.text
    assert "/etc/ca.pem" in caplog.text  # a path is not a secret


# -- one case per key ---------------------------------------------------------------------------

RENAMED: list[tuple[str, Any, dict[str, Any]]] = [
    ("bootstrap.servers", "b1:1, b2:2", {"bootstrap_servers": ["b1:1", "b2:2"]}),
    ("metadata.broker.list", "b3:3", {"bootstrap_servers": ["b3:3"]}),
    ("client.id", "eos", {"client_id": "eos"}),
    ("security.protocol", "ssl", {"security_protocol": "SSL"}),
    ("sasl.mechanism", "plain", {"sasl_mechanism": "PLAIN"}),
    ("sasl.mechanisms", "GSSAPI", {"sasl_mechanism": "GSSAPI"}),
    ("sasl.username", "svc", {"sasl_plain_username": "svc"}),
    ("sasl.password", "pw", {"sasl_plain_password": "pw"}),
    ("sasl.kerberos.service.name", "kafka", {"sasl_kerberos_service_name": "kafka"}),
    ("ssl.ca.location", "/ca.pem", {"ssl_cafile": "/ca.pem"}),
    # librdkafka's word for the system's CA store: kafka-python loads it when given no CA file.
    ("ssl.ca.location", "probe", {}),
    ("ssl.certificate.location", "/c.pem", {"ssl_certfile": "/c.pem"}),
    ("ssl.key.location", "/k.pem", {"ssl_keyfile": "/k.pem"}),
    ("ssl.key.password", "kp", {"ssl_password": "kp"}),
    ("ssl.endpoint.identification.algorithm", "https", {"ssl_check_hostname": True}),
    ("ssl.endpoint.identification.algorithm", "none", {"ssl_check_hostname": False}),
    ("socket.timeout.ms", 30_000, {"request_timeout_ms": 30_000}),
    ("metadata.max.age.ms", "60000", {"metadata_max_age_ms": 60_000}),
    ("topic.metadata.refresh.interval.ms", 30_000, {"metadata_max_age_ms": 30_000}),
    ("reconnect.backoff.ms", 50, {"reconnect_backoff_ms": 50}),
    ("reconnect.backoff.max.ms", 1000, {"reconnect_backoff_max_ms": 1000}),
    ("retry.backoff.ms", 100, {"retry_backoff_ms": 100}),
    ("connections.max.idle.ms", 60_000, {"connections_max_idle_ms": 60_000}),
    ("socket.send.buffer.bytes", 65536, {"send_buffer_bytes": 65536}),
    ("socket.receive.buffer.bytes", 65536, {"receive_buffer_bytes": 65536}),
    ("client.dns.lookup", "resolve_canonical_bootstrap_servers_only",
     {"client_dns_lookup": "resolve_canonical_bootstrap_servers_only"}),
    ("enable.ssl.certificate.verification", True, {}),
]

#: Common keys kafka-python leaves out on purpose; every producer and consumer key is dropped too.
DROPPED_COMMON = [
    ("retry.backoff.max.ms", 1000),
    ("socket.connection.setup.timeout.ms", 10_000),
    ("socket.nagle.disable", True),
    ("socket.keepalive.enable", True),
    ("api.version.request", True),
    ("api.version.request.timeout.ms", 10_000),
    ("api.version.fallback.ms", 0),
    ("broker.version.fallback", "0.10.0"),
    ("debug", "all"),
    ("log_level", 7),
    ("log.queue", True),
    ("log.thread.name", True),
    ("log.connection.close", False),
    ("statistics.interval.ms", 1000),
]

REFUSED: list[tuple[str, Any, str]] = [
    ("ssl.ca.pem", "-----BEGIN CERTIFICATE-----", "ssl.ca.location"),
    ("ssl.certificate.pem", "-----BEGIN CERTIFICATE-----", "ssl.certificate.location"),
    ("ssl.key.pem", "-----BEGIN PRIVATE KEY-----", "ssl.key.location"),
    ("ssl.keystore.location", "/k.p12", "openssl pkcs12"),
    ("ssl.keystore.password", "pw", "ssl.keystore.location"),
    ("ssl.cipher.suites", "ECDHE-RSA-AES256-GCM-SHA384", "remove it"),
    # Translated to ssl_crlfile, it failed every TLS connection ('crl' is an invalid keyword argument).
    ("ssl.crl.location", "/crl.pem", "remove it"),
    ("sasl.kerberos.keytab", "/k.keytab", "kinit"),
    ("sasl.kerberos.principal", "eos@REALM", "kinit"),
    ("sasl.kerberos.kinit.cmd", "kinit", "remove it"),
    ("sasl.kerberos.min.time.before.relogin", 1, "remove it"),
    ("sasl.oauthbearer.config", "x", "SCRAM"),
    ("sasl.oauthbearer.method", "oidc", "SCRAM"),
    ("sasl.oauthbearer.client.id", "c", "SCRAM"),
    ("sasl.oauthbearer.client.secret", "s", "SCRAM"),
    ("sasl.oauthbearer.token.endpoint.url", "https://idp", "SCRAM"),
    ("sasl.oauthbearer.scope", "kafka", "SCRAM"),
    ("enable.sasl.oauthbearer.unsecure.jwt", True, "SCRAM"),
    ("ssl.endpoint.identification.algorithm", "dns", "'https'"),
    ("no.such.setting", 1, "remove it"),
]


@pytest.mark.parametrize(("key", "value", "expected"), RENAMED, ids=[f"{c[0]}={c[1]!r}" for c in RENAMED])
def test_each_translated_key_becomes_its_kafka_python_argument(key: str, value: Any, expected: dict) -> None:
    settings = {key: value} if "bootstrap" in key or "broker" in key else {**BOOT, key: value}
    assert kafka_python_config(settings) == {"bootstrap_servers": ["b:9092"], **expected}


def test_every_argument_produced_is_one_kafka_admin_client_takes() -> None:
    from kafka.admin import KafkaAdminClient

    produced = {name for _, _, expected in RENAMED for name in expected}
    assert produced - set(KafkaAdminClient.DEFAULT_CONFIG) == set()


@pytest.mark.parametrize(("key", "value"), DROPPED_COMMON, ids=[c[0] for c in DROPPED_COMMON])
def test_common_keys_kafka_python_leaves_out_are_named_at_debug(
    key: str, value: Any, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="airflow_provider_eos.kafka.settings"):
        assert kafka_python_config({**BOOT, key: value}) == {"bootstrap_servers": ["b:9092"]}
    assert repr(key) in caplog.text


@pytest.mark.parametrize("key", sorted(k for k, s in SETTINGS.items() if s.scope != "common"))
def test_producer_and_consumer_keys_mean_nothing_to_the_admin_client(key: str) -> None:
    assert kafka_python_config({**BOOT, key: "1"}) == {"bootstrap_servers": ["b:9092"]}


@pytest.mark.parametrize(("key", "value", "fix"), REFUSED, ids=[c[0] for c in REFUSED])
def test_refusals_name_the_key_and_the_fix(key: str, value: Any, fix: str) -> None:
    with pytest.raises(KafkaConfigError) as raised:
        kafka_python_config({**BOOT, key: value})
    assert f"kafka[{key!r}]" in raised.value.message
    assert raised.value.fix and fix in raised.value.fix


def test_every_common_key_of_the_table_has_a_case_here() -> None:
    covered = {c[0] for c in RENAMED} | {c[0] for c in DROPPED_COMMON} | {c[0] for c in REFUSED}
    common = {k for k, s in SETTINGS.items() if s.scope == "common"}
    assert common - covered == set()


# -- what kafka-python builds from the arguments -----------------------------------------------


def kafka_python_ssl_context(settings: dict[str, Any]) -> ssl.SSLContext:
    """The SSL context kafka-python's transport builds for each broker connection from the admin client's arguments."""
    from kafka.net.transport import KafkaSSLTransport

    config = dict(KafkaSSLTransport.DEFAULT_CONFIG)
    config.update({k: v for k, v in kafka_python_config({**BOOT, **settings}).items() if k in config})
    return KafkaSSLTransport._build_ssl_context(config)


def test_a_probed_ca_store_is_the_systems_default_one() -> None:
    # 'probe' used to reach kafka-python as ssl_cafile, a file it could not open (FileNotFoundError).
    context = kafka_python_ssl_context({"security.protocol": "SSL", "ssl.ca.location": "probe"})
    assert context.verify_mode == ssl.CERT_REQUIRED


def test_a_ca_directory_is_refused_naming_the_fix(tmp_path: Path) -> None:
    with pytest.raises(KafkaConfigError) as raised:
        kafka_python_config({**BOOT, "ssl.ca.location": str(tmp_path)})
    assert "kafka['ssl.ca.location']" in raised.value.message and "CA directory" in raised.value.message
    assert "one PEM file" in (raised.value.fix or "")


def test_kafka_python_itself_cannot_take_a_crl_file(tmp_path: Path) -> None:
    # Why ssl.crl.location is refused rather than translated: when this passes no more, kafka-python can
    # take it as ssl_crlfile again.
    from kafka.net.transport import KafkaSSLTransport

    crl = tmp_path / "crl.pem"
    crl.write_text("-----BEGIN X509 CRL-----\n-----END X509 CRL-----\n")
    with pytest.raises(TypeError, match="'crl' is an invalid keyword argument"):
        KafkaSSLTransport._build_ssl_context({**KafkaSSLTransport.DEFAULT_CONFIG, "ssl_crlfile": str(crl)})
