"""librdkafka settings -> the Java client under Spark: one case per key, the refusals, and the real client's verdict.

The cases are written out by hand (not derived from the table), and a completeness test makes
sure every key of the table has one, so a key added without a test fails here.
"""

from __future__ import annotations

import base64
import logging
import textwrap
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.errors import KafkaConfigError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings import (
    java_client_config,
    java_sink_producer_config,
    spark_sink_options,
    spark_source_options,
)
from airflow_provider_eos.kafka.settings.keys import SETTINGS

BOOT = {"bootstrap.servers": "b1:9092"}


def pem(kind: str, body: bytes = b"not-a-real-key-but-base64") -> str:
    encoded = base64.b64encode(body).decode()
    return f"-----BEGIN {kind}-----\n{encoded}\n-----END {kind}-----\n"


CERT = pem("CERTIFICATE", b"certificate-1")
CA = pem("CERTIFICATE", b"ca-certificate")
KEY = pem("PRIVATE KEY")
# An EncryptedPrivateKeyInfo with a PBES1 (pbeWithSHAAnd3-KeyTripleDES-CBC) algorithm id.
ENCRYPTED_KEY = pem("ENCRYPTED PRIVATE KEY", bytes.fromhex("3010060a2a864886f70d010c0103") + b"\x00" * 16)
PBES2_KEY = pem("ENCRYPTED PRIVATE KEY", bytes.fromhex("300d06092a864886f70d01050d") + b"\x00" * 16)
RSA_KEY = pem("RSA PRIVATE KEY")

