"""The Kafka clients and the checkpoint reader the exactly-once sink holds on the driver, for both writers."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from confluent_kafka import Consumer

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.checkpoint.webhdfs import WEBHDFS_CONF_KEYS, is_hdfs_location
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.login import connected_admin
from airflow_provider_eos.kafka.settings import admin_config, group_metadata_consumer_config, with_client_logger
from airflow_provider_eos.spark.transactional_producer import TransactionalProducer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["SinkClients", "driver_checkpoint"]


def driver_checkpoint(spec: PipelineSpec, session: SparkSession | None) -> CheckpointReader:
    """The checkpoint reader of the driver; an ``hdfs://`` one finds WebHDFS as Spark finds HDFS.

    In YARN's cluster deploy mode the driver has no ``HADOOP_CONF_DIR`` of its own: its Hadoop
    configuration is the one Spark shipped with the application, in the JVM. The user stated to
    WebHDFS is the one Spark writes the checkpoint as (``sparkUser``), not the container's OS user.
    """
    if session is None or not is_hdfs_location(spec.checkpoint_location):
        return CheckpointReader(spec.checkpoint_location)
    jvm = session.sparkContext._jvm
    jvm.org.apache.hadoop.hdfs.HdfsConfiguration.init()  # loads hdfs-site.xml into every Configuration
    conf = session.sparkContext._jsc.hadoopConfiguration()
    hadoop_conf = {key: value for key in WEBHDFS_CONF_KEYS if (value := conf.get(key)) is not None}
    return CheckpointReader(spec.checkpoint_location, {"user": session.sparkContext.sparkUser()},
                            hadoop_conf=hadoop_conf)


def _no_guard() -> None:
    """Without a lease (``eos run``, no driver token) nothing stops the driver's commits."""


class SinkClients:
    """One admin client, one group-metadata handle and the driver's transactional producer ``<prefix>-0``.

    The driver producer writes every batch of the driver writer, and the partitions without a task
    of the executor writers.

    :param guard: called right before the driver's producer commits; raises when the driver may no
        longer commit (its lease lapsed: :class:`~airflow_provider_eos.spark.driver_lease.LeaseKeeper`).
    """

    def __init__(self, spec: PipelineSpec, checkpoint: CheckpointReader | None = None,
                 guard: Callable[[], None] | None = None) -> None:
        self.spec = spec
        self.guard: Callable[[], None] = guard or _no_guard
        self.checkpoint = checkpoint or CheckpointReader(spec.checkpoint_location)
        self.admin = connected_admin("admin", admin_config(spec))
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
