"""Kafka client settings from an Airflow ``kafka`` connection.

The connection type is the one the apache-kafka provider defines (its ``KafkaBaseHook``): the
connection's extras are a librdkafka config dict, e.g.
``{"bootstrap.servers": "b1:9093", "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
"sasl.username": "...", "sasl.password": "..."}``. :class:`EosKafkaHook` subclasses that
provider's hook, so one Airflow connection serves both.

A pipeline spec carries its own ``kafka`` dict; a connection replaces the spec's *connection
settings* (where the brokers are and how to authenticate) and leaves the spec's other client
settings alone, so the spec stays the one description of the pipeline while credentials live in
Airflow's secrets backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from airflow.providers.apache.kafka.hooks.base import KafkaBaseHook

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.providers.common.compat.sdk import AirflowException
from airflow.sdk.log import mask_secret

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.secrets import is_secret_setting

# The spec refuses these keys (the pipeline derives them), so a connection shared with the
# apache-kafka provider's consumer operators may carry them but they must not reach the spec.
from airflow_provider_eos.core.spec import RESERVED_KAFKA_KEYS, PipelineSpec

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

__all__ = [
    "EosKafkaHook",
    "is_connection_setting",
    "load_pipeline_spec",
    "mask_kafka_secrets",
    "merge_kafka_config",
]

_CONNECTION_KEYS = frozenset(
    {
        "bootstrap.servers",
        "metadata.broker.list",
        "security.protocol",
        "client.dns.lookup",
        "enable.ssl.certificate.verification",
    }
)
_CONNECTION_PREFIXES = ("sasl.", "ssl.", "ssl_", "enable.sasl.", "https.")


def is_connection_setting(key: str) -> bool:
    """Whether a librdkafka key says where the cluster is or how to authenticate to it.

    :param key: a librdkafka property name.
    """
    return key in _CONNECTION_KEYS or key.startswith(_CONNECTION_PREFIXES)


def mask_kafka_secrets(config: Mapping[str, Any]) -> None:
    """Register every secret value of a librdkafka config with Airflow's secrets masker.

    From then on the values are replaced by ``***`` in task logs, including in exception
    messages and in output of libraries the task calls. Airflow's masker only hides values whose
    key names contain words like "password" or "secret"; which settings are secret (a PEM key, an
    OAUTHBEARER config, a secret-looking value) is decided by the package's one owner,
    :func:`airflow_provider_eos.core.secrets.is_secret_setting`.

    :param config: a librdkafka config (a spec's ``kafka`` dict or a connection's extras).
    """
    for key, value in config.items():
        if is_secret_setting(key, value) and isinstance(value, str) and value:
            mask_secret(value)


def merge_kafka_config(spec_kafka: Mapping[str, Any], connection: Mapping[str, Any]) -> dict[str, Any]:
    """Combine a spec's ``kafka`` dict with a connection's librdkafka config.

    The connection wins for connection settings (:func:`is_connection_setting`): the spec's
    connection settings are all dropped, not merged key by key, so a spec written for one
    authentication method never leaves, say, a stale ``sasl.mechanism`` next to a connection's
    SSL settings. Other keys come from the spec, falling back to the connection's, except the
    keys the pipeline derives itself (``group.id``, ``transactional.id``), which are dropped.

    :param spec_kafka: the spec's ``kafka`` dict.
    :param connection: the connection's librdkafka config.
    :return: the merged librdkafka config.
    """
    merged = {k: v for k, v in connection.items() if not is_connection_setting(k) and k not in RESERVED_KAFKA_KEYS}
    merged.update({k: v for k, v in spec_kafka.items() if not is_connection_setting(k)})
    merged.update({k: v for k, v in connection.items() if is_connection_setting(k)})
    return merged


class EosKafkaHook(KafkaBaseHook):
    """Reads the librdkafka config of an Airflow ``kafka`` connection (the apache-kafka provider's type).

    A subclass of the apache-kafka provider's :class:`KafkaBaseHook`, which owns the ``kafka``
    connection type and its form in the UI (only the extras, labelled "Config Dict"): one
    connection serves that provider's operators and this one. The connection's extras are the
    config dict; host, login and password are not used. Secret values
    (:func:`~airflow_provider_eos.core.secrets.is_secret_setting`) are registered with the secrets
    masker as soon as the config is read.

    :param kafka_conn_id: the Airflow connection id.
    """

    hook_name = "Apache Kafka (exactly-once pipelines)"

    def __init__(self, kafka_conn_id: str = KafkaBaseHook.default_conn_name) -> None:
        super().__init__(kafka_config_id=kafka_conn_id)
        self.kafka_conn_id = kafka_conn_id
        self._config: dict[str, Any] | None = None

    def get_config(self) -> dict[str, Any]:
        """Return the connection's librdkafka config, its secrets registered with the masker.

        :raises AirflowException: if the extras are not a config dict with ``bootstrap.servers``.
        """
        if self._config is None:
            conn = self.get_connection(self.kafka_conn_id)
            config = conn.extra_dejson
            if not isinstance(config, dict):
                raise AirflowException(
                    f"Kafka connection {self.kafka_conn_id!r}: the extras are a {type(config).__name__}, "
                    'not a librdkafka config dict; set them to e.g. {"bootstrap.servers": "host:9092"}'
                )
            mask_kafka_secrets(config)
            servers = config.get("bootstrap.servers")
            if not isinstance(servers, str) or not servers.strip():
                raise AirflowException(
                    f"Kafka connection {self.kafka_conn_id!r} has no 'bootstrap.servers' in its extras; "
                    'set the extras to a librdkafka config dict, e.g. {"bootstrap.servers": "host:9092"}'
                )
            for key, value in config.items():
                if not isinstance(value, str | int | bool):
                    # Name the key and type only: the value may be a secret the masker skips.
                    raise AirflowException(
                        f"Kafka connection {self.kafka_conn_id!r}: extra {key!r} is a {type(value).__name__}; "
                        "librdkafka values are strings, integers or booleans"
                    )
            self._config = config
        return dict(self._config)

    def pipeline_spec(self, spec: PipelineSpec) -> PipelineSpec:
        """Return ``spec`` with its ``kafka`` dict merged with this connection (see :func:`merge_kafka_config`).

        :param spec: the pipeline spec.
        :raises AirflowException: if the merged config is not a valid spec ``kafka`` dict.
        """
        config = self.get_config()
        try:
            return spec.with_overrides(kafka=merge_kafka_config(spec.kafka, config))
        except SpecError as err:
            raise AirflowException(
                f"Kafka connection {self.kafka_conn_id!r} does not fit pipeline {spec.name!r}: {err}"
            ) from err

    def get_admin_client(self) -> AdminClient:
        """Return a confluent-kafka ``AdminClient`` on this connection's config."""
        from airflow_provider_eos.kafka.login import connected_admin

        return connected_admin("admin", self.get_config())

    def get_kafka_python_config(self) -> dict[str, Any]:
        """Return the connection's config as kafka-python ``KafkaAdminClient`` arguments, SASL and SSL included.

        The transaction admin calls (KIP-664) go through kafka-python; the translation is
        :func:`airflow_provider_eos.kafka.transactions_admin.kafka_python_config`.
        """
        from airflow_provider_eos.kafka.transactions_admin import kafka_python_config

        return kafka_python_config(self.get_config())

    def test_connection(self) -> tuple[bool, str]:
        """List the cluster's topics through the connection (the UI's "Test" button)."""
        try:
            metadata = self.get_admin_client().list_topics(timeout=10)
        except Exception as err:
            return False, str(err)
        return True, f"Connected: {len(metadata.brokers)} broker(s), {len(metadata.topics)} topic(s)"


def load_pipeline_spec(spec_path: str, kafka_conn_id: str | None = None) -> PipelineSpec:
    """Load a spec file for a task, with the Kafka settings of an optional ``kafka`` connection.

    Secrets of the spec's own ``kafka`` dict are registered with the masker too: a spec file
    may carry credentials when no connection is used.

    :param spec_path: the spec file (YAML or JSON).
    :param kafka_conn_id: a ``kafka`` connection whose config replaces the spec's connection
        settings (:func:`merge_kafka_config`); ``None`` keeps the spec's ``kafka`` dict.
    :raises SpecError: if the file is missing or invalid.
    :raises AirflowException: if the connection is unusable or does not fit the spec.
    """
    spec = PipelineSpec.load(spec_path)
    mask_kafka_secrets(spec.kafka)
    if kafka_conn_id is None:
        return spec
    return EosKafkaHook(kafka_conn_id).pipeline_spec(spec)
