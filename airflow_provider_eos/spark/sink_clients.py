"""The Kafka clients and the checkpoint reader the exactly-once sink holds on the driver, for both writers."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from confluent_kafka import Consumer, KafkaException

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.checkpoint.webhdfs import WEBHDFS_CONF_KEYS, is_hdfs_location
from airflow_provider_eos.core.offsets_expiry import RetentionReading
from airflow_provider_eos.core.sink_protocol import PlannedBatch
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.broker_configs import offsets_retention_minutes
from airflow_provider_eos.kafka.login import connected_admin
from airflow_provider_eos.kafka.settings import admin_config, group_metadata_consumer_config, with_client_logger
from airflow_provider_eos.spark.transactional_producer import TransactionalProducer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from airflow_provider_eos.core.topic_partition import OffsetMap

__all__ = ["SinkClients", "driver_checkpoint"]

log = logging.getLogger("airflow_provider_eos.sink")


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
    """Without a lease (a sink made outside :func:`~.job.run_pipeline`: a harness's own) nothing stops its commits."""


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
        self._retention_minutes: int | None = None

    def _retention(self) -> RetentionReading:
        """The brokers' ``offsets.retention.minutes`` (read once per run; again after a failed read), as of now."""
        now = dt.datetime.now(dt.UTC)
        if self._retention_minutes is not None:
            return RetentionReading(self._retention_minutes, now)
        try:
            self._retention_minutes = offsets_retention_minutes(self.admin, 30.0)
        except (KafkaException, TimeoutError) as exc:
            log.warning("EOS-SINK could not read offsets.retention.minutes: %s", exc)
            return RetentionReading(None, now, f"DescribeConfigs of the brokers failed: {exc}")
        return RetentionReading(self._retention_minutes, now)

    def planned_batch(self, query_id: str, batch_id: int, start: OffsetMap, end: OffsetMap) -> PlannedBatch:
        """Batch ``N`` as the checkpoint planned it, with whether its offsets may have expired when that matters.

        The expiry is judged only for a batch that takes an empty group for "nothing committed" (the query's
        first batch, or one with a new partition): ``offsets/N``'s planning time against the brokers'
        ``offsets.retention.minutes``, read once per run (docs/design-notes.md note 55).
        """
        batch = PlannedBatch.of(query_id=query_id, batch_id=batch_id, start=start, end=end)
        if not batch.accepts_nothing_committed:
            return batch
        expiry = self._retention().expiry_of(batch_id, self.checkpoint.batch_metadata(batch_id))
        return PlannedBatch.of(query_id=query_id, batch_id=batch_id, start=start, end=end, expiry=expiry)

    def group_metadata(self) -> object:
        """The sink group's handle for ``send_offsets_to_transaction``."""
        return self._group_handle.consumer_group_metadata()

    def close(self) -> None:
        self.driver_producer.close()
        self._group_handle.close()
