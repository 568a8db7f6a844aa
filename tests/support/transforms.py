"""Transforms for the writer tests; the job imports them by ``module:function`` (PYTHONPATH = repo root)."""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F


def drop_every_other_partition(frame: DataFrame) -> DataFrame:
    """Keeps only partition 0's rows and drops the source columns: partition 1's task writes nothing but commits."""
    return frame.where(F.col("partition") == 0).select("key", "value")


def repartitioned(frame: DataFrame) -> DataFrame:
    """A shuffle: rows move between Spark partitions, so executor writers must refuse."""
    return frame.select("key", "value").repartition(3)


def headers_kept_bad_to_dlq(frame: DataFrame) -> DataFrame:
    """Records pass with their headers; values starting with ``bad`` become dead letters (their headers kept too)."""
    reason = F.when(F.col("value").cast("string").startswith("bad"), F.lit("value starts with bad"))
    return frame.select("key", "value", "headers", reason.alias("dlq_reason"), "topic", "partition", "offset")
