"""librdkafka configs per role, and librdkafka's own log lines routed into Python logging instead of stderr."""

from __future__ import annotations

import json
import logging
import socket
import subprocess
import sys
import textwrap

import pytest

from airflow_provider_eos.core.errors import KafkaConfigError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings import (
    LOGGER_PREFIX,
    admin_config,
    common_config,
    group_metadata_consumer_config,
    sink_producer_config,
    with_client_logger,
)

KAFKA = {
    "bootstrap.servers": "b1:9092",
    "security.protocol": "SASL_SSL",
    "client.id": "orders",
    "linger.ms": 50,
    "message.timeout.ms": 600_000,
    "isolation.level": "read_committed",
    "fetch.wait.max.ms": 100,
    "some.future.librdkafka.key": "kept",
}


def spec() -> PipelineSpec:
    return PipelineSpec(name="orders", kafka=KAFKA, input_topics=["in"], output_topic="out", group_id="orders-g",
                        transactional_id_prefix="orders-eos", checkpoint_location="/tmp/ckpt",
                        transaction_timeout_ms=60_000)


def test_common_and_admin_configs_hold_the_connection_settings_only() -> None:
    connection = {"bootstrap.servers": "b1:9092", "security.protocol": "SASL_SSL", "client.id": "orders",
                  "some.future.librdkafka.key": "kept"}
    assert common_config(spec()) == connection
    assert admin_config(spec()) == connection


def test_sink_producer_takes_the_producer_keys_and_the_protocol_settings() -> None:
    config = sink_producer_config(spec(), 3)
    assert config == {
        "bootstrap.servers": "b1:9092",
        "security.protocol": "SASL_SSL",
        "client.id": "orders",
        "some.future.librdkafka.key": "kept",
        "linger.ms": 50,
        "compression.type": "lz4",
        "transactional.id": "orders-eos-3",
        "transaction.timeout.ms": 60_000,
        "enable.idempotence": True,
        "acks": "all",
        "partitioner": "murmur2_random",
        # Capped by the transaction timeout.
        "message.timeout.ms": 60_000,
    }


def aliased(**kafka: object) -> PipelineSpec:
    return spec().with_overrides(kafka={"bootstrap.servers": "b1:9092", **kafka})


@pytest.mark.parametrize(
    ("alias", "value", "name", "expected"),
    [
        # The spec's value replaces the sink's default, under the one name.
        ("queue.buffering.max.ms", 5, "linger.ms", 5),
        ("compression.codec", "gzip", "compression.type", "gzip"),
        # Kept below the transaction timeout...
        ("delivery.timeout.ms", 30_000, "message.timeout.ms", 30_000),
        # ... and capped at it, as message.timeout.ms is.
        ("delivery.timeout.ms", 600_000, "message.timeout.ms", 60_000),
        # The sink's own settings still win.
        ("request.required.acks", 1, "acks", "all"),
        ("max.in.flight", 3, "max.in.flight.requests.per.connection", 3),
        ("message.send.max.retries", 7, "retries", 7),
    ],
)
def test_a_librdkafka_alias_in_the_spec_is_the_sinks_setting_under_one_name(
    alias: str, value: object, name: str, expected: object
) -> None:
    config = sink_producer_config(aliased(**{alias: value}))
    assert alias not in config
    assert config[name] == expected


def test_both_names_of_one_setting_are_refused_only_when_they_disagree() -> None:
    assert sink_producer_config(aliased(**{"linger.ms": 5, "queue.buffering.max.ms": "5"}))["linger.ms"] == "5"
    with pytest.raises(KafkaConfigError) as raised:
        sink_producer_config(aliased(**{"message.timeout.ms": 20_000, "delivery.timeout.ms": 30_000}))
    assert "kafka['delivery.timeout.ms']" in raised.value.message and "'message.timeout.ms'" in raised.value.message
    assert raised.value.fix == "set only one of 'message.timeout.ms' and 'delivery.timeout.ms'"


def test_group_metadata_consumer_joins_nothing_and_commits_nothing() -> None:
    assert group_metadata_consumer_config(spec()) == {
        "bootstrap.servers": "b1:9092", "security.protocol": "SASL_SSL", "client.id": "orders",
        "some.future.librdkafka.key": "kept", "group.id": "orders-g", "enable.auto.commit": False,
    }


