"""The one list of secret setting names (core/secrets.py), across every dialect the package speaks."""

from __future__ import annotations

import logging

import pytest

from airflow_provider_eos.core.secrets import REDACTED, is_secret_key, redact_config
from airflow_provider_eos.kafka.settings import java_client_config

SECRET = [
    # librdkafka
    "sasl.password", "ssl.key.password", "ssl.keystore.password", "ssl.key.pem", "ssl_key",
    "sasl.oauthbearer.config", "sasl.oauthbearer.client.secret",
    # the Java client, also as a Spark option
    "sasl.jaas.config", "kafka.sasl.jaas.config", "ssl.keystore.key", "kafka.ssl.keystore.key",
    "ssl.truststore.password",
    # kafka-python
    "sasl_plain_password", "ssl_password",
    # fsspec storage options (s3fs, gcsfs, adlfs) and Airflow extras
    "key", "secret", "token", "aws_session_token", "account_key", "sas_token", "client_secret",
    "connection_string", "keyfile_dict", "private_key", "credentials", "passphrase", "clientSecret",
]
NOT_SECRET = [
    "bootstrap.servers", "sasl.username", "sasl.mechanism", "sasl.mechanisms", "security.protocol",
    "ssl.key.location", "ssl.certificate.location", "ssl.ca.location", "ssl.keystore.location",
    "ssl.keystore.type", "ssl.truststore.certificates", "ssl.keystore.certificate.chain",
    "sasl.kerberos.keytab", "sasl.oauthbearer.token.endpoint.url", "ssl_keyfile", "ssl_certfile",
    "sasl_plain_username", "kafka.bootstrap.servers", "key.serializer", "client.id", "endpoint_url",
]


@pytest.mark.parametrize("name", SECRET)
def test_secret_names(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize("name", NOT_SECRET)
def test_names_that_are_not_secrets(name: str) -> None:
    assert not is_secret_key(name)


def test_redact_config_hides_the_jaas_password_of_spark_options() -> None:
    java = java_client_config(
        {"bootstrap.servers": "b:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
         "sasl.username": "svc", "sasl.password": "pw-7f3e"},
        "consumer",
    )
    options = {f"kafka.{k}": v for k, v in java.items()}
    assert "pw-7f3e" in options["kafka.sasl.jaas.config"]  # the test would pass vacuously otherwise
    redacted = redact_config(options)
    assert redacted["kafka.sasl.jaas.config"] == REDACTED
    assert "pw-7f3e" not in repr(redacted)
    assert redacted["kafka.bootstrap.servers"] == "b:1" and redacted["kafka.sasl.mechanism"] == "PLAIN"


def test_translation_logs_no_secret(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="airflow_provider_eos.kafka.settings"):
        java_client_config(
            {"bootstrap.servers": "b:1", "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-256",
             "sasl.username": "svc", "sasl.password": "pw-91ab", "ssl.key.password": "kp-91ab", "debug": "all"},
            "producer",
        )
    assert caplog.records  # the dropped keys are named
    assert "pw-91ab" not in caplog.text and "kp-91ab" not in caplog.text


@pytest.mark.airflow
@pytest.mark.usefixtures("airflow_home")
def test_the_hooks_use_the_one_owner(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.core import secrets
    from airflow_provider_eos.hooks import kafka_admin

    # No second list or redactor in the hooks: detection and redaction live in core/secrets.py.
    assert kafka_admin.is_secret_setting is secrets.is_secret_setting
    assert not hasattr(kafka_admin, "redact_kafka_config") and not hasattr(kafka_admin, "REDACTED")
    masked: list[str] = []
    monkeypatch.setattr(kafka_admin, "mask_secret", masked.append)
    kafka_admin.mask_kafka_secrets({"sasl.jaas.config": "x password=\"p\";", "sasl.username": "svc",
                                    "client.id": "https://svc:pw-31@host/"})
    assert masked == ["x password=\"p\";", "https://svc:pw-31@host/"]