# (librdkafka key, value, role, the Java settings it becomes besides bootstrap.servers)
RENAMED: list[tuple[str, Any, str, dict[str, str]]] = [
    ("client.id", "orders-eos", "consumer", {"client.id": "orders-eos"}),
    ("sasl.kerberos.service.name", "kafka", "consumer", {"sasl.kerberos.service.name": "kafka"}),
    ("socket.timeout.ms", "45000", "consumer", {"request.timeout.ms": "45000"}),
    ("metadata.max.age.ms", 60_000, "consumer", {"metadata.max.age.ms": "60000"}),
    ("topic.metadata.refresh.interval.ms", 30_000, "consumer", {"metadata.max.age.ms": "30000"}),
    ("reconnect.backoff.ms", 100, "producer", {"reconnect.backoff.ms": "100"}),
    ("reconnect.backoff.max.ms", 5000, "producer", {"reconnect.backoff.max.ms": "5000"}),
    ("retry.backoff.ms", 200, "consumer", {"retry.backoff.ms": "200"}),
    ("retry.backoff.max.ms", 2000, "consumer", {"retry.backoff.max.ms": "2000"}),
    ("connections.max.idle.ms", 60_000, "producer", {"connections.max.idle.ms": "60000"}),
    ("socket.connection.setup.timeout.ms", 10_000, "consumer", {"socket.connection.setup.timeout.ms": "10000"}),
    ("socket.send.buffer.bytes", 65536, "producer", {"send.buffer.bytes": "65536"}),
    ("socket.receive.buffer.bytes", 65536, "consumer", {"receive.buffer.bytes": "65536"}),
    ("client.dns.lookup", "use_all_dns_ips", "consumer", {"client.dns.lookup": "use_all_dns_ips"}),
    ("acks", "all", "producer", {"acks": "all"}),
    ("request.required.acks", -1, "producer", {"acks": "-1"}),
    ("enable.idempotence", True, "producer", {"enable.idempotence": "true"}),
    ("transactional.id", "pfx-0", "producer", {"transactional.id": "pfx-0"}),
    ("transaction.timeout.ms", 60_000, "producer", {"transaction.timeout.ms": "60000"}),
    ("linger.ms", 20, "producer", {"linger.ms": "20"}),
    ("queue.buffering.max.ms", "15", "producer", {"linger.ms": "15"}),
    ("batch.size", 131072, "producer", {"batch.size": "131072"}),
    ("message.timeout.ms", 120_000, "producer", {"delivery.timeout.ms": "120000"}),
    ("delivery.timeout.ms", 90_000, "producer", {"delivery.timeout.ms": "90000"}),
    ("request.timeout.ms", 20_000, "producer", {"request.timeout.ms": "20000"}),
    ("max.in.flight.requests.per.connection", 5, "producer", {"max.in.flight.requests.per.connection": "5"}),
    ("max.in.flight", 3, "producer", {"max.in.flight.requests.per.connection": "3"}),
    ("retries", 10, "producer", {"retries": "10"}),
    ("message.send.max.retries", 7, "producer", {"retries": "7"}),
    ("message.max.bytes", 2_000_000, "producer", {"max.request.size": "2000000"}),
    ("queue.buffering.max.kbytes", 2048, "producer", {"buffer.memory": str(2048 * 1024)}),
    ("isolation.level", "read_committed", "consumer", {"isolation.level": "read_committed"}),
    ("fetch.wait.max.ms", 100, "consumer", {"fetch.max.wait.ms": "100"}),
    ("fetch.min.bytes", 1, "consumer", {"fetch.min.bytes": "1"}),
    ("fetch.max.bytes", 52428800, "consumer", {"fetch.max.bytes": "52428800"}),
    ("max.partition.fetch.bytes", 1048576, "consumer", {"max.partition.fetch.bytes": "1048576"}),
    ("fetch.message.max.bytes", 524288, "consumer", {"max.partition.fetch.bytes": "524288"}),
    ("session.timeout.ms", 45_000, "consumer", {"session.timeout.ms": "45000"}),
    ("heartbeat.interval.ms", 3000, "consumer", {"heartbeat.interval.ms": "3000"}),
    ("max.poll.interval.ms", 300_000, "consumer", {"max.poll.interval.ms": "300000"}),
    ("check.crcs", "false", "consumer", {"check.crcs": "false"}),
    ("client.rack", "eu-west-1a", "consumer", {"client.rack": "eu-west-1a"}),
    # Translated by value.
    ("bootstrap.servers", " b1:9092 , b2:9092 ", "consumer", {"bootstrap.servers": "b1:9092,b2:9092"}),
    ("metadata.broker.list", "b3:9092", "producer", {"bootstrap.servers": "b3:9092"}),
    # SASL without a mechanism is GSSAPI, whose service the Java client must be told.
    ("security.protocol", "sasl_ssl", "consumer",
     {"security.protocol": "SASL_SSL", "sasl.kerberos.service.name": "kafka"}),
    ("compression.type", "lz4", "producer", {"compression.type": "lz4"}),
    ("compression.codec", "ZSTD", "producer", {"compression.type": "zstd"}),
    ("ssl.ca.location", "/etc/kafka/ca.pem", "consumer",
     {"ssl.truststore.type": "PEM", "ssl.truststore.location": "/etc/kafka/ca.pem"}),
    ("ssl.ca.pem", CA, "consumer", {"ssl.truststore.type": "PEM", "ssl.truststore.certificates": CA.strip()}),
    ("ssl.endpoint.identification.algorithm", "none", "consumer", {"ssl.endpoint.identification.algorithm": ""}),
    ("ssl.endpoint.identification.algorithm", "https", "producer",
     {"ssl.endpoint.identification.algorithm": "https"}),
]

# Keys that leave no Java setting behind, each for the reason the table (or the value) gives.
DROPPED: list[tuple[str, Any, str]] = [
    ("debug", "broker,protocol", "consumer"),
    ("log_level", 3, "producer"),
    ("log.queue", True, "consumer"),
    ("log.thread.name", True, "consumer"),
    ("log.connection.close", False, "consumer"),
    ("statistics.interval.ms", 60_000, "producer"),
    ("api.version.request", True, "consumer"),
    ("api.version.request.timeout.ms", 10_000, "consumer"),
    ("api.version.fallback.ms", 0, "consumer"),
    ("broker.version.fallback", "0.10.0", "consumer"),
    ("socket.nagle.disable", True, "producer"),
    ("socket.keepalive.enable", True, "consumer"),
    ("batch.num.messages", 10_000, "producer"),
    ("queue.buffering.max.messages", 100_000, "producer"),
    ("enable.auto.offset.store", False, "consumer"),
    ("enable.partition.eof", True, "consumer"),
    ("queued.min.messages", 10_000, "consumer"),
    ("queued.max.messages.kbytes", 65536, "consumer"),
    ("partitioner", "murmur2_random", "producer"),
    ("enable.auto.commit", False, "consumer"),
    ("enable.ssl.certificate.verification", True, "consumer"),
    ("ssl.ca.location", "probe", "consumer"),
    ("ssl.key.password", "only-with-a-key", "consumer"),
    ("sasl.mechanism", "GSSAPI", "consumer"),
]

