"""The rules for the spec's ``kafka`` block: the librdkafka client config source, sink and admin share.

Values are what librdkafka accepts (strings, integers, booleans), keys are non-empty and
unpadded, ``bootstrap.servers`` is set, and the keys this package derives from the spec itself
(:data:`RESERVED_KAFKA_KEYS`) are refused, because setting them in the shared client config
would contradict the spec. The translation of the block for the Java and kafka-python clients
lives in :mod:`airflow_provider_eos.kafka.settings`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_eos.core.spec.validation_errors import KeyedValueError, type_name

__all__ = ["KafkaConfig", "check_kafka_keys", "check_kafka_value_types"]

KafkaConfig = dict[str, str | int | bool]

# Keys this package owns; setting them in the shared client config would contradict the spec.
RESERVED_KAFKA_KEYS = {
    "transactional.id": "transactional ids are derived from transactional_id_prefix; remove the key "
    "and set transactional_id_prefix",
    "group.id": "the sink group is the spec's group_id and no live consumer may join it; remove the "
    "key and set group_id",
}


def check_kafka_value_types(value: Any) -> Any:
    """Refuse non-string keys and values librdkafka cannot take, before pydantic's own validation.

    Run before pydantic's union validation, which would report one error per union member.

    :raises ValueError: ``"<what is wrong>; <fix>"``, naming the key and the type, never the value.
    """
    if isinstance(value, Mapping):
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"kafka key {key!r} is not a string; quote it")
            if not isinstance(item, str | int | bool):
                # The type only: the value may be a password.
                raise KeyedValueError(
                    f"kafka[{key!r}] is {type_name(item)}; librdkafka values are strings, integers or "
                    "booleans, so write one value (quoted if need be)",
                    key=key,
                )
    return value


def check_kafka_keys(value: KafkaConfig) -> KafkaConfig:
    """Refuse empty, padded and reserved keys, and require ``bootstrap.servers``.

    :raises ValueError: ``"<what is wrong>; <fix>"``.
    """
    for key in value:
        if not key or key != key.strip():
            raise ValueError(f"kafka key {key!r} is empty or has surrounding spaces")
        if key in RESERVED_KAFKA_KEYS:
            raise ValueError(f"kafka must not set {key!r}: {RESERVED_KAFKA_KEYS[key]}")
    servers = value.get("bootstrap.servers")
    if not isinstance(servers, str) or not servers.strip():
        raise ValueError(
            f"kafka['bootstrap.servers'] is {servers!r}; set it to the broker list, e.g. 'localhost:9092'"
        )
    return value
