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

import re
from collections.abc import Mapping
from typing import Any

from airflow_provider_eos.core.errors import SpecError
from airflow_provider_eos.core.secrets import is_secret_setting
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings.keys import CONSUMER_ALIASES, PRODUCER_ALIASES, SETTINGS
from airflow_provider_eos.kafka.settings.values import as_text, refuse

__all__ = [
    "admin_config",
    "check_librdkafka_settings",
    "common_config",
    "consumer_keys_config",
    "group_metadata_consumer_config",
    "producer_keys",
    "role_keys",
    "sink_producer_config",
]

#: The librdkafka properties the sink's producer takes from spec fields rather than from ``kafka``.
_FROM_FIELDS = {"transaction.timeout.ms": "transaction_timeout_ms", "transactional.id": "transactional_id_prefix"}


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


# How librdkafka names the property it refuses while a config is set (rd_kafka_conf_set's messages:
# 'Configuration property "X" value V is outside allowed range A..B', 'Invalid value ... for configuration
# property "X"', 'No such configuration property: "X"', 'Expected bool value for "X": true or false').
_REFUSED_PROPERTY = re.compile(r'(?:property:?|bool value for) "([^"]+)"')
_ALLOWED_RANGE = re.compile(r"allowed range (\S+)")
# A client made of settings librdkafka took one by one can still fail to start: on a setting's value judged only
# then ('Failed to create consumer: Configuration property "fetch.min.bytes" value is outside allowed range
# 1..100000000'), a refusal of the spec; or on its surroundings (a CA file missing ...), which the clients that
# start for real report with their own context.
_FAILED_TO_CREATE = re.compile(r"Failed to create \w+: ")
_ALIASES = {**PRODUCER_ALIASES, **CONSUMER_ALIASES}


def consumer_keys_config(spec: PipelineSpec) -> dict[str, Any]:
    """The spec's connection settings and consumer keys, as a librdkafka consumer of the sink group takes them.

    No client of the package is made of it: the consumer keys are read by Spark's Kafka source, a Java
    consumer, in their translation (:func:`~airflow_provider_eos.kafka.settings.java.spark_source_options`).
    librdkafka's range of each (the spec's own dialect) holds the Java consumer's (``fetch.max.wait.ms``,
    ``fetch.min.bytes`` ``atLeast(0)``, a Java int ...), so what it accepts the Java consumer accepts too.
    """
    return {**common_config(spec), **role_keys(spec.kafka, "consumer"), "group.id": spec.group_id}


def check_librdkafka_settings(spec: PipelineSpec) -> None:
    """Refuse, as a spec error, a ``kafka`` setting librdkafka refuses, before any client of the pipeline starts.

    librdkafka judges each setting when a client is made (a value outside its property's range, a
    value it cannot read, a property it does not know), so without this a spec validated and then
    failed at pre-flight's first Kafka client, in the job at its sink's producer, or, for a consumer
    key, only when Spark's Kafka source started its Java consumers. The judge is librdkafka itself,
    without ``bootstrap.servers``, so nothing connects: a producer made from the sink's config (every
    connection setting and the producer's; the admin client takes a part of it), then a consumer
    made from :func:`consumer_keys_config` (the connection settings and the consumer's).

    :raises SpecError: naming the spec's key (an alias of the property librdkafka names counts), its
        value (``***`` for a secret) and librdkafka's message.
    :raises KafkaConfigError: if the spec sets one producer setting under two names (:func:`producer_keys`).
    """
    from confluent_kafka import Consumer, Producer

    _judge(spec, Producer, sink_producer_config(spec))
    _judge(spec, Consumer, consumer_keys_config(spec))


def _judge(spec: PipelineSpec, client: type, config: Mapping[str, Any]) -> None:
    """Make ``client`` of ``config`` without ``bootstrap.servers``; a property librdkafka refuses is a spec error."""
    from confluent_kafka import KafkaException

    try:
        made = client({**{k: v for k, v in config.items() if k != "bootstrap.servers"}, "log_level": 0})
    except KafkaException as exc:
        message = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)
        judged = _FAILED_TO_CREATE.sub("", message, count=1).strip()
        found = _REFUSED_PROPERTY.search(judged)
        if found is None or (judged != message.strip() and not judged.startswith("Configuration property")):
            return
        raise _refused(spec, found.group(1), judged) from None
    if hasattr(made, "close"):
        made.close()  # a consumer's threads; a producer made without a broker holds nothing to flush


def _refused(spec: PipelineSpec, prop: str, message: str) -> SpecError:
    """The spec error for librdkafka's refusal of ``prop``: the spec's key for it, its value and the message."""
    wanted = _ALIASES.get(prop, prop)
    key = next((k for k in spec.kafka if _ALIASES.get(k, k) == wanted), None)
    if key is None:
        field = _FROM_FIELDS.get(prop)
        value = getattr(spec, field) if field else None
        return SpecError(
            f"{field or prop} is {value!r}, which librdkafka refuses as {prop!r}: {message}",
            fix=f"set {field or prop} within the range librdkafka gives for {prop!r}",
        )
    value = spec.kafka[key]
    shown = "***" if is_secret_setting(key, value) else repr(value)
    if message.startswith("No such configuration property"):
        fix = f"correct the key {key!r} to a property librdkafka knows (its CONFIGURATION.md lists them), or remove it"
    elif (allowed := _ALLOWED_RANGE.search(message)) is not None:
        fix = f"set kafka[{key!r}] to a value in {allowed.group(1)} (librdkafka's range for {prop!r}), or remove it"
    else:
        fix = f"set kafka[{key!r}] to a value librdkafka accepts for {prop!r} (its CONFIGURATION.md), or remove it"
    return SpecError(f"kafka[{key!r}] is {shown}, which librdkafka refuses: {message}", fix=fix)