# (settings, key named in the error, words of the fix)
REFUSED: list[tuple[dict[str, Any], str, str]] = [
    ({"no.such.setting": 1}, "no.such.setting", "remove it"),
    ({"ssl.crl.location": "/etc/crl.pem"}, "ssl.crl.location", "checkRevocation"),
    ({"ssl.cipher.suites": "ECDHE-RSA-AES256-GCM-SHA384"}, "ssl.cipher.suites", "remove it"),
    ({"sasl.kerberos.kinit.cmd": "kinit"}, "sasl.kerberos.kinit.cmd", "keytab"),
    ({"sasl.kerberos.min.time.before.relogin": 60_000}, "sasl.kerberos.min.time.before.relogin", "keytab"),
    ({"sasl.oauthbearer.config": "principal=x"}, "sasl.oauthbearer.config", "SCRAM"),
    ({"sasl.oauthbearer.method": "oidc"}, "sasl.oauthbearer.method", "SCRAM"),
    ({"sasl.oauthbearer.client.id": "c"}, "sasl.oauthbearer.client.id", "SCRAM"),
    ({"sasl.oauthbearer.client.secret": "s"}, "sasl.oauthbearer.client.secret", "SCRAM"),
    ({"sasl.oauthbearer.token.endpoint.url": "https://idp"}, "sasl.oauthbearer.token.endpoint.url", "SCRAM"),
    ({"sasl.oauthbearer.scope": "kafka"}, "sasl.oauthbearer.scope", "SCRAM"),
    ({"enable.sasl.oauthbearer.unsecure.jwt": True}, "enable.sasl.oauthbearer.unsecure.jwt", "SCRAM"),
    ({"sasl.mechanism": "OAUTHBEARER"}, "sasl.mechanism", "SCRAM"),
    ({"sasl.mechanism": "KERBEROS"}, "sasl.mechanism", "SCRAM-SHA-512"),
    ({"sasl.mechanism": "PLAIN", "sasl.mechanisms": "PLAIN"}, "sasl.mechanisms", "only sasl.mechanism"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256", "sasl.username": "u"},
     "sasl.password", "set sasl.password"),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"}, "sasl.username", "set sasl.username"),
    ({"sasl.username": "u", "sasl.password": "p"}, "sasl.username", "sasl.mechanism"),
    ({"sasl.kerberos.keytab": "/etc/k.keytab"}, "sasl.kerberos.principal", "principal"),
    ({"sasl.kerberos.principal": "eos@REALM"}, "sasl.kerberos.principal", "sasl.kerberos.keytab"),
    ({"security.protocol": "TLS"}, "security.protocol", "SASL_SSL"),
    ({"enable.ssl.certificate.verification": False}, "enable.ssl.certificate.verification", "ssl.ca.location"),
    ({"enable.ssl.certificate.verification": "maybe"}, "enable.ssl.certificate.verification", "true or false"),
    ({"ssl.endpoint.identification.algorithm": "dns"}, "ssl.endpoint.identification.algorithm", "'https'"),
    ({"auto.offset.reset": "earliest"}, "auto.offset.reset", "starting_offsets"),
    ({"enable.auto.commit": True}, "enable.auto.commit", "remove it"),
    ({"partitioner": "consistent_random"}, "partitioner", "murmur2_random"),
    ({"compression.type": "brotli"}, "compression.type", "zstd"),
    ({"linger.ms": "soon"}, "linger.ms", "a number"),
    ({"linger.ms": 10, "queue.buffering.max.ms": 20}, "queue.buffering.max.ms", "only one"),
    ({"message.timeout.ms": 1000}, "message.timeout.ms", "at least 30005"),
    ({"ssl.ca.location": "/etc/ca.pem", "ssl.ca.pem": CA}, "ssl.ca.pem", "only one"),
    ({"ssl.ca.pem": "not a certificate"}, "ssl.ca.pem", "PEM"),
    ({"ssl.certificate.pem": CERT}, "ssl.key.pem", "set ssl.key.pem"),
    ({"ssl.key.pem": KEY}, "ssl.certificate.pem", "set ssl.certificate.pem"),
    ({"ssl.certificate.pem": CERT, "ssl.key.pem": RSA_KEY}, "ssl.key.pem", "openssl pkcs8 -topk8"),
    ({"ssl.certificate.pem": CERT, "ssl.key.pem": ENCRYPTED_KEY}, "ssl.key.password", "set ssl.key.password"),
    ({"ssl.certificate.pem": CERT, "ssl.key.pem": PBES2_KEY, "ssl.key.password": "k"}, "ssl.key.pem",
     "-v1 PBE-SHA1-3DES"),
    ({"ssl.certificate.pem": CERT, "ssl.key.pem": KEY, "ssl.keystore.location": "/k.p12"},
     "ssl.keystore.location", "set one of"),
    ({"ssl.keystore.location": "/etc/k.p12"}, "ssl.keystore.password", "set ssl.keystore.password"),
    ({"ssl.keystore.password": "pw"}, "ssl.keystore.location", "set ssl.keystore.location"),
    ({"ssl.certificate.location": "/nonexistent/c.pem", "ssl.key.location": "/nonexistent/k.pem"},
     "ssl.certificate.location", "readable on the Spark driver"),
    ({"bootstrap.servers": " , "}, "bootstrap.servers", "broker list"),
]


