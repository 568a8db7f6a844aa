"""Recovery after a SIGKILL in the middle of a batch, until output flows again.

Per repetition: fresh topics, ``records`` input records, the job (exactly-once, available-now,
``max_offsets_per_trigger=batch``) armed with the tests' fault plug-in (:mod:`tests.support.faults`)
and ``EOS_FAULT_INJECTION=after_produce@<kill_batch>``: after the
sink produced batch ``kill_batch`` and before it commits, the driver SIGKILLs its own process
group (spark-submit's JVM with it). The bench checks that the kill happened mid-transaction
(the fault report, and the output's last stable offset pinned below its high watermark).

Then the clock starts (the operator's restart): ``eos abort --force`` (fences the lingering
transaction), ``eos verify`` (must be IN_SYNC or KAFKA_AHEAD_SAFE), ``eos run``; it stops when
a ``read_committed`` consumer, positioned at the output's high watermarks at the kill, receives
the first new committed record (only the restart writes there). The restarted job then drains the
input and the bench checks the output is exactly once (no id lost, none duplicated).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from confluent_kafka import TopicPartition

from bench.job import Job, in_subprocess_env
from bench.kafka_io import create_topics, delete_topics, end_offsets, produce, read_committed_consumer, unique
from bench.measure import loadavg, log, summarize
from bench.records import bench_records
from bench.specs import EXACTLY_ONCE, write_spec
from tests.support.faults import arming_env

PARTITIONS = 4


def _eos(*args: str, timeout_s: float = 300) -> tuple[float, int, dict[str, Any]]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", *args, "--json"],
                            capture_output=True, text=True, timeout=timeout_s, env=in_subprocess_env(), check=False)
    seconds = time.perf_counter() - started
    try:
        data = json.loads(result.stdout)
    except json.JSONDecodeError:
        data = {"stdout": result.stdout[-2000:], "stderr": result.stderr[-2000:]}
    return seconds, result.returncode, data


def _output_ids(bootstrap: str, topic: str, expected: int, timeout_s: float = 120) -> Counter:
    consumer = read_committed_consumer(bootstrap)
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    ids: Counter = Counter()
    deadline = time.monotonic() + timeout_s
    idle_since = time.monotonic()
    try:
        while time.monotonic() < deadline:
            messages = consumer.consume(5000, 0.5)
            for message in messages:
                if not message.error():
                    ids[json.loads(message.value())["id"]] += 1
            if messages:
                idle_since = time.monotonic()
            elif sum(ids.values()) >= expected and time.monotonic() - idle_since > 2:
                break
    finally:
        consumer.close()
    return ids


def run_once(bootstrap: str, work_dir: Path, *, records: int, batch: int, kill_batch: int, rep: int) -> dict[str, Any]:
    name = unique(f"rec{rep}")
    source, output = create_topics(bootstrap, [f"{name}-in", f"{name}-out"], PARTITIONS)
    produce(bootstrap, source, bench_records(records))
    _, spec_file = write_spec(work_dir, bootstrap, name=name, input_topics=[source], output_topic=output,
                              max_offsets_per_trigger=batch)
    report = work_dir / name / "faults.txt"
    crashed = Job(spec_file, EXACTLY_ONCE, work_dir / name / "run-1.log",
                  env=arming_env(f"after_produce@{kill_batch}", report)).start()
    code = crashed.wait(600)
    fired = report.read_text() if report.exists() else ""
    lso = end_offsets(bootstrap, output, PARTITIONS, committed=True)
    hwm = end_offsets(bootstrap, output, PARTITIONS, committed=False)
    if "EOS-FAULT fired" not in fired or code not in (-9, 137):
        raise RuntimeError(f"recovery: the fault did not kill the job (exit {code}, report {fired!r}); "
                           f"log {crashed.log_path}\n{crashed.tail()}")
    pinned = any(lso[p] < hwm[p] for p in lso)
    reader = read_committed_consumer(bootstrap, **{"fetch.wait.max.ms": 50})
    # At the high watermark, not the LSO: with executor writers an output partition can hold a
    # committed transaction behind the open one that pins its LSO; the abort makes it visible, and
    # it is not output of the restart. Only the restart writes beyond the high watermark.
    reader.assign([TopicPartition(output, p, hwm[p]) for p in range(PARTITIONS)])
    reader.consume(1, 0.5)  # connect and fetch once before the clock starts: nothing is visible yet

    load = loadavg()
    log(f"recovery rep {rep + 1}: killed mid-batch {kill_batch} (LSO pinned: {pinned}); restarting "
        f"(load {load['1m']})")
    t0 = time.perf_counter()
    abort_s, abort_code, abort = _eos("abort", "--spec", str(spec_file), "--execute", "--force")
    verify_s, verify_code, verify = _eos("verify", "--spec", str(spec_file))
    if verify_code != 0:
        raise RuntimeError(f"recovery: eos verify said {verify.get('overall')} (exit {verify_code}): {verify}")
    restarted = Job(spec_file, EXACTLY_ONCE, work_dir / name / "run-2.log").start()
    t_job = time.perf_counter()
    first = None
    try:
        while first is None and time.perf_counter() - t_job < 600:
            if any(not m.error() for m in reader.consume(100, 0.1)):
                first = time.perf_counter()
            elif restarted.process is not None and restarted.process.poll() is not None:
                break
    finally:
        reader.close()
    if first is None:
        restarted.kill()
        raise RuntimeError(f"recovery: no new output after the restart; log {restarted.log_path}\n{restarted.tail()}")
    code = restarted.wait(600)
    first_batch = restarted.tagged("EOS-PROGRESS")
    query_started = restarted.first_line_time("EOS-QUERY started")
    ids = _output_ids(bootstrap, output, records)
    duplicates = sum(1 for n in ids.values() if n > 1)
    lost = records - len(ids)
    delete_topics(bootstrap, [source, output])
    if code != 0 or duplicates or lost:
        raise RuntimeError(f"recovery: after the restart exit {code}, {duplicates} duplicated and {lost} lost ids; "
                           f"log {restarted.log_path}")
    lingering = [row for row in abort.get("rows", []) if row.get("kind") == "lingering"]
    return {
        "seconds": round(first - t0, 2),
        "abort_s": round(abort_s, 2), "verify_s": round(verify_s, 2),
        "restart_to_first_output_s": round(first - t_job, 2),
        "query_started_after_s": round(query_started - restarted.started_at, 2) if query_started else None,
        "first_batch_ms": first_batch[0][1].get("batch_ms") if first_batch else None,
        "replayed_batch": first_batch[0][1].get("batch_id") if first_batch else None,
        "abort_exit": abort_code, "lingering_fenced": len(lingering), "verify_verdict": verify.get("overall"),
        "lso_pinned_before_restart": pinned, "exactly_once_after": True, "loadavg_before": load,
    }


def run(bootstrap: str, work_dir: Path, *, records: int, batch: int, kill_batch: int,
        repetitions: int) -> dict[str, Any]:
    runs = [run_once(bootstrap, work_dir, records=records, batch=batch, kill_batch=kill_batch, rep=rep)
            for rep in range(repetitions)]
    for r in runs:
        log(f"  recovery {r['seconds']:.1f}s (abort {r['abort_s']:.1f}s, verify {r['verify_s']:.1f}s, "
            f"restart->first output {r['restart_to_first_output_s']:.1f}s)")
    return {
        "records": records, "max_offsets_per_trigger": batch, "fault": f"after_produce@{kill_batch}",
        "seconds": summarize([r["seconds"] for r in runs], 2),
        "abort_s": summarize([r["abort_s"] for r in runs], 2),
        "verify_s": summarize([r["verify_s"] for r in runs], 2),
        "restart_to_first_output_s": summarize([r["restart_to_first_output_s"] for r in runs], 2),
        "runs": runs,
    }
