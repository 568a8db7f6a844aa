"""Stateful example: per-user event count in 1-minute event-time tumbling windows, with a watermark.

An alert is emitted (once, when the watermark closes the window) for a user with more than
``THRESHOLD`` events in a window. Malformed events go to the dead-letter topic. No-data batches
run when the watermark moves, so the sink protocol is exercised on them too.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType, TimestampType

from airflow_provider_eos.core.transform_traits import stateful_transform

THRESHOLD = 3
WATERMARK = "30 seconds"
EVENT = StructType([StructField("user", StringType()), StructField("ts", TimestampType())])


@stateful_transform
def transform(frame: DataFrame) -> DataFrame:
    parsed = frame.withColumn("event", F.from_json(F.col("value").cast("string"), EVENT))
    valid = F.col("event.user").isNotNull() & F.col("event.ts").isNotNull()
    alerts = (
        parsed.where(valid)
        .select(F.col("event.user").alias("user"), F.col("event.ts").alias("ts"))
        .withWatermark("ts", WATERMARK)
        .groupBy(F.window("ts", "1 minute"), "user")
        .count()
        .where(F.col("count") > THRESHOLD)
        .select(
            F.col("user").cast("binary").alias("key"),
            F.to_json(F.struct(
                "user", F.col("window.start").alias("window_start"), F.col("window.end").alias("window_end"), "count",
            )).cast("binary").alias("value"),
            F.lit(None).cast("string").alias("dlq_reason"),
            F.lit(None).cast("string").alias("topic"),
            F.lit(None).cast("int").alias("partition"),
            F.lit(None).cast("long").alias("offset"),
        )
    )
    dead_letters = parsed.where(~valid | F.col("event").isNull()).select(
        "key", "value", F.lit("malformed event: needs user and ts").alias("dlq_reason"), "topic", "partition",
        "offset",
    )
    return alerts.unionByName(dead_letters)
