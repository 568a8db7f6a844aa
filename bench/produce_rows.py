"""The writers' Python produce loop alone: CPU µs per record of ``produce_rows`` per headers shape.

``python -m bench.produce_rows`` hands 10,000-row Arrow batches (key, 200-byte value, and a headers
column in the shapes the writers receive) to :func:`~airflow_provider_eos.spark.record_producer.produce_rows`
with a real confluent-kafka producer configured like the sink's (lz4, linger 20 ms) whose broker
does not answer, so the records stay in its local queue: what is measured is the Python loop and
librdkafka's enqueueing, not the network. Shapes interleaved, the first round dropped.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import pyarrow as pa
from confluent_kafka import Producer

from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.spark.record_producer import produce_rows

HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def shapes(rows: int) -> dict[str, pa.RecordBatch]:
    keys = [b"user%d" % (i % 97) for i in range(rows)]
    values = [b"x" * 200] * rows
    return {
        "no headers column": pa.RecordBatch.from_pydict({"key": keys, "value": values}),
        "headers, none set (empty arrays)": pa.RecordBatch.from_pydict(
            {"key": keys, "value": values, "headers": pa.array([[]] * rows, HEADERS_TYPE)}),
        "headers on every 10th record": pa.RecordBatch.from_pydict({"key": keys, "value": values, "headers": pa.array(
            [[{"key": "trace-id", "value": b"%016x" % i}] if i % 10 == 0 else [] for i in range(rows)], HEADERS_TYPE)}),
        "headers on every record": pa.RecordBatch.from_pydict({"key": keys, "value": values, "headers": pa.array(
            [[{"key": "trace-id", "value": b"%016x" % i}] for i in range(rows)], HEADERS_TYPE)}),
    }


def cpu_us_per_record(spec: PipelineSpec, rows: pa.RecordBatch, batches: int) -> float:
    producer = Producer({"bootstrap.servers": "127.0.0.1:1", "linger.ms": 20, "compression.type": "lz4",
                         "queue.buffering.max.messages": 2_000_000, "queue.buffering.max.kbytes": 2_000_000})
    started = time.process_time()
    for _ in range(batches):
        produce_rows(producer, spec, rows)
    return (time.process_time() - started) / (batches * rows.num_rows) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000, help="rows per Arrow batch (Spark's default)")
    parser.add_argument("--batches", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    spec = PipelineSpec(name="bench", kafka={"bootstrap.servers": "127.0.0.1:1"}, input_topics=["in"],
                        output_topic="out", group_id="g", transactional_id_prefix="t", checkpoint_location="/tmp/c")
    results: dict[str, list[float]] = {}
    for round_ in range(args.repeat + 1):
        for name, rows in shapes(args.rows).items():
            value = cpu_us_per_record(spec, rows, args.batches)
            if round_:
                results.setdefault(name, []).append(value)
    print(json.dumps({name: round(statistics.median(values), 3) for name, values in results.items()}, indent=1))


if __name__ == "__main__":
    main()
