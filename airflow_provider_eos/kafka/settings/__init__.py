"""The one translation of a pipeline's Kafka settings into each client's dialect.

The spec's ``kafka`` dict is librdkafka's dialect. From it:

- :mod:`.librdkafka`: confluent-kafka configs per role (sink producer, group-metadata consumer,
  admin); :mod:`.client_logs` adds the logger that routes librdkafka's lines into Python logging
  where a client is built (:func:`with_client_logger`);
- :mod:`.java`: the Java client under Spark (Kafka source and sink options, and the JVM executor
  writer's transactional producer and admin client), with SASL/SSL translated by :mod:`.java_security`;
- :mod:`.kafka_python`: kafka-python ``KafkaAdminClient`` arguments.

:mod:`.keys` is the table of every key each dialect accepts, drops (with the reason) or refuses.
A setting that cannot be translated raises :class:`~airflow_provider_eos.core.errors.KafkaConfigError`.
"""

from airflow_provider_eos.core.errors import KafkaConfigError
from airflow_provider_eos.kafka.settings.client_logs import LOGGER_PREFIX, client_logger, with_client_logger
from airflow_provider_eos.kafka.settings.java import (
    SPARK_OPTIONS_REDACTION_REGEX,
    java_admin_config,
    java_client_config,
    java_sink_producer_config,
    spark_sink_options,
    spark_source_options,
)
from airflow_provider_eos.kafka.settings.kafka_python import kafka_python_can_take, kafka_python_config, protect_secrets
from airflow_provider_eos.kafka.settings.librdkafka import (
    admin_config,
    check_librdkafka_settings,
    common_config,
    group_metadata_consumer_config,
    sink_producer_config,
)

__all__ = [
    "LOGGER_PREFIX",
    "SPARK_OPTIONS_REDACTION_REGEX",
    "KafkaConfigError",
    "admin_config",
    "check_librdkafka_settings",
    "client_logger",
    "common_config",
    "group_metadata_consumer_config",
    "java_admin_config",
    "java_client_config",
    "java_sink_producer_config",
    "kafka_python_can_take",
    "kafka_python_config",
    "protect_secrets",
    "sink_producer_config",
    "spark_sink_options",
    "spark_source_options",
    "with_client_logger",
]
