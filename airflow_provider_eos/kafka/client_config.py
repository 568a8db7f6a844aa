"""librdkafka configs for each role, derived from the one ``kafka`` dict of the pipeline spec."""

from __future__ import annotations

from typing import Any

from airflow_provider_eos.core.spec import PipelineSpec

# Keys that only make sense for one client role; librdkafka warns or fails on the others.
_PRODUCER_ONLY = {"transactional.id", "transaction.timeout.ms", "enable.idempotence", "acks", "linger.ms",
                  "partitioner", "message.timeout.ms", "compression.type", "batch.size"}
_CONSUMER_ONLY = {"group.id", "isolation.level", "auto.offset.reset", "enable.auto.commit"}


def common_config(spec: PipelineSpec) -> dict[str, Any]:
    """The spec's connection settings (bootstrap, security) without role-specific keys."""
    return {k: v for k, v in spec.kafka.items() if k not in _PRODUCER_ONLY | _CONSUMER_ONLY}


def sink_producer_config(spec: PipelineSpec, writer_index: int = 0) -> dict[str, Any]:
    """The sink's transactional producer.

    ``murmur2_random`` is the Java client's partitioner: a key lands in the partition Spark's
    built-in writer and Java producers choose (librdkafka's default, consistent_random, differs).
    ``message.timeout.ms`` stays within the transaction timeout so a stuck send fails the batch
    before the broker aborts the transaction under it.
    """
    config = {
        **common_config(spec),
        "linger.ms": 20,
        "compression.type": "lz4",
        **{k: v for k, v in spec.kafka.items() if k in _PRODUCER_ONLY},
        "transactional.id": spec.transactional_id(writer_index),
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
    return common_config(spec)


def spark_source_options(spec: PipelineSpec) -> dict[str, str]:
    """The spec's Kafka settings as Spark Kafka source options (``kafka.`` prefix, Java names)."""
    return {f"kafka.{k}": str(v).lower() if isinstance(v, bool) else str(v) for k, v in common_config(spec).items()}