def translate(settings: dict[str, Any], role: str = "consumer") -> dict[str, str]:
    boot = {} if "metadata.broker.list" in settings else BOOT
    return java_client_config({**boot, **settings}, role)  # type: ignore[arg-type]


@pytest.mark.parametrize(("key", "value", "role", "expected"), RENAMED, ids=[f"{c[0]}={c[1]!r}" for c in RENAMED])
def test_each_translated_key_becomes_its_java_setting(key: str, value: Any, role: str, expected: dict) -> None:
    assert translate({key: value}, role) == {**{"bootstrap.servers": "b1:9092"}, **expected}


@pytest.mark.parametrize(("key", "value", "role"), DROPPED, ids=[f"{c[0]}={c[1]!r}" for c in DROPPED])
def test_keys_without_java_meaning_leave_nothing_and_are_named_at_debug(
    key: str, value: Any, role: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG, logger="airflow_provider_eos.kafka.settings"):
        assert translate({key: value}, role) == {"bootstrap.servers": "b1:9092"} | (
            {"sasl.mechanism": "GSSAPI"} if key == "sasl.mechanism" else {}
        )
    if key != "sasl.mechanism":  # GSSAPI without a keytab: the JVM's JAAS file logs in, nothing to drop
        assert repr(key) in caplog.text


@pytest.mark.parametrize(("settings", "named", "fix"), REFUSED, ids=[next(iter(c[0])) for c in REFUSED])
def test_refusals_name_the_key_the_client_and_the_fix(settings: dict, named: str, fix: str) -> None:
    with pytest.raises(KafkaConfigError) as raised:
        translate(settings, "producer" if {"partitioner", "compression.type", "linger.ms",
                                           "message.timeout.ms"} & set(settings) else "consumer")
    assert f"kafka[{named!r}]" in raised.value.message
    assert raised.value.fix and fix in raised.value.fix


def test_every_key_of_the_table_has_a_case_here() -> None:
    covered = {c[0] for c in RENAMED} | {c[0] for c in DROPPED} | {k for c in REFUSED for k in c[0]}
    covered |= {"sasl.username", "sasl.password", "sasl.mechanisms", "sasl.kerberos.keytab",
                "sasl.kerberos.principal", "ssl.certificate.location", "ssl.key.location",
                "ssl.certificate.pem", "ssl.key.pem", "ssl.key.password", "ssl.keystore.location",
                "ssl.keystore.password"}  # the SASL and keystore tests below
    assert set(SETTINGS) - covered == set()


def test_keys_of_the_other_role_are_dropped_by_role() -> None:
    settings = {"linger.ms": 5, "acks": "all", "isolation.level": "read_committed", "fetch.min.bytes": 1}
    assert translate(settings, "consumer") == {
        "bootstrap.servers": "b1:9092", "isolation.level": "read_committed", "fetch.min.bytes": "1"
    }
    assert translate(settings, "producer") == {"bootstrap.servers": "b1:9092", "linger.ms": "5", "acks": "all"}


def test_missing_bootstrap_servers_is_refused() -> None:
    with pytest.raises(KafkaConfigError, match=r"bootstrap\.servers"):
        java_client_config({"client.id": "x"}, "consumer")


