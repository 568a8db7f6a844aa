"""Throughput on the same input: (a) raw transactional producer, (b) the job at-least-once, (c) exactly-once.

One input topic (``records`` records of about 200 bytes, 4 partitions) is produced once. Each
repetition runs a, b and c in turn (interleaved, so a load spike on the shared machine hits
all three alike), each into a fresh output topic; b and c also get a fresh checkpoint, group
and transactional id prefix. Output topics are deleted after each run.

* (a) is confluent-kafka's transactional producer with the sink's own producer config
  (:func:`sink_producer_config`: lz4, linger 20 ms, acks=all, idempotent, murmur2_random),
  producing the same records from Python lists in transactions of ``max_offsets_per_trigger``
  records: begin, produce, flush, commit (no ``send_offsets_to_transaction``). Timed from the
  first ``begin_transaction`` to the last commit; ``init_transactions`` is excluded.
* (b) and (c) are ``eos run`` with the identity transform and the available-now trigger. Their
  processing time is the sum of Spark's ``triggerExecution`` durations over all batches (from
  the ``EOS-PROGRESS`` lines), which excludes JVM startup, SparkSession creation and query
  start; the time from the first batch's start to the last batch's end is recorded too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from airflow_provider_eos.kafka.settings import sink_producer_config
from bench.common import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE,
    Job,
    bench_records,
    create_topics,
    delete_topics,
    end_offsets,
    loadavg,
    log,
    processing_time,
    produce,
    record_bytes,
    summarize,
    unique,
    write_spec,
)

PARTITIONS = 4
MODES = {"a": "raw transactional producer", "b": AT_LEAST_ONCE, "c": EXACTLY_ONCE}


@dataclass
class ThroughputInput:
    topic: str
    records: list[tuple[bytes, bytes]]
    bytes: int


def prepare_input(bootstrap: str, count: int) -> ThroughputInput:
    topic = create_topics(bootstrap, [unique("bench-tp-in")], PARTITIONS)[0]
    records = bench_records(count)
    started = time.perf_counter()
    produce(bootstrap, topic, records)
    log(f"throughput input: {count:,} records into {topic} in {time.perf_counter() - started:.1f}s")
    return ThroughputInput(topic, records, record_bytes(records))


def raw_producer(bootstrap: str, work_dir: Path, data: ThroughputInput, batch: int, rep: int) -> dict[str, Any]:
    """(a): the transactional producer alone, same records, same transaction size as the job's batches."""
    name = unique(f"tp-a{rep}")
    output = create_topics(bootstrap, [f"{name}-out"], PARTITIONS)[0]
    spec, _ = write_spec(work_dir, bootstrap, name=name, input_topics=[data.topic], output_topic=output,
                         max_offsets_per_trigger=batch)
    producer = Producer(sink_producer_config(spec))
    producer.init_transactions(30)
    keys = [k for k, _ in data.records]
    values = [v for _, v in data.records]
    load = loadavg()
    started = time.perf_counter()
    transactions = 0
    for start in range(0, len(values), batch):
        producer.begin_transaction()
        for i in range(start, min(start + batch, len(values))):
            while True:
                try:
                    producer.produce(output, value=values[i], key=keys[i])
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.flush(60)
        producer.commit_transaction(60)
        transactions += 1
    seconds = time.perf_counter() - started
    written = sum(end_offsets(bootstrap, output, PARTITIONS, committed=True).values())
    delete_topics(bootstrap, [output])
    # Each committed transaction adds one commit marker per partition it wrote to.
    if written < len(values):
        raise RuntimeError(f"raw producer: {written} offsets in {output}, expected >= {len(values)}")
    return {"seconds": round(seconds, 3), "records": len(values), "transactions": transactions,
            "loadavg_before": load}


