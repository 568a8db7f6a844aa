"""A refused login is named: who, which mechanism, where, and what to check; never the password."""

from __future__ import annotations

from confluent_kafka import KafkaError

from airflow_provider_eos.kafka.login import has_login as _has_login
from airflow_provider_eos.kafka.login import login_refused as _refused

SETTINGS = {"bootstrap.servers": "broker:9094", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "orders-job", "sasl.password": "p4ss-w0rd-91"}


def test_a_refused_sasl_login_names_the_user_the_mechanism_and_the_brokers() -> None:
    error = _refused(KafkaError(KafkaError._AUTHENTICATION, "Authentication failed (invalid credentials)"), SETTINGS)
    assert "'broker:9094' refused the SASL login of user 'orders-job' (SCRAM-SHA-512)" in error.message
    assert "invalid credentials" in error.message and "sasl.password" in error.fix
    assert "p4ss-w0rd-91" not in error.message + error.fix


def test_a_failed_tls_handshake_points_at_the_ca() -> None:
    error = _refused(KafkaError(KafkaError._SSL, "certificate verify failed"), SETTINGS)
    assert "TLS handshake with 'broker:9094' failed: certificate verify failed" in error.message
    assert "ssl.ca.location" in error.fix


def test_only_sasl_and_tls_clusters_have_a_login_to_refuse() -> None:
    assert _has_login(SETTINGS) and _has_login({"security.protocol": "ssl"})
    assert _has_login({"security.protocol": "sasl_plaintext"})
    assert not _has_login({"bootstrap.servers": "b:9092"}) and not _has_login({"security.protocol": "PLAINTEXT"})