# -- SASL --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mechanism", "module"),
    [
        ("PLAIN", "org.apache.kafka.common.security.plain.PlainLoginModule"),
        ("SCRAM-SHA-256", "org.apache.kafka.common.security.scram.ScramLoginModule"),
        ("scram-sha-512", "org.apache.kafka.common.security.scram.ScramLoginModule"),
    ],
)
@pytest.mark.parametrize("mechanism_key", ["sasl.mechanism", "sasl.mechanisms"])
def test_sasl_user_and_password_become_a_jaas_config(mechanism: str, module: str, mechanism_key: str) -> None:
    java = translate({"security.protocol": "SASL_SSL", mechanism_key: mechanism,
                      "sasl.username": "svc-orders", "sasl.password": "s3cret"})
    assert java == {
        "bootstrap.servers": "b1:9092",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism.upper(),
        "sasl.jaas.config": f'{module} required username="svc-orders" password="s3cret";',
    }


def test_jaas_values_escape_quotes_backslashes_and_line_breaks() -> None:
    java = translate({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                      "sasl.username": 'we"ird\\user', "sasl.password": 'p"a\\ss\nword\r'})
    assert java["sasl.jaas.config"] == (
        'org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="we\\"ird\\\\user" password="p\\"a\\\\ss\\nword\\r";'
    )


def test_gssapi_with_a_keytab_logs_in_with_the_jdk_kerberos_module() -> None:
    java = translate({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI",
                      "sasl.kerberos.service.name": "kafka", "sasl.kerberos.keytab": "/etc/eos.keytab",
                      "sasl.kerberos.principal": "eos@EXAMPLE.COM"})
    assert java["sasl.kerberos.service.name"] == "kafka"
    assert java["sasl.jaas.config"] == (
        'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true storeKey=true '
        'keyTab="/etc/eos.keytab" principal="eos@EXAMPLE.COM";'
    )


