"""Parse and validate JSON events; valid ones are enriched, invalid ones go to the dead-letter topic.

Input value: ``{"id": "...", "user": "...", "amount": 12.5, "ts": "2026-01-01T00:00:00Z"}``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, StringType, StructField, StructType

EVENT = StructType([
    StructField("id", StringType()), StructField("user", StringType()),
    StructField("amount", DoubleType()), StructField("ts", StringType()),
])


def transform(frame: DataFrame) -> DataFrame:
    text = F.col("value").cast("string")
    event = F.from_json(text, EVENT, {"mode": "PERMISSIVE"})
    parsed = frame.withColumn("event", event)
    reason = (
        F.when(F.col("event").isNull(), F.lit("not a JSON object"))
        .when(F.col("event.id").isNull(), F.lit("missing field: id"))
        .when(F.col("event.user").isNull(), F.lit("missing field: user"))
        .when(F.col("event.amount").isNull(), F.lit("missing or non-numeric field: amount"))
    )
    enriched = F.to_json(F.struct(
        F.col("event.id").alias("id"), F.col("event.user").alias("user"), F.col("event.amount").alias("amount"),
        F.col("event.ts").alias("ts"),
        F.when(F.col("event.amount") >= 1000, "high").when(F.col("event.amount") >= 100, "medium")
        .otherwise("low").alias("amount_band"),
    ))
    return parsed.select(
        # Dead letters keep the original key and value; the sink adds the reason and origin as headers.
        F.when(reason.isNull(), F.col("event.user").cast("binary")).otherwise(F.col("key")).alias("key"),
        F.when(reason.isNull(), enriched.cast("binary")).otherwise(F.col("value")).alias("value"),
        reason.alias("dlq_reason"),
        "topic", "partition", "offset",
    )