def test_role_configs_stay_json() -> None:
    for config in (admin_config(spec()), sink_producer_config(spec()), group_metadata_consumer_config(spec())):
        assert json.loads(json.dumps(config)) == config


def test_with_client_logger_adds_the_role_logger_to_a_copy() -> None:
    base = admin_config(spec())
    config = with_client_logger("admin", base)
    assert config["logger"] is logging.getLogger(f"{LOGGER_PREFIX}.admin")
    assert "logger" not in base and {k: v for k, v in config.items() if k != "logger"} == base


def test_retried_connection_failures_are_logged_at_info(caplog: pytest.LogCaptureFixture) -> None:
    logger = with_client_logger("producer", {})["logger"]
    with caplog.at_level(logging.INFO, logger=LOGGER_PREFIX):
        # The call confluent-kafka makes for each librdkafka line.
        logger.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#producer-1", "127.0.0.1:1/bootstrap: refused")
        logger.log(logging.WARNING, "%s [%s] %s", "GETPID", "rdkafka#producer-1", "coordinator loading")
        logger.log(logging.ERROR, "%s [%s] %s", "TXNERR", "rdkafka#producer-1", "fenced")
    levels = {record.args[0]: record.levelname for record in caplog.records}  # type: ignore[index]
    assert levels == {"FAIL": "INFO", "GETPID": "INFO", "TXNERR": "ERROR"}


def test_a_logger_at_warning_hides_the_retried_lines(caplog: pytest.LogCaptureFixture) -> None:
    logger = with_client_logger("consumer", {})["logger"]
    with caplog.at_level(logging.WARNING, logger=LOGGER_PREFIX):
        logger.log(logging.ERROR, "%s [%s] %s", "FAIL", "rdkafka#consumer-1", "refused")
        logger.log(logging.ERROR, "%s [%s] %s", "SSL", "rdkafka#consumer-1", "handshake failed")
    assert [record.args[0] for record in caplog.records] == ["SSL"]  # type: ignore[index]


_CLIENT = textwrap.dedent("""
    import logging, sys, time
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient
    from airflow_provider_eos.kafka.settings import with_client_logger

    records = []

    class Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    logging.getLogger("airflow_provider_eos.kafka.librdkafka").addHandler(Keep())
    logging.getLogger("airflow_provider_eos.kafka.librdkafka").setLevel(logging.INFO)
    kind, role, routed = sys.argv[1], sys.argv[2], sys.argv[3] == "routed"
    config = {"bootstrap.servers": "127.0.0.1:" + sys.argv[4], "reconnect.backoff.ms": 50,
              "reconnect.backoff.max.ms": 100}
    if kind == "Consumer":
        config["group.id"] = "eos-log-test"
    client = {"Producer": Producer, "Consumer": Consumer, "AdminClient": AdminClient}[kind](
        with_client_logger(role, config) if routed else config)
    # Routed: until the FAIL record arrives; plain: librdkafka prints it within a second or two.
    deadline = time.monotonic() + (20 if routed else 3)
    while time.monotonic() < deadline and not any(r.args[0] == "FAIL" for r in records):
        client.poll(0.2)
    for record in records:
        print(record.name, record.levelname, record.getMessage())
""")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run_client(kind: str, role: str, routed: bool) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", _CLIENT, kind, role, "routed" if routed else "plain", str(_closed_port())]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)


@pytest.mark.parametrize(("kind", "role"), [("Producer", "producer"), ("Consumer", "consumer"),
                                            ("AdminClient", "admin")])
def test_librdkafka_fail_lines_become_log_records_not_stderr(kind: str, role: str) -> None:
    # Without the logger, librdkafka writes the line to fd 2 itself: the test can see the flood.
    plain = _run_client(kind, role, routed=False)
    assert "|FAIL|rdkafka#" in plain.stderr

    routed = _run_client(kind, role, routed=True)

    assert f"{LOGGER_PREFIX}.{role} INFO FAIL [rdkafka#" in routed.stdout, routed.stdout
    assert "Connection refused" in routed.stdout
    assert "FAIL" not in routed.stderr and "%3|" not in routed.stderr, routed.stderr
