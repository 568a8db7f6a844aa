"""Peak RSS of the job for exactly one batch of ``max_offsets_per_trigger`` records.

An input topic holds exactly ``batch`` records and the spec's ``max_offsets_per_trigger`` is
``batch``, so the available-now job runs one batch of that size (Spark's per-partition rounding
of the limit may leave a record or two for a second, tiny batch). A sampler walks the job's
process tree every 0.2 s and keeps the kernel's high-water mark (``VmHWM``) of the Python
driver (``eos_job.py``, where the exactly-once sink collects the batch as Arrow and produces
it) and of spark-submit's JVM (the driver JVM, which in local mode also runs the executors).
The at-least-once run is the baseline: its driver collects nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.common import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE,
    Job,
    bench_records,
    create_topics,
    delete_topics,
    loadavg,
    log,
    produce,
    record_bytes,
    unique,
    write_spec,
)

PARTITIONS = 4


def run(bootstrap: str, work_dir: Path, *, batch: int) -> dict[str, Any]:
    source = create_topics(bootstrap, [unique("bench-mem-in")], PARTITIONS)[0]
    records = bench_records(batch)
    produce(bootstrap, source, records)
    result: dict[str, Any] = {"batch_records": batch, "batch_bytes": record_bytes(records)}
    del records
    for mode in (EXACTLY_ONCE, AT_LEAST_ONCE):
        name = unique(f"mem-{'c' if mode == EXACTLY_ONCE else 'b'}")
        output = create_topics(bootstrap, [f"{name}-out"], PARTITIONS)[0]
        _, spec_file = write_spec(work_dir, bootstrap, name=name, input_topics=[source], output_topic=output,
                                  max_offsets_per_trigger=batch)
        load = loadavg()
        job = Job(spec_file, mode, work_dir / name / "job.log").start(sample_memory=True)
        code = job.wait(900)
        progress = [p for _, p in job.progress()]
        delete_topics(bootstrap, [output])
        if code != 0 or not progress or sum(p.get("rows_in") or 0 for p in progress) != batch \
                or progress[0].get("rows_in", 0) < 0.99 * batch:
            raise RuntimeError(f"memory ({mode}): exit {code}, batches {progress}; log {job.log_path}\n{job.tail()}")
        peaks = job.memory.peaks_mb() if job.memory else {}
        result[mode] = {"peak_rss_mb": peaks, "batch_ms": progress[0].get("batch_ms"), "loadavg_before": load,
                        "batch_rows": [p.get("rows_in") for p in progress],
                        "sink_ms": {k: progress[0].get(k) for k in ("collect_ms", "produce_ms", "commit_ms")}
                        if mode == EXACTLY_ONCE else None}
        log(f"memory ({mode}), one batch of {batch:,}: peak RSS {peaks}")
    delete_topics(bootstrap, [source])
    return result
