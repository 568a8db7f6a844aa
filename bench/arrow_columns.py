"""What handing the output's columns to ``mapInArrow`` costs, per column shape and Arrow setting.

``python -m bench.arrow_columns [--rows N] [--repeat R]`` builds, in a local[1] Spark, rows shaped
like the Kafka source's after a transform (key, ~200-byte value, and a ``headers`` column in one of
several shapes), selects them as the writers do (:func:`~airflow_provider_eos.spark.record_producer.output_frame`),
and runs ``mapInArrow`` with a Python function that only counts rows (beside the same columns as the
source gives them, in the same run): what is measured is Spark's
Arrow conversion (JVM) and the Arrow stream to the Python worker, the part of the executor writers'
and the driver writer's spill path that does not depend on Kafka. Prints µs per row of wall time
and of CPU (the JVM and its Python workers), per shape and setting, interleaved ``--repeat`` times.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable, Iterator
from typing import Any

import psutil

#: How the headers column arrives at the writers, per input shape.
SHAPES = ("no headers column", "headers all null", "headers 1% set, rest null", "headers all set")
MAX_BYTES = "spark.sql.execution.arrow.maxBytesPerBatch"


def source(spark: Any, rows: int, shape: str) -> Any:
    from pyspark.sql import functions as F

    frame = spark.range(rows).select(
        F.concat(F.lit("user"), (F.col("id") % 97).cast("string")).cast("binary").alias("key"),
        F.concat(F.lit('{"id":"'), F.col("id").cast("string"), F.lit('","pad":"'), F.lit("x" * 170),
                 F.lit('"}')).cast("binary").alias("value"),
        F.col("id"),
    )
    header = F.array(F.struct(F.lit("trace").alias("key"), F.lit("abc").cast("binary").alias("value")))
    nothing = F.lit(None).cast("array<struct<key:string,value:binary>>")
    if shape == "no headers column":
        return frame.drop("id")
    if shape == "headers all null":
        return frame.select("key", "value", nothing.alias("headers"))
    if shape == "headers 1% set, rest null":
        return frame.select("key", "value", F.when(F.col("id") % 100 == 0, header).otherwise(nothing).alias("headers"))
    return frame.select("key", "value", header.alias("headers"))


def raw(frame: Any) -> Any:
    from pyspark.sql import functions as F

    return frame.select(F.col("key").cast("binary"), F.col("value").cast("binary"),
                        *(["headers"] if "headers" in frame.columns else []))


def count_rows(batches: Iterator[Any]) -> Iterator[Any]:
    import pyarrow as pa

    total = 0
    for batch in batches:
        total += batch.num_rows
    yield pa.RecordBatch.from_pydict({"rows": [total]})


def cpu_seconds(pid: int) -> float:
    """CPU of a process and all its descendants (the JVM and its Python workers)."""
    process = psutil.Process(pid)
    total = 0.0
    for p in [process, *process.children(recursive=True)]:
        try:
            times = p.cpu_times()
            total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


def measure(spark: Any, jvm_pid: int, frame_for: Callable[[], Any]) -> dict[str, float]:
    frame = frame_for()
    cpu, wall = cpu_seconds(jvm_pid), time.perf_counter()
    rows = sum(r.rows for r in frame.mapInArrow(count_rows, "rows long").collect())
    wall, cpu = time.perf_counter() - wall, cpu_seconds(jvm_pid) - cpu
    return {"rows": rows, "wall_us": wall / rows * 1e6, "cpu_us": cpu / rows * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", nargs="*", default=list(SHAPES))
    args = parser.parse_args()

    from pyspark.sql import SparkSession

    from airflow_provider_eos.spark.record_producer import output_frame

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "1g").getOrCreate())
    jvm_pid = next(p.pid for p in psutil.Process().children() if "java" in p.name())
    settings = {"Spark default": None, "maxBytesPerBatch=Int.MaxValue": "2147483647"}
    # The columns as the writers hand them over, beside the source's as they are (null headers for
    # records without any: what the writers handed over before output_frame made them empty arrays).
    selections: dict[str, Callable[[Any], Any]] = {"output_frame": output_frame, "as the source gives them": raw}
    results: dict[str, list[dict[str, float]]] = {}
    for _ in range(args.repeat + 1):  # the first round warms the JVM and the workers up, and is dropped
        for setting, value in settings.items():
            if value is None:
                spark.conf.unset(MAX_BYTES)
            else:
                spark.conf.set(MAX_BYTES, value)
            for shape in args.shapes:
                for selection, select in selections.items():
                    frame = select(source(spark, args.rows, shape))
                    result = measure(spark, jvm_pid, lambda frame=frame: frame)
                    results.setdefault(f"{shape} | {selection} | {setting}", []).append(result)
    table = {key: {"wall_us_per_row": round(statistics.median(r["wall_us"] for r in runs[1:]), 3),
                   "cpu_us_per_row": round(statistics.median(r["cpu_us"] for r in runs[1:]), 3)}
             for key, runs in results.items()}
    print(json.dumps({"rows": args.rows, "repeat": args.repeat, "results": table}, indent=1))
    spark.stop()


if __name__ == "__main__":
    main()
