"""End-to-end latency under a steady input rate with a processing-time trigger.

The job runs with ``trigger: "1 second"``. After a warm-up (a few records through the whole
path, so the transactional producer is initialised and the first batch is done), the bench
produces ``rate`` records/s for ``duration_s`` seconds. Each value starts with the wall-clock
time (``time.time_ns()``) taken right before its ``produce()`` call; a ``read_committed``
consumer of the output (assigned, ``fetch.wait.max.ms=50``) stamps each record when
``consume()`` returns it. Latency = receipt time - produce time, same host, same clock.

The measured modes (:data:`MODES`) are the delivery mode and, for exactly-once, the spec's
``writers``: the executor writers (c_e), the driver writer (c_d) and Spark's at-least-once
writer (b). Results from before the writers existed are keyed ``exactly-once`` (the driver writer).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Producer, TopicPartition

from bench.job import Job
from bench.kafka_io import create_topics, delete_topics, read_committed_consumer, unique
from bench.measure import loadavg, log, percentile, summarize
from bench.specs import write_spec

PARTITIONS = 4
_PAD = b"x" * 160
#: Latency mode name -> (``eos run --mode``, the spec's ``writers``, short name for topics and the chart).
MODES = {
    "exactly-once executors": ("exactly-once", "executors", "c_e"),
    "exactly-once driver": ("exactly-once", "driver", "c_d"),
    "at-least-once": ("at-least-once", "auto", "b"),
    # Before the writers: the exactly-once sink was the driver writer.
    "exactly-once": ("exactly-once", "auto", "c"),
}


def _value(kind: bytes, i: int) -> bytes:
    # 19-digit ns timestamp, kind (W warm-up, S steady), sequence: ~200 bytes in all.
    return b"%019d|%s|%08d|%s" % (time.time_ns(), kind, i, _PAD)


class _Reader(threading.Thread):
    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True, name="bench-latency-reader")
        self.consumer = read_committed_consumer(bootstrap, **{"fetch.wait.max.ms": 50})
        self.consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
        self.latencies_ms: list[tuple[int, float]] = []  # (sequence, latency)
        self.warm = 0
        self.stop_event = threading.Event()

    def run(self) -> None:
        try:
            while not self.stop_event.is_set():
                messages = self.consumer.consume(1000, 0.05)
                now = time.time_ns()
                for message in messages:
                    if message.error():
                        continue
                    value = message.value()
                    if value[20:21] == b"S":
                        self.latencies_ms.append((int(value[22:30]), (now - int(value[:19])) / 1e6))
                    else:
                        self.warm += 1
        finally:
            self.consumer.close()


def run(bootstrap: str, work_dir: Path, *, mode: str, rate: int, duration_s: int, batch: int,
        trigger_ms: int = 1000) -> dict[str, Any]:
    job_mode, writers, short = MODES[mode]
    name = unique(f"lat-{short.replace('_', '')}")
    source, output = create_topics(bootstrap, [f"{name}-in", f"{name}-out"], PARTITIONS)
    _, spec_file = write_spec(work_dir, bootstrap, name=name, input_topics=[source], output_topic=output,
                              trigger=f"{trigger_ms} milliseconds", max_offsets_per_trigger=batch, writers=writers)
    job = Job(spec_file, job_mode, work_dir / name / "job.log").start()
    reader = _Reader(bootstrap, output)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "enable.idempotence": True})
    try:
        if not job.wait_for("EOS-QUERY started", 240):
            raise RuntimeError(f"latency ({mode}): the query did not start; log {job.log_path}\n{job.tail()}")
        reader.start()
        warm_up = 20
        for i in range(warm_up):
            producer.produce(source, value=_value(b"W", i), key=b"w%02d" % i)
        producer.flush(30)
        deadline = time.monotonic() + 240
        while reader.warm < warm_up and time.monotonic() < deadline:
            time.sleep(0.1)
        if reader.warm < warm_up:
            raise RuntimeError(f"latency ({mode}): warm-up records never arrived; log {job.log_path}\n{job.tail()}")
        time.sleep(2)
        total = rate * duration_s
        load = loadavg()
        log(f"latency ({mode}): warm; producing {rate:,} rec/s for {duration_s}s (load {load['1m']})")
        started = time.monotonic()
        sent = 0
        while sent < total:
            due = min(total, int((time.monotonic() - started) * rate) + 1)
            while sent < due:
                producer.produce(source, value=_value(b"S", sent), key=b"k%03d" % (sent % 997))
                sent += 1
            producer.poll(0)
            time.sleep(0.002)
        produce_s = time.monotonic() - started
        producer.flush(30)
        deadline = time.monotonic() + 120
        while len(reader.latencies_ms) < total and time.monotonic() < deadline:
            time.sleep(0.2)
        received = len(reader.latencies_ms)
    finally:
        reader.stop_event.set()
        if reader.is_alive():
            reader.join(10)
        job.stop()
    progress = [p for _, p in job.progress()]
    sink_lines = {b.get("batch_id"): b for _, b in job.tagged("EOS-BATCH")}
    delete_topics(bootstrap, [source, output])
    if received < total:
        raise RuntimeError(f"latency ({mode}): {received} of {total} records arrived; log {job.log_path}")
    ordered = sorted(lat for _, lat in reader.latencies_ms)
    settle = rate * 5
    steady = sorted(lat for seq, lat in reader.latencies_ms if seq >= settle)
    steady_batches = [p for p in progress if (p.get("rows_in") or 0) > 0][2:]
    steady_sink = [sink_lines[p["batch_id"]] for p in steady_batches if p.get("batch_id") in sink_lines]

    def pct(values: list[float]) -> dict[str, float]:
        return {f"p{q}": round(percentile(values, q), 1) for q in (50, 95, 99)} | {
            "max": round(values[-1], 1), "mean": round(sum(values) / len(values), 1)}

    return {
        "mode": mode, "writers": writers if job_mode == "exactly-once" else None,
        "trigger_ms": trigger_ms, "rate_per_s": rate, "duration_s": duration_s,
        "achieved_rate_per_s": round(total / produce_s, 1), "records": total, "loadavg_before": load,
        "latency_ms": pct(ordered),
        "latency_ms_after_first_5s": pct(steady) if steady else None,
        "batches": len(steady_batches),
        "batch_ms": summarize([p.get("batch_ms") or 0 for p in steady_batches], 0),
        "batches_longer_than_trigger": round(
            sum((p.get("batch_ms") or 0) > trigger_ms for p in steady_batches) / max(1, len(steady_batches)), 3),
        "rows_per_batch": summarize([p.get("rows_in") or 0 for p in steady_batches], 0),
        "sink_ms_median": {k: summarize([p.get(k) or 0 for p in steady_batches], 0)["median"]
                           for k in ("collect_ms", "produce_ms", "commit_ms")} if job_mode == "exactly-once" else None,
        "tasks_ms_median": summarize([(b.get("extra") or {}).get("tasks_ms") or 0 for b in steady_sink], 0)["median"]
        if any("tasks_ms" in (b.get("extra") or {}) for b in steady_sink) else None,
    }
