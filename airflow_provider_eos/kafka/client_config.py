"""Kept import path: the librdkafka role configs and Spark's source options now live in
:mod:`airflow_provider_eos.kafka.settings`, the one owner of the Kafka settings' dialects."""

from airflow_provider_eos.kafka.settings import (
    admin_config,
    common_config,
    group_metadata_consumer_config,
    sink_producer_config,
    spark_source_options,
)

__all__ = [
    "admin_config",
    "common_config",
    "group_metadata_consumer_config",
    "sink_producer_config",
    "spark_source_options",
]
