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
    """Records pass with their headers; values starting with ``bad`` become dead letters (their headers kept too).

    Key and value come out as strings (the input's are UTF-8), which every writer writes as their bytes.
    """
    value = F.col("value").cast("string")
    reason = F.when(value.startswith("bad"), F.lit("value starts with bad"))
    return frame.select(F.col("key").cast("string").alias("key"), value.alias("value"), "headers",
                        reason.alias("dlq_reason"), "topic", "partition", "offset")


def numbered_keys(frame: DataFrame) -> DataFrame:
    """A key of type int, which no Kafka writer takes: the job must refuse it before its first batch."""
    return frame.select(F.col("partition").alias("key"), "value")


def partition_as_text(frame: DataFrame) -> DataFrame:
    """The source's partition column as a string, which the JVM writer would read as an int: refused at start."""
    return frame.select("key", "value", F.col("partition").cast("string").alias("partition"))


def headers_with_a_null_key(frame: DataFrame) -> DataFrame:
    """Every row gets a header whose key is null, which the headers column allows and Kafka does not."""
    header = F.struct(F.lit(None).cast("string").alias("key"), F.lit(b"x").alias("value"))
    return frame.select("key", "value", F.array(header).alias("headers"))


def slow_values(frame: DataFrame) -> DataFrame:
    """Every value passes as it is; a value ``slow:S`` takes S seconds to transform (a long batch on purpose).

    The sleep is in the task, before its rows reach the writer: the driver writer's spill of such a batch
    grows one task's file at a time.
    """
    from pyspark.sql.types import BinaryType

    def slowly(value: bytes | None) -> bytes | None:
        import time

        if value is not None and value.startswith(b"slow:"):
            time.sleep(float(value[len(b"slow:"):]))
        return value

    return frame.select("key", F.udf(slowly, BinaryType())("value").alias("value"))
