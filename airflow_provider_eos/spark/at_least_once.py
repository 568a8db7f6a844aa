"""The at-least-once baseline: Spark's own Kafka writer inside ``foreachBatch``; clearly NOT exactly-once."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING

from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.spark.record_producer import DLQ_REASON_COLUMN, BatchStats, Stopwatch
from airflow_provider_eos.spark.sink_points import SinkObserver, SinkPoint

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

__all__ = ["AtLeastOnceKafkaSink"]

log = logging.getLogger("airflow_provider_eos.sink")


class AtLeastOnceKafkaSink:
    """Baseline only: Spark's built-in Kafka writer inside ``foreachBatch``.

    This is the same ``KafkaWriter`` Spark's streaming Kafka sink uses; a batch replayed after a
    crash between the write and Spark's commit log is written again (duplicates). It exists to
    measure the cost of exactly-once and to prove the duplicate checks can see duplicates.

    :param observer: what it announces its points to (:mod:`.sink_points`); by default nobody.
    """

    def __init__(self, spec: PipelineSpec, observer: SinkObserver | None = None) -> None:
        self.spec = spec
        self.observer = observer or SinkObserver()
        self.stats: dict[int, BatchStats] = {}
        self.in_batch = False
        from airflow_provider_eos.kafka.settings import spark_sink_options

        # Translated here, not per batch: a setting the Java producer cannot take fails before the query starts.
        self._options = spark_sink_options(spec)

    def __call__(self, batch: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F

        self.in_batch = True
        try:
            points = self.observer.for_batch(batch_id)
            clock = Stopwatch()
            if DLQ_REASON_COLUMN in batch.columns:
                topic = F.when(F.col(DLQ_REASON_COLUMN).isNull(), F.lit(self.spec.output_topic)).otherwise(
                    F.lit(self.spec.dlq_topic or self.spec.output_topic))
            else:
                topic = F.lit(self.spec.output_topic)
            columns = [topic.alias("topic"), "key", "value"] + (["headers"] if "headers" in batch.columns else [])
            points.hit(SinkPoint.BEFORE_PRODUCE)
            batch.select(*columns).write.format("kafka").options(**self._options).save()
            points.hit(SinkPoint.AFTER_PRODUCE)
            self._record(BatchStats(batch_id, "produce_at_least_once", produce_ms=clock.lap()))
        finally:
            self.in_batch = False

    def _record(self, stats: BatchStats) -> None:
        self.stats[stats.batch_id] = stats
        log.info("EOS-BATCH %s", json.dumps(stats.log_fields(), sort_keys=True))

    def close(self) -> None:
        """Nothing to release: Spark owns the writer's producers."""
