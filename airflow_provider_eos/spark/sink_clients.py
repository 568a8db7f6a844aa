"""The Kafka clients and the checkpoint reader the exactly-once sink holds on the driver, for both writers."""

from __future__ import annotations

from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings import admin_config, group_metadata_consumer_config, with_client_logger
from airflow_provider_eos.spark.transactional_producer import TransactionalProducer

__all__ = ["SinkClients"]


class SinkClients:
    """One admin client, one group-metadata handle and the driver's transactional producer ``<prefix>-0``.

    The driver producer writes every batch of the driver writer, and the partitions without a task
    of the executor writers.
    """

    def __init__(self, spec: PipelineSpec) -> None:
        self.spec = spec
        self.checkpoint = CheckpointReader(spec.checkpoint_location)
        self.admin = AdminClient(with_client_logger("admin", admin_config(spec)))
        self.driver_producer = TransactionalProducer(spec, spec.transactional_id(0))
        self._group_handle = Consumer(
            with_client_logger("group-metadata-consumer", group_metadata_consumer_config(spec))
        )

    def group_metadata(self) -> object:
        """The sink group's handle for ``send_offsets_to_transaction``."""
        return self._group_handle.consumer_group_metadata()

    def close(self) -> None:
        self.driver_producer.close()
        self._group_handle.close()
