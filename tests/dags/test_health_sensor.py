"""The health sensor inside ``dag.test()``, against the real broker (and, for ``wait_healthy``, the real job).

Each DAG runs in a child Python process (this module run as ``python -m
tests.dags.test_health_sensor <builder> <args> <result file>``), registered and run by
:func:`tests.dags.test_recovery_operators.run_dag`; see that module for why a child process.
``dag.test()`` runs a deferred task's trigger inline in Airflow 3.x ("running trigger in
line"), so the sensor's synchronous check, its deferral and the trigger's polling all run here.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.group_offsets import write_committed_offsets
from tests.dags.test_recovery_operators import REPO, Run, run_dag, task_log, wait_for_group_coordinator
from tests.support.checkpoints import batch_end_offsets, write_checkpoint
from tests.support.pipeline import PipelineHarness, json_events, kill_group, wait_for

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
PARTITIONS = 2
LAST_COMMITTED = 3


# -- running a DAG in a child process ------------------------------------------------------------


@dataclass
class Child:
    process: subprocess.Popen
    result: Path
    log: Path

    def finish(self, timeout_s: float) -> Run:
        try:
            self.process.wait(timeout_s)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(30)
        output = self.log.read_text(errors="replace")
        assert self.process.returncode == 0 and self.result.exists(), (
            f"dag.test() child: exit {self.process.returncode}\n{output[-8000:]}"
        )
        return Run(**json.loads(self.result.read_text()), log=output)


def start_in_airflow(builder: str, tmp_path: Path, **kwargs: Any) -> Child:
    """Start ``dag.test()`` of ``build_<builder>(**kwargs)`` in a child process; its output goes to a file."""
    name = uuid.uuid4().hex[:8]
    result, log = tmp_path / f"run-{name}.json", tmp_path / f"run-{name}.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", __name__, builder, json.dumps(kwargs), str(result)],
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Child(process, result, log)


def new_dag():
    from airflow.sdk import DAG

    return DAG(f"eos_health_{uuid.uuid4().hex[:10]}", schedule=None, start_date=START, catchup=False)


def build_wait_healthy(spec_path: str, ready_file: str):
    from airflow.sdk import task

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    @task
    def ready() -> None:
        # Tells the test to start the job now, so the sensor's first check precedes every commit.
        Path(ready_file).write_text("ready")

    with new_dag() as dag:
        sensor = StreamingQueryHealthSensor(
            task_id="wait_healthy", spec_path=spec_path, watch="wait_healthy", poke_interval=3, timeout=480
        )
        ready() >> sensor
    return dag


def build_watch(spec_path: str):
    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    with new_dag() as dag:
        StreamingQueryHealthSensor(
            task_id="watch",
            spec_path=spec_path,
            watch="{{ 'watch' }}",
            poke_interval=1,
            timeout=120,
            retries=2,
            retry_delay=dt.timedelta(seconds=0),
        )
    return dag


# -- wait_healthy against the real job ----------------------------------------------------------


def test_wait_healthy_succeeds_on_the_running_jobs_first_committed_batch(
    bootstrap: str, tmp_path: Path, airflow_home: Path
) -> None:
    harness = PipelineHarness(bootstrap, tmp_path, trigger="2 seconds")
    records, _, _ = json_events(200)
    harness.produce_input(records)
    ready_file = tmp_path / "ready"
    stop = threading.Event()

    def keep_producing() -> None:
        # A stateless query runs batches only for new input: keep some arriving so it commits.
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        n = 0
        while not stop.wait(0.5):
            producer.produce(harness.input_topic, key=b"u", value=json.dumps({"id": f"live{n}", "user": "u",
                                                                              "amount": 1.0}).encode())
            producer.flush(10)
            n += 1

    child = start_in_airflow("wait_healthy", tmp_path, spec_path=str(harness.spec_file), ready_file=str(ready_file))
    job = None
    producer = threading.Thread(target=keep_producing, daemon=True)
    try:
        assert wait_for(ready_file.exists, timeout_s=300), child.log.read_text()[-5000:]
        job, _ = harness.start()
        producer.start()
        run = child.finish(timeout_s=600)
    finally:
        stop.set()
        if job is not None:
            kill_group(job)
        if child.process.poll() is None:
            child.process.kill()

    assert run.states == {"ready": "success", "wait_healthy": "success"}, run.log[-8000:]
    log = task_log(run, "wait_healthy")
    # The first check saw no batch committed since the start, so the sensor deferred and the
    # trigger ran inline; it fired once the job had committed a batch.
    assert "Deferring: waiting for a healthy committed batch" in log
    assert "running trigger in line" in log
    report = run.xcoms["wait_healthy"]
    assert report["is_healthy"] is True and report["last_committed"] is not None
    assert report["verification"]["verdict"] in ("IN_SYNC", "KAFKA_AHEAD_SAFE")
    assert report["pipeline"] == harness.spec.name


# -- watch against a stuck group ---------------------------------------------------------------


@dataclass
class StuckPipeline:
    """A hand-made checkpoint and a sink group; :meth:`run_empty_batches` plays a job that keeps
    committing batches without ever reading the waiting input (a stuck group)."""

    spec_path: Path
    checkpoint: Path
    bootstrap: str
    input_topic: str
    group_id: str
    query_id: str

    def commit_group(self, batch: int, ends: dict[TopicPartition, int]) -> None:
        marker = BatchMarker(self.query_id, batch).encode()
        write_committed_offsets(
            AdminClient({"bootstrap.servers": self.bootstrap}),
            self.group_id,
            {tp: (offset, marker) for tp, offset in ends.items()},
        )

    def run_empty_batches(self, stop: threading.Event, interval_s: float = 0.7) -> None:
        """Plan, commit to Kafka, then commit to the checkpoint batch after batch, as the job
        does, each with batch 3's end offsets: the offsets never move."""
        ends = batch_end_offsets(self.input_topic, LAST_COMMITTED, PARTITIONS)
        line = json.dumps({self.input_topic: {str(tp.partition): o for tp, o in ends.items()}}, separators=(",", ":"))
        batch = LAST_COMMITTED
        while not stop.wait(interval_s):
            batch += 1
            meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": int(time.time() * 1000), "conf": {}})
            _write_atomically(self.checkpoint / "offsets" / str(batch), f"v1\n{meta}\n{line}")
            self.commit_group(batch, ends)
            _write_atomically(self.checkpoint / "commits" / str(batch), 'v1\n{"nextBatchWatermarkMs":0}')


