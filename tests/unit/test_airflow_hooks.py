"""The Airflow hooks: Kafka connection -> spec, storage connection -> fsspec options, secrets masked.

Connections are real Airflow connections defined as ``AIRFLOW_CONN_<ID>`` environment variables
(JSON form), read through the Task SDK's secrets backends. Airflow is imported only inside the
tests, after the ``airflow_home`` fixture has pointed it at a temporary home.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_eos.core.spec import PipelineSpec

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_home")]

SASL_PASSWORD = "sasl-password-4f1e9c"
KEY_PEM = "-----BEGIN PRIVATE KEY-----MIIEvQIBADAN-----END PRIVATE KEY-----"
OAUTH_CONFIG = "principal=eos clientSecret=oauth-secret-77d2"

SPEC = {
    "name": "orders",
    "kafka": {
        "bootstrap.servers": "spec-broker:9092",
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "spec-user",
        "sasl.password": "spec-password-0a9b",
        "linger.ms": 50,
    },
    "input_topics": ["orders-in"],
    "output_topic": "orders-out",
    "group_id": "orders-sink",
    "transactional_id_prefix": "orders-eos",
    "checkpoint_location": "/tmp/checkpoints/orders",
}


def define_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: object) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


def redact(text: str) -> str:
    from airflow.sdk._shared.secrets_masker import redact as airflow_redact

    return airflow_redact(text)


# -- Kafka ---------------------------------------------------------------------------------------


def test_merge_connection_wins_for_connection_settings_and_spec_keeps_the_rest() -> None:
    from airflow_provider_eos.hooks.kafka_admin import merge_kafka_config

    connection = {
        "bootstrap.servers": "conn-broker:9093",
        "security.protocol": "SSL",
        "ssl.ca.location": "/etc/ca.pem",
        "linger.ms": 5,
        "client.id": "airflow",
        "group.id": "from-the-kafka-provider",
        "transactional.id": "nope",
    }
    merged = merge_kafka_config(SPEC["kafka"], connection)

    assert merged == {
        "bootstrap.servers": "conn-broker:9093",
        "security.protocol": "SSL",
        "ssl.ca.location": "/etc/ca.pem",
        # The spec's SASL settings are gone, not left next to the connection's SSL ones.
        "linger.ms": 50,
        "client.id": "airflow",
    }


def test_hook_reads_the_kafka_connection_extras_as_librdkafka_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.hooks.kafka_admin import EosKafkaHook

    extras = {
        "bootstrap.servers": "conn-broker:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "svc-orders",
        "sasl.password": SASL_PASSWORD,
        "ssl.key.pem": KEY_PEM,
        "sasl.oauthbearer.config": OAUTH_CONFIG,
        "enable.ssl.certificate.verification": False,
    }
    define_connection(monkeypatch, "kafka_unit", conn_type="kafka", extra=extras)

    assert EosKafkaHook("kafka_unit").get_config() == extras


def test_hook_masks_every_secret_including_names_airflow_does_not_know(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.core.secrets import redact_config
    from airflow_provider_eos.hooks.kafka_admin import EosKafkaHook

    key_pem = KEY_PEM.replace("MIIE", "MIIF")
    oauth = OAUTH_CONFIG.replace("77d2", "88e3")
    define_connection(
        monkeypatch,
        "kafka_masked",
        conn_type="kafka",
        extra={
            "bootstrap.servers": "b:9093",
            "sasl.password": SASL_PASSWORD,
            "ssl.key.pem": key_pem,
            "sasl.oauthbearer.config": oauth,
        },
    )
    config = EosKafkaHook("kafka_masked").get_config()

    line = f"config {config}"
    assert SASL_PASSWORD in line and key_pem in line and oauth in line  # the test would pass vacuously otherwise
    masked = redact(line)
    for secret in (SASL_PASSWORD, key_pem, oauth):
        assert secret not in masked
    assert "b:9093" in masked
    assert redact_config(config) == {
        "bootstrap.servers": "b:9093",
        "sasl.password": "***",
        "ssl.key.pem": "***",
        "sasl.oauthbearer.config": "***",
    }


def test_hook_gives_the_transaction_admin_client_the_same_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.hooks.kafka_admin import EosKafkaHook

    define_connection(
        monkeypatch,
        "kafka_sasl_ssl",
        conn_type="kafka",
        extra={
            "bootstrap.servers": "b1:9093,b2:9093",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "svc-orders",
            "sasl.password": SASL_PASSWORD,
            "ssl.ca.location": "/etc/kafka/ca.pem",
        },
    )

    assert EosKafkaHook("kafka_sasl_ssl").get_kafka_python_config() == {
        "bootstrap_servers": ["b1:9093", "b2:9093"],
        "security_protocol": "SASL_SSL",
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": "svc-orders",
        "sasl_plain_password": SASL_PASSWORD,
        "ssl_cafile": "/etc/kafka/ca.pem",
    }


def test_pipeline_spec_takes_the_connection_and_keeps_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.hooks.kafka_admin import EosKafkaHook

    define_connection(
        monkeypatch,
        "kafka_prod",
        conn_type="kafka",
        extra={
            "bootstrap.servers": "prod-1:9093,prod-2:9093",
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "svc-orders",
            "sasl.password": SASL_PASSWORD,
            "group.id": "consumer-of-the-kafka-provider",
        },
    )
    spec = PipelineSpec.from_dict(SPEC)

    merged = EosKafkaHook("kafka_prod").pipeline_spec(spec)

    assert merged.kafka == {
        "bootstrap.servers": "prod-1:9093,prod-2:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "svc-orders",
        "sasl.password": SASL_PASSWORD,
        "linger.ms": 50,
    }
    assert merged.to_dict() | {"kafka": None} == spec.to_dict() | {"kafka": None}


def test_connection_without_bootstrap_servers_is_refused_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.common.compat.sdk import AirflowException

    from airflow_provider_eos.hooks.kafka_admin import EosKafkaHook

    define_connection(monkeypatch, "kafka_empty", conn_type="kafka", host="broker", port=9092)

    with pytest.raises(AirflowException, match=r"'kafka_empty' has no 'bootstrap.servers'"):
        EosKafkaHook("kafka_empty").get_config()


def test_connection_with_a_nested_value_names_the_key_not_the_value(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.common.compat.sdk import AirflowException

    from airflow_provider_eos.hooks.kafka_admin import EosKafkaHook

    define_connection(
        monkeypatch,
        "kafka_nested",
        conn_type="kafka",
        extra={"bootstrap.servers": "b:9092", "sasl.jaas": {"password": "nested-secret-1234"}},
    )

    with pytest.raises(AirflowException) as raised:
        EosKafkaHook("kafka_nested").get_config()
    assert "'sasl.jaas' is a dict" in str(raised.value)
    assert "nested-secret-1234" not in str(raised.value)


def test_load_pipeline_spec_masks_secrets_of_the_spec_file_itself(tmp_path: Path) -> None:
    from airflow_provider_eos.hooks.kafka_admin import load_pipeline_spec

    secret = "spec-file-secret-5c6d"
    path = tmp_path / "orders.json"
    path.write_text(json.dumps({**SPEC, "kafka": {**SPEC["kafka"], "sasl.password": secret}}))

    spec = load_pipeline_spec(str(path))

    assert spec.kafka["sasl.password"] == secret
    assert secret not in redact(f"spec {spec.to_json()}")


# -- checkpoint storage --------------------------------------------------------------------------


def test_no_checkpoint_connection_means_ambient_credentials(tmp_path: Path) -> None:
    from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook

    hook = CheckpointStorageHook(None)

    assert hook.get_storage_options("s3a://bucket/checkpoints/orders") == {}
    reader = hook.get_reader(str(tmp_path))
    assert reader.root == str(tmp_path)


def test_aws_connection_becomes_s3fs_options_with_the_secret_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook

    secret_key = "aws-secret-key-0e8f7a"
    session_token = "aws-session-token-61b2"
    define_connection(
        monkeypatch,
        "s3_checkpoints",
        conn_type="aws",
        login="AKIAEXAMPLE",
        password=secret_key,
        extra={
            "region_name": "eu-west-1",
            "aws_session_token": session_token,
            "service_config": {"s3": {"endpoint_url": "http://minio:9000"}},
            "verify": False,
            "botocore_config": {"retries": {"max_attempts": 5}},
        },
    )

    options = CheckpointStorageHook("s3_checkpoints").get_storage_options("s3a://bucket/checkpoints/orders")

    assert options == {
        "key": "AKIAEXAMPLE",
        "secret": secret_key,
        "token": session_token,
        "client_kwargs": {"endpoint_url": "http://minio:9000", "region_name": "eu-west-1", "verify": False},
        "config_kwargs": {"retries": {"max_attempts": 5}},
    }
    masked = redact(f"{options}")
    assert secret_key not in masked and session_token not in masked


def test_aws_connection_for_a_non_s3_location_or_with_a_role_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.common.compat.sdk import AirflowException

    from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook

    define_connection(monkeypatch, "s3_plain", conn_type="aws", login="AKIA", password="aws-secret-abcdef")
    define_connection(monkeypatch, "s3_role", conn_type="aws", extra={"role_arn": "arn:aws:iam::1:role/x"})

    with pytest.raises(AirflowException, match=r"type 'aws'.*'/data/checkpoints/orders'"):
        CheckpointStorageHook("s3_plain").get_storage_options("/data/checkpoints/orders")
    with pytest.raises(AirflowException, match="role_arn"):
        CheckpointStorageHook("s3_role").get_storage_options("s3://bucket/checkpoints/orders")


def test_google_connection_becomes_a_gcsfs_token_with_the_private_key_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook

    private_key = "-----BEGIN PRIVATE KEY-----gcp-key-9a8b7c-----END PRIVATE KEY-----"
    keyfile = {"type": "service_account", "client_email": "eos@p.iam.gserviceaccount.com", "private_key": private_key}
    define_connection(
        monkeypatch,
        "gcs_checkpoints",
        conn_type="google_cloud_platform",
        extra={"keyfile_dict": json.dumps(keyfile), "project": "p"},
    )

    options = CheckpointStorageHook("gcs_checkpoints").get_storage_options("gs://bucket/checkpoints/orders")

    assert options == {"token": keyfile, "project": "p"}
    assert private_key not in redact(f"{options}")


def test_other_connection_types_pass_their_extras_as_storage_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook

    extras = {"key": "minio-user", "secret": "minio-secret-3d4e", "client_kwargs": {"endpoint_url": "http://m:9000"}}
    define_connection(monkeypatch, "minio", conn_type="generic", extra=extras)

    hook = CheckpointStorageHook("minio")

    assert hook.get_storage_options("s3://bucket/checkpoints/orders") == extras
    assert "minio-secret-3d4e" not in redact("secret=minio-secret-3d4e")


def test_hook_is_the_kafka_providers_hook_so_the_connection_form_is_that_providers() -> None:
    from importlib.util import find_spec

    from airflow.providers.apache.kafka.hooks.base import KafkaBaseHook
    from airflow.providers.common.compat.version_compat import AIRFLOW_V_3_3_PLUS
    from airflow.providers_manager import ProvidersManager

    from airflow_provider_eos.hooks.kafka_admin import EosKafkaHook

    assert issubclass(EosKafkaHook, KafkaBaseHook) and EosKafkaHook.conn_type == "kafka"
    assert EosKafkaHook.get_ui_field_behaviour() == KafkaBaseHook.get_ui_field_behaviour()
    # The connection type the UI offers is registered by the apache-kafka provider, with this form.
    manager = ProvidersManager()
    assert "kafka" in manager.hooks
    # Airflow 3.1 fills the forms' field behaviours only where flask_appbuilder is installed (it builds
    # them as FAB widgets, and logs that it skips them); 3.3 reads them without it.
    if AIRFLOW_V_3_3_PLUS or find_spec("flask_appbuilder"):
        assert manager.field_behaviours["kafka"]["relabeling"] == {"extra": "Config Dict"}
