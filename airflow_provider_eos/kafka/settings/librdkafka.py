"""librdkafka configs for each role (confluent-kafka producer, consumer, admin), from the spec's one ``kafka`` dict.

The spec's dict is librdkafka's own dialect, so nothing is renamed here beyond librdkafka's own
aliases of the producer settings the sink sets itself (:func:`producer_keys`): each role gets the
connection settings plus the keys of its role (:data:`~airflow_provider_eos.kafka.settings.keys.SETTINGS`
says which keys belong to a producer or a consumer; librdkafka warns about, or refuses, the
others). Keys the table does not know stay in every role: librdkafka itself judges them.
These configs are plain dicts (they go into XCom and JSON); the logger is added where a client
is built (:func:`~airflow_provider_eos.kafka.settings.client_logs.with_client_logger`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings.keys import PRODUCER_ALIASES, SETTINGS
from airflow_provider_eos.kafka.settings.values import as_text, refuse

__all__ = [
    "admin_config",
    "common_config",
    "group_metadata_consumer_config",
    "producer_keys",
    "role_keys",
    "sink_producer_config",
]


def role_keys(librdkafka: Mapping[str, Any], scope: str) -> dict[str, Any]:
    """The keys of ``librdkafka`` the table puts in ``scope`` (``producer`` or ``consumer``)."""
    return {k: v for k, v in librdkafka.items() if k in SETTINGS and SETTINGS[k].scope == scope}


def producer_keys(librdkafka: Mapping[str, Any]) -> dict[str, Any]:
    """The producer keys of ``librdkafka``, each alias under the name this package uses (:data:`PRODUCER_ALIASES`).

    The sink adds its own ``linger.ms``, ``compression.type``, ``acks`` and caps ``message.timeout.ms``:
    a spec's ``queue.buffering.max.ms`` beside the sink's ``linger.ms`` would leave the producer two names
    for one setting with different values (librdkafka takes the last, the Java client refuses both).

    :raises KafkaConfigError: naming both keys, when the spec sets a setting under both its names with
        different values.
    """
    keys: dict[str, Any] = {}
    given: dict[str, str] = {}
    for key, value in role_keys(librdkafka, "producer").items():
        name = PRODUCER_ALIASES.get(key, key)
        if name in keys and as_text(keys[name]) != as_text(value):
            raise refuse(
                key,
                None,
                f"is the same librdkafka setting as kafka[{given[name]!r}], with another value",
                f"set only one of {given[name]!r} and {key!r}",
            )
        keys[name], given[name] = value, key
    return keys


def _connection(librdkafka: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in librdkafka.items() if k not in SETTINGS or SETTINGS[k].scope == "common"}


def common_config(spec: PipelineSpec) -> dict[str, Any]:
    """The spec's connection settings (bootstrap, security, timeouts) without producer or consumer keys."""
    return _connection(spec.kafka)


def sink_producer_config(spec: PipelineSpec, writer_index: int = 0, *, transactional_id: str | None = None,
                         ) -> dict[str, Any]:
    """The sink's transactional producer: writer ``writer_index``, or the given ``transactional_id``.

    The executor writers pass their input partition's id (``spec.partition_transactional_id``).

    ``murmur2_random`` is the Java client's partitioner: a key lands in the partition Spark's
    built-in writer and Java producers choose (librdkafka's default, consistent_random, differs).
    ``message.timeout.ms`` stays within the transaction timeout so a stuck send fails the batch
    before the broker aborts the transaction under it. The spec's producer keys come under this
    package's names (:func:`producer_keys`): its ``queue.buffering.max.ms``, ``compression.codec`` or
    ``delivery.timeout.ms`` replaces the default or is capped as ``linger.ms``, ``compression.type``
    or ``message.timeout.ms`` would be.

    :raises KafkaConfigError: when the spec sets one producer setting under both its names, with
        different values.
    """
    config = {
        **common_config(spec),
        "linger.ms": 20,
        "compression.type": "lz4",
        **producer_keys(spec.kafka),
        "transactional.id": transactional_id or spec.transactional_id(writer_index),
        "transaction.timeout.ms": spec.transaction_timeout_ms,
        "enable.idempotence": True,
        "acks": "all",
        "partitioner": "murmur2_random",
    }
    config["message.timeout.ms"] = min(int(config.get("message.timeout.ms", 300_000)), spec.transaction_timeout_ms)
    return config


def group_metadata_consumer_config(spec: PipelineSpec) -> dict[str, Any]:
    """A consumer that never subscribes: it only supplies the sink group's metadata handle."""
    return {**common_config(spec), "group.id": spec.group_id, "enable.auto.commit": False}


def admin_config(spec: PipelineSpec) -> dict[str, Any]:
    """The admin client: connection settings only."""
    return common_config(spec)