def _write_atomically(path: Path, text: str) -> None:
    # As Spark does (temporary file, then rename): a reader never sees half a batch file.
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


@pytest.fixture
def stuck(tmp_path: Path, bootstrap: str, topic_factory) -> StuckPipeline:
    input_topic = topic_factory("eos-in", partitions=PARTITIONS)
    wait_for_group_coordinator(bootstrap, input_topic)
    output_topic = topic_factory("eos-out", partitions=PARTITIONS)
    name = f"p{uuid.uuid4().hex[:8]}"
    query_id = str(uuid.uuid4())
    checkpoint = write_checkpoint(
        tmp_path / "checkpoints" / name,
        topic=input_topic,
        partitions=PARTITIONS,
        query_id=query_id,
        offsets=range(LAST_COMMITTED + 1),
        commits=range(LAST_COMMITTED + 1),
    )
    spec = {
        "name": name,
        "kafka": {"bootstrap.servers": bootstrap},
        "input_topics": [input_topic],
        "output_topic": output_topic,
        "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos",
        "checkpoint_location": str(checkpoint),
        "trigger": "1 second",
        "transaction_timeout_ms": 60000,
    }
    spec_path = tmp_path / f"{name}.json"
    spec_path.write_text(json.dumps(spec))
    pipeline = StuckPipeline(spec_path, checkpoint, bootstrap, input_topic, spec["group_id"], query_id)
    pipeline.commit_group(LAST_COMMITTED, batch_end_offsets(input_topic, LAST_COMMITTED, PARTITIONS))
    producer = Producer({"bootstrap.servers": bootstrap})
    for partition in range(PARTITIONS):
        for i in range(100):
            producer.produce(input_topic, value=f"waiting-{i}".encode(), partition=partition)
    assert producer.flush(30) == 0
    return pipeline


def test_watch_fails_without_retrying_when_the_group_is_stuck(
    stuck: StuckPipeline, tmp_path: Path, airflow_home: Path
) -> None:
    stop = threading.Event()
    batches = threading.Thread(target=stuck.run_empty_batches, args=(stop,), daemon=True)
    batches.start()
    try:
        run = start_in_airflow("watch", tmp_path, spec_path=str(stuck.spec_path)).finish(timeout_s=600)
    finally:
        stop.set()
        batches.join(10)

    assert run.states == {"watch": "failed"}, run.log[-8000:]
    assert run.tries["watch"] == 1  # AirflowFailException: retrying cannot unstick the group
    log = task_log(run, "watch")
    # One sample cannot show a trend, so the first check deferred; the trigger's window did.
    assert "Deferring: watching" in log and "running trigger in line" in log
    assert "AirflowFailException" in log and "is UNHEALTHY" in log
    assert "STALL" in log and "offset stays at 40" in log
    report = run.xcoms["watch"]
    assert report["status"] == "UNHEALTHY" and report["samples"] >= 3
    assert {row["partition"]: row["status"] for row in report["partitions"]} == {0: "STALL", 1: "STALL"}
    # The job-like writer kept the checkpoint and the group in step: only the lag rule fires.
    assert report["verification"]["verdict"] in ("IN_SYNC", "KAFKA_AHEAD_SAFE", None)
    assert run.rendered["watch"]["watch"] == "watch"


if __name__ == "__main__":
    # The child process: python -m tests.dags.test_health_sensor BUILDER ARGS RESULT
    builder, arguments, result_path = sys.argv[1:]
    outcome = run_dag(globals()[f"build_{builder}"](**json.loads(arguments)))
    Path(result_path).write_text(json.dumps(outcome, default=str))
