"""The Spark application that writes the tests' driver class archive (``tests.support.class_archive``).

It loads what a test's job loads, without a broker: a streaming query (the rate source, a
checkpoint, ``foreachBatch`` calling back into Python) whose batches go through ``mapInArrow`` to
Python workers, JSON functions and a ``collect``; then it exits 0, and the JVM writes the archive.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator


def count_rows(batches: Iterator) -> Iterator:
    import pyarrow as pa

    yield pa.RecordBatch.from_pydict({"rows": [sum(batch.num_rows for batch in batches)]})


def main() -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = SparkSession.builder.appName("eos-test-class-archive").getOrCreate()
    seen: list[int] = []

    def write(batch, batch_id: int) -> None:
        frame = batch.select(F.col("value").cast("string").cast("binary").alias("key"),
                             F.to_json(F.struct("timestamp", "value")).cast("binary").alias("value"))
        seen.append(sum(row.rows for row in frame.mapInArrow(count_rows, "rows long").collect()))

    with tempfile.TemporaryDirectory() as checkpoint:
        query = (spark.readStream.format("rate").option("rowsPerSecond", 200).load()
                 .writeStream.foreachBatch(write).option("checkpointLocation", checkpoint)
                 .trigger(processingTime="500 milliseconds").start())
        while len(seen) < 3 and query.isActive:
            query.awaitTermination(0.5)
        query.stop()
    spark.stop()
    sys.exit(0 if len(seen) >= 3 else 1)


if __name__ == "__main__":
    main()