@pytest.mark.parametrize(("settings", "service"), [
    # librdkafka's (and kafka-python's) default; the Java client has none.
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI"}, "kafka"),
    ({"security.protocol": "SASL_PLAINTEXT"}, "kafka"),  # GSSAPI is every client's default mechanism
    ({"security.protocol": "SASL_SSL", "sasl.mechanisms": "gssapi", "sasl.kerberos.service.name": "kafka-prod"},
     "kafka-prod"),
    ({"security.protocol": "SASL_SSL", "sasl.kerberos.keytab": "/etc/eos.keytab",
      "sasl.kerberos.principal": "eos@EXAMPLE.COM"}, "kafka"),
    # No Kerberos login: nothing to name.
    ({"security.protocol": "SSL", "sasl.mechanism": "GSSAPI"}, None),
    ({"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "u", "sasl.password": "p"}, None),
])
def test_a_kerberos_login_names_the_brokers_service(settings: dict, service: str | None) -> None:
    assert translate(settings).get("sasl.kerberos.service.name") == service


# -- SSL keystores -----------------------------------------------------------------------------


def test_separate_certificate_and_key_files_are_read_and_passed_inline(tmp_path: Path) -> None:
    (tmp_path / "client.pem").write_text("subject=/CN=eos\n" + CERT)
    (tmp_path / "client.key").write_text(KEY)
    java = translate({"security.protocol": "SSL", "ssl.certificate.location": str(tmp_path / "client.pem"),
                      "ssl.key.location": str(tmp_path / "client.key"), "ssl.key.password": "unused"})
    assert java == {
        "bootstrap.servers": "b1:9092",
        "security.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": CERT.strip(),
        "ssl.keystore.key": KEY.strip(),
    }


def test_an_encrypted_key_gets_its_password(tmp_path: Path) -> None:
    (tmp_path / "client.pem").write_text(CERT)
    (tmp_path / "client.key").write_text(ENCRYPTED_KEY)
    java = translate({"ssl.certificate.location": str(tmp_path / "client.pem"),
                      "ssl.key.location": str(tmp_path / "client.key"), "ssl.key.password": "kp"})
    assert java["ssl.keystore.key"] == ENCRYPTED_KEY.strip() and java["ssl.key.password"] == "kp"


def test_certificate_and_key_in_one_file_stay_a_file(tmp_path: Path) -> None:
    both = tmp_path / "client.pem"
    both.write_text(ENCRYPTED_KEY + CERT)
    java = translate({"ssl.certificate.location": str(both), "ssl.key.location": str(both),
                      "ssl.key.password": "kp"})
    assert java == {"bootstrap.servers": "b1:9092", "ssl.keystore.type": "PEM",
                    "ssl.keystore.location": str(both), "ssl.key.password": "kp"}


def test_inline_pem_certificate_and_key() -> None:
    java = translate({"ssl.certificate.pem": CERT + CERT.replace("LTE", "LTI"), "ssl.key.pem": KEY})
    assert java["ssl.keystore.type"] == "PEM" and java["ssl.keystore.key"] == KEY.strip()
    assert java["ssl.keystore.certificate.chain"].count("BEGIN CERTIFICATE") == 2


def test_a_pkcs12_keystore_stays_one() -> None:
    java = translate({"ssl.keystore.location": "/etc/client.p12", "ssl.keystore.password": "store-pw"})
    assert java == {"bootstrap.servers": "b1:9092", "ssl.keystore.type": "PKCS12",
                    "ssl.keystore.location": "/etc/client.p12", "ssl.keystore.password": "store-pw"}


def test_a_ca_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(KafkaConfigError, match="CA directory") as raised:
        translate({"ssl.ca.location": str(tmp_path)})
    assert "one PEM file" in (raised.value.fix or "")


# -- Spark options -----------------------------------------------------------------------------


def spec(**kafka: Any) -> PipelineSpec:
    return PipelineSpec(name="p", kafka={"bootstrap.servers": "b1:9092", **kafka}, input_topics=["in"],
                        output_topic="out", group_id="g", transactional_id_prefix="pfx",
                        checkpoint_location="/tmp/ckpt")


def test_spark_source_and_sink_options_carry_the_kafka_prefix_and_their_role() -> None:
    pipeline = spec(**{"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "u",
                       "sasl.password": "p", "linger.ms": 5, "isolation.level": "read_committed"})
    jaas = 'org.apache.kafka.common.security.scram.ScramLoginModule required username="u" password="p";'
    common = {"kafka.bootstrap.servers": "b1:9092", "kafka.security.protocol": "SASL_SSL",
              "kafka.sasl.mechanism": "SCRAM-SHA-512", "kafka.sasl.jaas.config": jaas}
    assert spark_source_options(pipeline) == {**common, "kafka.isolation.level": "read_committed",
                                              "kafka.max.poll.records": "10000", "kafka.fetch.max.wait.ms": "10"}
    assert spark_sink_options(pipeline) == {**common, "kafka.linger.ms": "5"}


def test_the_source_keeps_a_fetch_wait_the_spec_sets() -> None:
    options = spark_source_options(spec(**{"fetch.wait.max.ms": 250}))
    assert options["kafka.fetch.max.wait.ms"] == "250"
    assert options["kafka.max.poll.records"] == "10000"


# -- the JVM executor writer's transactional producer -----------------------------------------

#: librdkafka aliases of settings the sink sets itself (linger, compression, delivery timeout, acks).
SINK_ALIASES: dict[str, Any] = {"queue.buffering.max.ms": 5, "compression.codec": "gzip",
                                "delivery.timeout.ms": 30_000, "request.required.acks": "all"}


@pytest.mark.parametrize(("alias", "value", "java_key", "expected"), [
    ("queue.buffering.max.ms", 5, "linger.ms", "5"),
    ("compression.codec", "gzip", "compression.type", "gzip"),
    ("delivery.timeout.ms", 30_000, "delivery.timeout.ms", "30000"),
    ("delivery.timeout.ms", 600_000, "delivery.timeout.ms", "60000"),  # capped at the transaction timeout
    ("request.required.acks", 1, "acks", "all"),
])
def test_the_sink_producer_takes_a_librdkafka_alias_the_sink_also_sets(
    alias: str, value: Any, java_key: str, expected: str
) -> None:
    # The sink adds linger.ms, compression.type, acks and message.timeout.ms beside the spec's keys: an
    # alias of one of them was translated twice and refused, naming a key the spec never set.
    assert java_sink_producer_config(spec(**{alias: value}))[java_key] == expected


def test_the_sink_producer_lowers_its_request_timeout_below_a_spec_delivery_timeout() -> None:
    config = java_sink_producer_config(spec(**{"delivery.timeout.ms": 30_000, "queue.buffering.max.ms": 5}))
    # The Java producer requires delivery.timeout.ms >= linger.ms + request.timeout.ms.
    assert (config["delivery.timeout.ms"], config["linger.ms"], config["request.timeout.ms"]) == ("30000", "5", "29995")


# -- the real Java client (the kafka-clients jar Spark's connector ships) ---------------------

_CHECKER = textwrap.dedent("""
    import java.io.FileReader;
    import java.nio.charset.StandardCharsets;
    import java.time.Duration;
    import java.util.Base64;
    import java.util.Map;
    import java.util.Properties;
    import javax.security.auth.login.AppConfigurationEntry;
    import org.apache.kafka.clients.consumer.KafkaConsumer;
    import org.apache.kafka.clients.producer.KafkaProducer;
    import org.apache.kafka.common.config.types.Password;
    import org.apache.kafka.common.security.JaasContext;
    import org.apache.kafka.common.serialization.ByteArrayDeserializer;
    import org.apache.kafka.common.serialization.ByteArraySerializer;

    /** For each (role, properties file): build the client; print the parsed JAAS options and ACCEPTED or REFUSED. */
    public class KafkaConfigCheck {
        public static void main(String[] args) throws Exception {
            for (int i = 0; i < args.length; i += 2) {
                Properties props = new Properties();
                try (FileReader reader = new FileReader(args[i + 1])) { props.load(reader); }
                System.out.println("CASE " + args[i + 1]);
                try {
                    String jaas = props.getProperty("sasl.jaas.config");
                    if (jaas != null) {
                        Map<String, Object> conf = Map.of("sasl.jaas.config", new Password(jaas));
                        for (AppConfigurationEntry entry : JaasContext.loadClientContext(conf).configurationEntries()) {
                            for (Map.Entry<String, ?> option : entry.getOptions().entrySet()) {
                                byte[] value = option.getValue().toString().getBytes(StandardCharsets.UTF_8);
                                String encoded = Base64.getEncoder().encodeToString(value);
                                System.out.println("jaas " + option.getKey() + " " + encoded);
                            }
                        }
                    }
                    if (args[i].equals("consumer")) {
                        new KafkaConsumer<>(props, new ByteArrayDeserializer(), new ByteArrayDeserializer())
                            .close(Duration.ZERO);
                    } else {
                        new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer())
                            .close(Duration.ZERO);
                    }
                    System.out.println("ACCEPTED");
                } catch (Exception e) {
                    StringBuilder message = new StringBuilder();
                    for (Throwable cause = e; cause != null; cause = cause.getCause()) {
                        message.append(cause.getMessage()).append(" | ");
                    }
                    System.out.println("REFUSED " + message.toString().replace("\\n", " "));
                }
            }
        }
    }
""")


def _properties_value(value: str) -> str:
    escapes = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
    return "".join(escapes.get(c, c if 32 <= ord(c) < 127 else f"\\u{ord(c):04x}") for c in value)


def _openssl(*args: str, cwd: Path) -> None:
    import subprocess

    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def java_checker(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Runs the Java client of Spark's connector on translated configs: {case: (verdict, jaas options)}."""
    import subprocess

    from airflow_provider_eos.devstack.jars import require_java, require_tool, spark_kafka_jars_dir

    java = require_java()
    javac = require_tool("javac", "install a JDK 17 or newer (Debian: `apt-get install openjdk-17-jdk-headless`).")
    jars = spark_kafka_jars_dir()
    classpath = ":".join(str(j) for j in jars.glob("*.jar") if j.name.startswith(("kafka-clients-", "slf4j-api-")))
    work = tmp_path_factory.mktemp("java-checker")
    (work / "KafkaConfigCheck.java").write_text(_CHECKER)
    subprocess.run([javac, "-cp", classpath, "-d", str(work), str(work / "KafkaConfigCheck.java")], check=True)

    def run(cases: dict[str, tuple[str, dict[str, str]]]) -> dict[str, tuple[str, dict[str, str]]]:
        args: list[str] = []
        for name, (role, config) in cases.items():
            path = work / f"{name}.properties"
            path.write_text("".join(f"{k}={_properties_value(v)}\n" for k, v in config.items()))
            args += [role, str(path)]
        out = subprocess.run([java, "-cp", f"{classpath}:{work}", "KafkaConfigCheck", *args],
                             capture_output=True, text=True, check=True, timeout=120).stdout
        results: dict[str, tuple[str, dict[str, str]]] = {}
        for block in out.split("CASE ")[1:]:
            header, *lines = block.splitlines()
            verdict = next(line for line in lines if line.startswith(("ACCEPTED", "REFUSED")))
            jaas = [line.split() for line in lines if line.startswith("jaas ")]
            options = {name: base64.b64decode(value).decode() for _, name, value in jaas}
            results[Path(header.strip()).stem] = (verdict, options)
        return results

    return run


def test_the_java_client_accepts_what_the_translation_produces(java_checker: Any, tmp_path: Path) -> None:
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem",
             "-days", "2", "-subj", "/CN=eos-test", cwd=tmp_path)
    _openssl("pkcs8", "-topk8", "-v1", "PBE-SHA1-3DES", "-in", "key.pem", "-out", "key.enc.pem",
             "-passout", "pass:key-pw", cwd=tmp_path)
    _openssl("pkcs12", "-export", "-in", "cert.pem", "-inkey", "key.pem", "-out", "client.p12",
             "-passout", "pass:store-pw", cwd=tmp_path)
    (tmp_path / "both.pem").write_text((tmp_path / "key.enc.pem").read_text() + (tmp_path / "cert.pem").read_text())
    password = 'p"w\\x\ny'
    base = {"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "svc", "sasl.password": password, "ssl.ca.location": str(tmp_path / "cert.pem")}
    files = {"ssl.certificate.location": str(tmp_path / "cert.pem")}
    cases = {
        "separate_files": ("consumer", {**base, **files, "ssl.key.location": str(tmp_path / "key.pem")}),
        "encrypted_key": ("consumer", {**base, **files, "ssl.key.location": str(tmp_path / "key.enc.pem"),
                                       "ssl.key.password": "key-pw"}),
        "one_file": ("producer", {**base, "ssl.certificate.location": str(tmp_path / "both.pem"),
                                  "ssl.key.location": str(tmp_path / "both.pem"), "ssl.key.password": "key-pw"}),
        "inline_pem": ("consumer", {**base, "ssl.certificate.pem": (tmp_path / "cert.pem").read_text(),
                                    "ssl.key.pem": (tmp_path / "key.pem").read_text()}),
        "pkcs12": ("consumer", {**base, "ssl.keystore.location": str(tmp_path / "client.p12"),
                                "ssl.keystore.password": "store-pw"}),
        "producer_tuning": ("producer", {**base, "ssl.endpoint.identification.algorithm": "none", "linger.ms": 5,
                                         "message.timeout.ms": 60_000, "compression.codec": "lz4", "acks": "all",
                                         "enable.idempotence": True, "queue.buffering.max.kbytes": 4096}),
    }
    translated = {name: (role, java_client_config(config, role)) for name, (role, config) in cases.items()}
    # Negative control: the checker does refuse a config the translation would not produce.
    translated["control"] = ("consumer", {**translated["separate_files"][1], "ssl.key.password": "unused"})

    results = java_checker(translated)

    for name in cases:
        verdict, jaas = results[name]
        assert verdict == "ACCEPTED", (name, verdict)
        assert jaas == {"username": "svc", "password": password}, name
    assert results["control"][0].startswith("REFUSED")


def test_the_java_producer_accepts_the_sink_producer_config_of_a_spec_with_aliases(java_checker: Any) -> None:
    pipeline = spec(**SINK_ALIASES, **{"bootstrap.servers": "127.0.0.1:1"})  # resolvable, never reached
    results = java_checker({"sink_aliases": ("producer", java_sink_producer_config(pipeline))})
    assert results["sink_aliases"][0] == "ACCEPTED", results


def test_the_java_client_takes_a_gssapi_spec_up_to_its_kerberos_login(java_checker: Any, tmp_path: Path) -> None:
    keytab = tmp_path / "eos.keytab"
    keytab.write_bytes(b"")  # no keys: the login itself must fail, after the config was taken
    config = java_client_config({"bootstrap.servers": "127.0.0.1:1", "security.protocol": "SASL_PLAINTEXT",
                                 "sasl.mechanism": "GSSAPI", "sasl.kerberos.keytab": str(keytab),
                                 "sasl.kerberos.principal": "eos@EXAMPLE.COM"}, "producer")
    # Negative control: without the service name the Java client stops before logging in.
    control = {k: v for k, v in config.items() if k != "sasl.kerberos.service.name"}

    results = java_checker({"gssapi": ("producer", config), "gssapi_control": ("producer", control)})

    verdict = results["gssapi"][0]
    assert verdict.startswith("REFUSED") and "Could not login" in verdict and "serviceName" not in verdict, verdict
    assert "No serviceName defined" in results["gssapi_control"][0]
