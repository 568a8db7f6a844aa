"""Driver RSS for one batch of ``batch`` and of ``10 x batch`` records, per writer (``python -m bench --only memory``).

Issue 10: the driver writer's driver RSS for a batch of 1,000,000 records must be within 20% of
that for 100,000. "Driver" is both processes of the submission's driver: the Python driver
(``eos_job.py``, where the sink runs) and spark-submit's JVM. Each is reported separately and as
their sum, on two masters:

* a Spark standalone cluster (two one-core workers, started by the bench, client deploy mode):
  the executors run in the workers' JVMs, so the figures are the driver's alone. The target is
  judged here: it is what a cluster's driver host must hold;
* ``local[2]``: the driver JVM also hosts the executors, so its figure includes Spark's own
  reading and the tasks' Arrow conversion and spill, which grow with the batch under any writer.

For each batch size an input topic holds exactly that many records and the spec's
``max_offsets_per_trigger`` is that size, so the available-now job runs one batch of it (Spark's
per-partition rounding of the limit may leave a record or two for a second, tiny batch). Three
jobs per size: the driver writer (``writers: driver``), the executor writers (``writers:
executors``) and Spark's at-least-once writer, the baseline whose driver collects nothing. A
sampler walks the job's process tree every 0.2 s and keeps the kernel's high-water mark
(``VmHWM``) of the Python driver and of the JVM (:class:`bench.process_tree.MemorySampler`).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from bench.job import DEFAULT_MASTER, Job
from bench.kafka_io import create_topics, delete_topics, produce, unique
from bench.measure import loadavg, log
from bench.records import bench_record
from bench.specs import AT_LEAST_ONCE, EXACTLY_ONCE, write_spec

PARTITIONS = 4
#: The large batch is this many times the small one: 100k and 1M records in a full run.
SCALE = 10
#: The issue's bound on the driver writer's growth from the small batch to the large one.
MAX_GROWTH = 1.2
#: What each run is: (label, mode, the spec's writers).
RUNS = (("driver", EXACTLY_ONCE, "driver"), ("executors", EXACTLY_ONCE, "executors"),
        ("at-least-once", AT_LEAST_ONCE, "auto"))


def _records(count: int) -> Iterator[tuple[bytes, bytes]]:
    # Generated while produced: the bench process does not hold a million records.
    return (bench_record(i) for i in range(count))


def _input(bootstrap: str, count: int) -> tuple[str, int]:
    topic = create_topics(bootstrap, [unique(f"bench-mem-{count}")], PARTITIONS)[0]
    produce(bootstrap, topic, _records(count))
    return topic, sum(len(k) + len(v) for k, v in _records(count))


def _one_job(bootstrap: str, work_dir: Path, source: str, batch: int, label: str, mode: str,
             writers: str, master: str) -> dict[str, Any]:
    name = unique(f"mem-{label[:4]}-{batch}")
    output = create_topics(bootstrap, [f"{name}-out"], PARTITIONS)[0]
    spec, spec_file = write_spec(work_dir, bootstrap, name=name, input_topics=[source], output_topic=output,
                                 max_offsets_per_trigger=batch, transaction_timeout_ms=180_000)
    spec_file.write_text(yaml.safe_dump(spec.with_overrides(writers=writers).to_dict()))
    load = loadavg()
    job = Job(spec_file, mode, work_dir / name / "job.log", master=master).start(sample_memory=True)
    code = job.wait(1800)
    progress = [p for _, p in job.progress()]
    batches = [p for _, p in job.tagged("EOS-BATCH")]
    delete_topics(bootstrap, [output])
    if code != 0 or not progress or sum(p.get("rows_in") or 0 for p in progress) != batch \
            or progress[0].get("rows_in", 0) < 0.99 * batch:
        raise RuntimeError(f"memory ({label}, {batch:,}): exit {code}, batches {progress}; log {job.log_path}\n"
                           f"{job.tail()}")
    peaks = job.memory.peaks_mb() if job.memory else {}
    if "driver_python" in peaks and "jvm" in peaks:
        peaks["total"] = round(peaks["driver_python"] + peaks["jvm"], 1)
    run = {"peak_rss_mb": peaks, "batch_ms": progress[0].get("batch_ms"), "loadavg_before": load,
           "batch_rows": [p.get("rows_in") for p in progress], "writers": writers, "master": master}
    if mode == EXACTLY_ONCE:
        run["sink_ms"] = {k: progress[0].get(k) for k in ("collect_ms", "produce_ms", "commit_ms")}
        run["sink_extra"] = batches[0].get("extra") if batches else None
    log(f"memory {label} on {master}, one batch of {batch:,}: peak RSS {peaks}, batch {run['batch_ms']} ms")
    return run


def _growth(small: dict[str, Any], large: dict[str, Any]) -> dict[str, float]:
    a, b = small["peak_rss_mb"], large["peak_rss_mb"]
    return {role: round(b[role] / a[role], 3) for role in ("driver_python", "jvm", "total")
            if a.get(role) and b.get(role)}


def run(bootstrap: str, work_dir: Path, *, batch: int, cluster_workers: int = 2) -> dict[str, Any]:
    """Both masters, each writer, both sizes; ``writers`` holds the cluster's figures (the target's basis)."""
    from airflow_provider_eos.devstack.spark_cluster import SparkCluster

    sizes = (batch, batch * SCALE)
    result: dict[str, Any] = {"batch_records": batch, "sizes": list(sizes), "partitions": PARTITIONS,
                              "max_growth": MAX_GROWTH, "cluster_workers": cluster_workers,
                              "writers": {}, "local_writers": {}}
    cluster = SparkCluster(work_dir / "memory-spark-cluster")
    try:
        masters = {"writers": cluster.up(workers=cluster_workers).master_url, "local_writers": DEFAULT_MASTER}
        result["masters"] = masters
        for size in sizes:
            source, size_bytes = _input(bootstrap, size)
            result.setdefault("batch_bytes_by_size", {})[str(size)] = size_bytes
            if size == batch:
                result["batch_bytes"] = size_bytes
            for key, master in masters.items():
                for label, mode, writers in RUNS:
                    measured = _one_job(bootstrap, work_dir, source, size, label, mode, writers, master)
                    result[key].setdefault(label, {})[str(size)] = measured
            delete_topics(bootstrap, [source])
    finally:
        cluster.down()
    for key in ("writers", "local_writers"):
        for label, by_size in result[key].items():
            by_size["growth"] = _growth(by_size[str(sizes[0])], by_size[str(sizes[1])])
            log(f"memory {label} ({key}): driver RSS {sizes[1]:,} / {sizes[0]:,} records = {by_size['growth']}")
    driver_total = result["writers"]["driver"]["growth"].get("total")
    result["driver_writer_within_bound"] = driver_total is not None and driver_total <= MAX_GROWTH
    # The report's table (one batch of `batch`): the driver writer and the at-least-once baseline.
    result[EXACTLY_ONCE] = result["writers"]["driver"][str(batch)]
    result[AT_LEAST_ONCE] = result["writers"]["at-least-once"][str(batch)]
    return result


def _table(by_writer: dict[str, Any], small: int, large: int) -> list[str]:
    out = ["| writer | records per batch | Python driver MB | driver JVM MB | sum MB | batch ms | load 1m |",
           "|---|---|---|---|---|---|---|"]
    for label, by_size in by_writer.items():
        for size in (small, large):
            r = by_size[str(size)]
            peaks = r["peak_rss_mb"]
            out.append(f"| {label} | {size:,} | {peaks.get('driver_python', '-')} | {peaks.get('jvm', '-')} | "
                       f"{peaks.get('total', '-')} | {r.get('batch_ms', '-')} | {r['loadavg_before']['1m']} |")
        g = by_size["growth"]
        out.append(f"| {label} | {large:,} / {small:,} | {g.get('driver_python', '-')}x | {g.get('jvm', '-')}x | "
                   f"{g.get('total', '-')}x | | |")
    return out


def markdown(result: dict[str, Any]) -> list[str]:
    """The scaling tables of :func:`run`'s result, for the bench report."""
    small, large = result["sizes"]
    masters = result.get("masters") or {}
    out = []
    if masters:
        out += [f"On a standalone cluster ({masters['writers']}, {result['cluster_workers']} one-core workers, "
                "client deploy mode): the driver's own processes, the executors run in the workers.", ""]
    out += _table(result["writers"], small, large)
    if result.get("local_writers"):
        out += ["", f"On `{masters.get('local_writers', DEFAULT_MASTER)}`: the driver JVM also hosts the executors "
                "(Spark's reading, the tasks' Arrow conversion and spill), so it grows with the batch under every "
                "writer, at-least-once included.", "", *_table(result["local_writers"], small, large)]
    verdict = "met" if result["driver_writer_within_bound"] else "missed"
    out += ["", f"Target (issue 10): the driver writer's driver RSS (Python + JVM) at {large:,} records within "
            f"{(result['max_growth'] - 1) * 100:.0f}% of that at {small:,}"
            + (" on the cluster" if masters else "") + f": {verdict} "
            f"({result['writers']['driver']['growth'].get('total')}x)."]
    return out
