"""The brokers' configurations (DescribeConfigs of each live broker), read with the confluent admin client.

Pre-flight reads them all (:mod:`.cluster_facts`); the sink reads ``offsets.retention.minutes`` before a
batch that takes an empty group for "nothing committed" (:func:`offsets_retention_minutes`,
docs/design-notes.md note 55).
"""

from __future__ import annotations

from collections.abc import Iterable

from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from airflow_provider_eos.core.preflight.facts import KAFKA_BROKER_DEFAULTS

__all__ = ["describe_broker_configs", "offsets_retention_minutes"]

_RETENTION = "offsets.retention.minutes"


def describe_broker_configs(
    admin: AdminClient, brokers: Iterable[int], timeout_s: float,
) -> dict[int, dict[str, str | None]]:
    """Each broker's configuration: name -> value as the admin client reports it.

    :raises KafkaException: the call failed or was refused (DescribeConfigs on the cluster).
    :raises TimeoutError: a broker did not answer within ``timeout_s``.
    """
    # One call per broker: librdkafka refuses two BROKER resources in one DescribeConfigs (_CONFLICT).
    futures = {broker: future for broker in brokers for future in admin.describe_configs(
        [ConfigResource(ResourceType.BROKER, str(broker))], request_timeout=timeout_s).values()}
    return {
        broker: {name: entry.value for name, entry in future.result(timeout_s + 5).items()}
        for broker, future in futures.items()
    }


def offsets_retention_minutes(admin: AdminClient, timeout_s: float) -> int:
    """The lowest ``offsets.retention.minutes`` over the live brokers (any may coordinate the sink group).

    A broker that does not report it runs Kafka's default, as pre-flight's EOS108 takes it.

    :raises KafkaException: the call failed or was refused (DescribeConfigs on the cluster).
    :raises TimeoutError: the cluster or a broker did not answer within ``timeout_s``.
    """
    brokers = sorted(admin.list_topics(timeout=timeout_s).brokers)
    values = []
    for configs in describe_broker_configs(admin, brokers, timeout_s).values():
        raw = str(configs.get(_RETENTION) or "").strip()
        values.append(int(raw) if raw.lstrip("-").isdigit() else KAFKA_BROKER_DEFAULTS[_RETENTION])
    return min(values, default=KAFKA_BROKER_DEFAULTS[_RETENTION])
