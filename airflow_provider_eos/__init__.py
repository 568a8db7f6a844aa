"""Exactly-once Kafka -> Spark -> Kafka pipelines, run and kept healthy by Airflow.

This module is imported on Spark executors and by Airflow's provider manager, so it must
import neither Airflow nor PySpark.
"""

from __future__ import annotations

__version__ = "0.1.0"


def get_provider_info() -> dict:
    """Return the provider metadata Airflow's ProvidersManager reads through the entry point."""
    from airflow_provider_eos.configuration import provider_config

    return {
        "package-name": "airflow-provider-eos",
        "name": "Exactly-once Kafka/Spark pipelines (EOS)",
        "description": "End-to-end exactly-once Kafka -> Spark -> Kafka pipelines: pre-flight, "
        "supervision, lingering-transaction recovery and offset verification.",
        "versions": [__version__],
        # The [eos] section of Airflow's configuration (each EOS_* variable wins over its option).
        "config": provider_config(),
        "integrations": [
            {
                "integration-name": "Apache Kafka (exactly-once)",
                "external-doc-url": "https://kafka.apache.org/documentation/#semantics",
                "tags": ["apache"],
            },
            {
                "integration-name": "Spark Structured Streaming checkpoints",
                "external-doc-url": "https://spark.apache.org/docs/latest/"
                "structured-streaming-programming-guide.html#recovering-from-failures-with-checkpointing",
                "tags": ["apache"],
            },
        ],
        "hooks": [
            {
                "integration-name": "Apache Kafka (exactly-once)",
                "python-modules": ["airflow_provider_eos.hooks.kafka_admin"],
            },
            {
                "integration-name": "Spark Structured Streaming checkpoints",
                "python-modules": ["airflow_provider_eos.hooks.checkpoint_storage"],
            },
        ],
        "operators": [
            {
                "integration-name": "Apache Kafka (exactly-once)",
                "python-modules": [
                    "airflow_provider_eos.operators.recovery",
                    "airflow_provider_eos.operators.preflight",
                    "airflow_provider_eos.operators.spark_submit",
                    "airflow_provider_eos.operators.driver",
                ],
            },
        ],
        # The submit task's links to its Spark UI and to its application in the cluster manager.
        "extra-links": [
            "airflow_provider_eos.operators.application_links.SparkUiLink",
            "airflow_provider_eos.operators.application_links.SparkApplicationLink",
        ],
        "sensors": [
            {
                "integration-name": "Apache Kafka (exactly-once)",
                "python-modules": ["airflow_provider_eos.sensors.health"],
            },
        ],
        "triggers": [
            {
                "integration-name": "Apache Kafka (exactly-once)",
                "python-modules": ["airflow_provider_eos.triggers.health"],
            },
        ],
    }