def job_run(bootstrap: str, work_dir: Path, data: ThroughputInput, mode: str, batch: int, rep: int,
            timeout_s: float) -> dict[str, Any]:
    """(b) or (c): the job over the whole input topic, fresh checkpoint/group/output."""
    name = unique(f"tp-{'b' if mode == AT_LEAST_ONCE else 'c'}{rep}")
    output = create_topics(bootstrap, [f"{name}-out"], PARTITIONS)[0]
    _, spec_file = write_spec(work_dir, bootstrap, name=name, input_topics=[data.topic], output_topic=output,
                              max_offsets_per_trigger=batch)
    load = loadavg()
    job = Job(spec_file, mode, work_dir / name / "job.log").start(sample_memory=True)
    returncode = job.wait(timeout_s)
    wall = time.time() - job.started_at
    progress = job.progress()
    rows_in = sum(p.get("rows_in") or 0 for _, p in progress)
    if returncode != 0 or rows_in != len(data.records):
        raise RuntimeError(f"{mode} run {name}: exit {returncode}, rows_in {rows_in} of {len(data.records)}; "
                           f"log {job.log_path}\n{job.tail()}")
    timing = processing_time(progress)
    written = sum(end_offsets(bootstrap, output, PARTITIONS, committed=True).values())
    delete_topics(bootstrap, [output])
    if written < rows_in:
        raise RuntimeError(f"{mode} run {name}: {written} offsets in the output, expected >= {rows_in}")
    later = [p for _, p in progress[1:]]
    later_s = sum(p.get("batch_ms") or 0 for p in later) / 1000
    result: dict[str, Any] = {
        "seconds": timing["sum_trigger_s"], "first_to_last_s": timing["first_to_last_s"],
        "after_first_batch_records_per_s": round(sum(p.get("rows_in") or 0 for p in later) / later_s, 1)
        if later_s else None,
        "process_wall_s": round(wall, 1), "batches": len(progress), "records": rows_in,
        "batch_ms": summarize([p.get("batch_ms") or 0 for _, p in progress], 0),
        "peak_rss_mb": job.memory.peaks_mb() if job.memory else {}, "loadavg_before": load,
    }
    if mode == EXACTLY_ONCE:
        result["sink_ms_total"] = {k: sum(p.get(k) or 0 for _, p in progress)
                                   for k in ("collect_ms", "produce_ms", "commit_ms")}
        result["rows_out"] = sum(p.get("rows_out") or 0 for _, p in progress)
    return result


def run(bootstrap: str, work_dir: Path, *, records: int, batch: int, repetitions: int,
        data: ThroughputInput | None = None) -> tuple[dict[str, Any], ThroughputInput]:
    data = data or prepare_input(bootstrap, records)
    runs: dict[str, list[dict[str, Any]]] = {key: [] for key in MODES}
    timeout_s = 600 + records / 1000
    for rep in range(repetitions):
        for key in MODES:
            log(f"throughput rep {rep + 1}/{repetitions}: ({key}) {MODES[key]}")
            if key == "a":
                outcome = raw_producer(bootstrap, work_dir, data, batch, rep)
            else:
                outcome = job_run(bootstrap, work_dir, data, MODES[key], batch, rep, timeout_s)
            outcome["records_per_s"] = round(outcome["records"] / outcome["seconds"], 1)
            outcome["mb_per_s"] = round(data.bytes / outcome["seconds"] / 1e6, 3)
            runs[key].append(outcome)
            log(f"  ({key}) {outcome['records_per_s']:,.0f} rec/s, {outcome['mb_per_s']:.2f} MB/s over "
                f"{outcome['seconds']:.1f}s (load {outcome['loadavg_before']['1m']})")
    summary = {
        key: {"label": MODES[key],
              "records_per_s": summarize([r["records_per_s"] for r in items], 1),
              "mb_per_s": summarize([r["mb_per_s"] for r in items], 3),
              "seconds": summarize([r["seconds"] for r in items], 3),
              "runs": items}
        for key, items in runs.items()
    }

    def ratio(x: str, y: str) -> float:
        return round(summary[x]["records_per_s"]["median"] / summary[y]["records_per_s"]["median"], 3)

    result = {
        "input": {"topic_partitions": PARTITIONS, "records": len(data.records), "bytes": data.bytes,
                  "avg_record_bytes": round(data.bytes / len(data.records), 1), "max_offsets_per_trigger": batch},
        "timing_basis": "sum of Spark triggerExecution over all batches (EOS-PROGRESS batch_ms); "
                        "raw producer: first begin_transaction to last commit",
        "modes": summary,
        "ratios": {"c/b": ratio("c", "b"), "c/a": ratio("c", "a"), "b/a": ratio("b", "a")},
        # The runs of one repetition ran back to back under about the same load: their ratios pair them.
        "paired_ratios": {
            f"{x}/{y}": summarize([rx["records_per_s"] / ry["records_per_s"] for rx, ry in zip(runs[x], runs[y],
                                                                                                 strict=True)], 3)
            for x, y in (("c", "b"), ("c", "a"), ("b", "a"))
        },
    }
    return result, data
