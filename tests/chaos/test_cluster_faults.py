"""Faults on the Spark standalone cluster: a worker host crashes mid-batch, its executor is lost,
the task holding an open transaction is rescheduled on the other worker; the worker comes back."""

from __future__ import annotations

import json
import re
from pathlib import Path

import psutil
import pytest

from tests.integration.test_executor_writers import task_lines
from tests.support.pipeline import (
    JobResult,
    PipelineHarness,
    assert_exactly_once,
    json_events,
    kill_group,
    output_ids,
    wait_for,
)

pytestmark = [pytest.mark.integration, pytest.mark.spark, pytest.mark.chaos]

FAULT_BATCH = 1
_STALLED_WORKER = re.compile(r"EOS-FAULT fired: task_stall batch \d+ partition \d+, stalling \d+s in Python worker "
                             r"(\d+)")


def _events(folder: Path, kind: str) -> list[dict]:
    # Spark 4 writes a rolling event log: a folder of event files.
    return [json.loads(line) for log in folder.rglob("events_*") for line in log.read_text().splitlines()
            if f'"{kind}"' in line]


def _worker_of(python_pid: int, worker_pids: list[int]) -> int:
    """The index of the worker whose process tree (worker JVM -> executor JVM -> PySpark daemon) holds the pid."""
    ancestors = {parent.pid for parent in psutil.Process(python_pid).parents()}
    found = [i for i, pid in enumerate(worker_pids) if pid in ancestors]
    assert len(found) == 1, f"Python worker {python_pid} descends from {sorted(ancestors)}, workers {worker_pids}"
    return found[0]


def test_a_worker_killed_mid_batch_with_a_transaction_open(bootstrap, tmp_path, spark_standalone):
    """A task of batch 1 stalls with its rows produced and its transaction open; the worker host that
    runs it is SIGKILLed (worker JVM, executor, Python worker). Spark loses the executor and reruns
    the task on the other worker, whose init_transactions aborts the open transaction; the worker is
    restarted. Output exact; the event log shows tasks on both workers and the executor's loss."""
    events = tmp_path / "spark-events"
    events.mkdir()
    # The Python writer: the stalled task's Python worker names the worker host to kill.
    harness = PipelineHarness(bootstrap, tmp_path, writers="executors", executor_writer="python", partitions=4,
                              max_offsets_per_trigger=800, master=spark_standalone.master_url)
    harness.with_overrides(spark_conf={
        **harness.spec.spark_conf, "spark.executor.memory": "512m", "spark.cores.max": "2",
        "spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(), "spark.eventLog.compress": "false",
    })
    records, valid_ids, malformed = json_events(6000, malformed_every=53)
    harness.produce_input(records, aborted_every=5)

    process, log_path = harness.start(fault=f"task_stall@{FAULT_BATCH}:0")
    faults = log_path.with_suffix(".faults")
    killed = None
    try:
        assert wait_for(lambda: faults.exists() and _STALLED_WORKER.search(faults.read_text()), 240), \
            log_path.read_text(errors="replace")[-3000:]
        stalled = int(_STALLED_WORKER.search(faults.read_text()).group(1))
        worker_pids = spark_standalone.info.pids("worker")
        killed = _worker_of(stalled, worker_pids)
        spark_standalone.kill_worker(killed)
        returncode = process.wait(420)
    finally:
        kill_group(process)
        if killed is not None:
            spark_standalone.restart_worker(killed)
    log = log_path.read_text(errors="replace") + faults.read_text()
    assert returncode == 0, log[-3000:]
    assert_exactly_once(harness, valid_ids, malformed)
    # The killed attempt's rows were produced: aborted, so only read_uncommitted sees them twice.
    assert max(output_ids(harness.output_values("read_uncommitted")).values()) == 2, "the fault did not hit"
    winner = [t for t in task_lines(JobResult(returncode, log)) if (t["batch_id"], t["partition"]) == (FAULT_BATCH, 0)]
    assert len(winner) == 1 and winner[0]["action"] == "produce" and winner[0]["attempt"] >= 1, winner

    started = _events(events, "SparkListenerTaskStart")
    assert {e["Task Info"]["Host"] for e in started} == {"127.0.0.1", "localhost"}, "tasks ran on one worker only"
    removed = _events(events, "SparkListenerExecutorRemoved")
    assert removed, "Spark lost no executor"
    assert any("lost" in e.get("Removed Reason", "").lower() or "disassociated" in e.get("Removed Reason", "").lower()
               or "exited" in e.get("Removed Reason", "").lower() for e in removed), removed
    # The worker is back under a new pid (restart_worker waited for the master to list it ALIVE).
    assert spark_standalone.info.pids("worker")[killed] not in worker_pids
