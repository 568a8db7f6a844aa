"""What a partition's transaction costs when its task lands on another Python worker than last batch.

Spark does not pin an input partition's task to a Python worker. The executor writers cache one
producer per transactional id in each worker; a task that finds the id last used by another worker
drops its own cached producer and creates a new one, whose ``init_transactions`` fences the other
worker's. ``python -m bench.producer_handover`` drives
:class:`~airflow_provider_eos.spark.transactional_producer.TransactionalProducer` as
:class:`~airflow_provider_eos.spark.partition_writer.PartitionWriteTask` does (begin, send the
offsets with the marker, produce ``--records`` records, flush, commit) against a real single-node
broker it starts, in two ways side by side per round:

* ``cached``: one worker holds the id batch after batch (its producer is reused);
* ``handover``: two workers alternate (every batch drops the cached producer and initialises a new one,
  as a task does when the other worker wrote the partition last).

It reports wall ms and CPU ms (this process, librdkafka's threads included) per batch, and the
share of a batch spent creating and initialising the producer.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer

from airflow_provider_eos.core.sink_protocol import offsets_to_commit
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.jars import KAFKA_VERSION, kafka_version_argument
from airflow_provider_eos.spark.transactional_producer import TransactionalProducer
from bench.kafka_io import create_topics, unique
from bench.records import bench_records
from bench.specs import PRODUCER_SETTINGS


def _batch(worker: TransactionalProducer, group: Consumer, spec: PipelineSpec, batch_id: int,
           records: list[tuple[bytes, bytes]]) -> dict[str, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    worker.producer()
    init_wall = time.perf_counter() - wall
    tp = TopicPartition(spec.input_topics[0], 0)
    with worker.transaction(batch_id) as producer:
        worker.send_offsets(producer, offsets_to_commit("bench-query", batch_id, {tp: (batch_id + 1) * len(records)}),
                            group.consumer_group_metadata())
        for key, value in records:
            producer.produce(spec.output_topic, value, key)
        producer.poll(0)
        worker.commit(producer, batch_id)
    return {"wall_ms": (time.perf_counter() - wall) * 1000, "cpu_ms": (time.process_time() - cpu) * 1000,
            "init_wall_ms": init_wall * 1000}


def measure(spec: PipelineSpec, records: list[tuple[bytes, bytes]], batches: int, rounds: int) -> dict[str, Any]:
    transactional_id = spec.partition_transactional_id(spec.input_topics[0], 0)
    group = Consumer({"bootstrap.servers": spec.kafka["bootstrap.servers"], "group.id": spec.group_id})
    samples: dict[str, list[dict[str, float]]] = {"cached": [], "handover": []}
    batch_id = 0
    for round_ in range(rounds + 1):  # round 0 warms the broker and this process up, and is dropped
        for mode in ("cached", "handover"):
            workers = [TransactionalProducer(spec, transactional_id, "bench-worker-a"),
                       TransactionalProducer(spec, transactional_id, "bench-worker-b")]
            for k in range(batches):
                worker = workers[0] if mode == "cached" else workers[k % 2]
                if mode == "handover":
                    worker.drop()  # what the task does: the id's last batch was not this worker's
                sample = _batch(worker, group, spec, batch_id, records)
                batch_id += 1
                if round_:
                    samples[mode].append(sample)
    group.close()
    out: dict[str, Any] = {}
    for mode, rows in samples.items():
        out[mode] = {key: round(statistics.median(r[key] for r in rows), 2) for key in rows[0]}
    out["handover_over_cached_wall"] = round(out["handover"]["wall_ms"] / out["cached"]["wall_ms"], 2)
    out["handover_over_cached_cpu"] = round(out["handover"]["cpu_ms"] / out["cached"]["cpu_ms"], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=25_000, help="records per batch (one task's share)")
    parser.add_argument("--batches", type=int, default=6, help="batches per mode and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, help="write the results JSON here")
    parser.add_argument("--kafka-version", type=kafka_version_argument, default=KAFKA_VERSION, metavar="X.Y.Z",
                        help=f"the broker's Kafka version (default {KAFKA_VERSION})")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="eos-bench-handover-") as state:
        kafka = LocalKafka(Path(state) / "kafka")
        bootstrap = kafka.up(stop_with_pid=os.getpid(), kafka_version=args.kafka_version).bootstrap_servers
        try:
            name = unique("handover")
            input_topic, output_topic = create_topics(bootstrap, [f"{name}-in", f"{name}-out"], 1)
            spec = PipelineSpec(name=name, kafka={"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS},
                                input_topics=[input_topic], output_topic=output_topic, group_id=f"{name}-group",
                                transactional_id_prefix=name, checkpoint_location=f"{state}/checkpoint")
            result = {"kafka": args.kafka_version, "records_per_batch": args.records, "batches": args.batches,
                      "rounds": args.rounds,
                      **measure(spec, bench_records(args.records), args.batches, args.rounds)}
        finally:
            kafka.down()
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
