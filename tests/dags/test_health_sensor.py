"""The health sensor inside ``dag.test()``, against the real broker (and, for ``wait_healthy``, the real job).

Each DAG runs in a child Python process (this module run as ``python -m
tests.dags.test_health_sensor <builder> <args> <result file>``), registered and run by
:mod:`tests.support.built_dags`; see that module for why a child process. ``dag.test()`` runs a
deferred task's trigger inline in Airflow 3.x ("running trigger in line"), so the sensor's
synchronous check, its deferral and the trigger's polling all run here.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from tests.support.built_dags import child_main, new_dag, start_in_airflow, task_log, watch_then_stop_dag
from tests.support.checkpointed_pipeline import LAST_COMMITTED, PARTITIONS, CheckpointedPipeline, checkpointed_pipeline
from tests.support.pipeline import PipelineHarness, json_events, kill_group, wait_for

pytestmark = [pytest.mark.airflow, pytest.mark.integration]


# -- the DAGs, built in the child process ----------------------------------------------------------


def build_wait_healthy(spec_path: str, ready_file: str):
    from airflow.sdk import task

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    @task
    def ready() -> None:
        # Tells the test to start the job now, so the sensor's first check precedes every commit.
        Path(ready_file).write_text("ready")

    with new_dag("eos_health") as dag:
        sensor = StreamingQueryHealthSensor(
            task_id="wait_healthy", spec_path=spec_path, watch="wait_healthy", poke_interval=3, timeout=480
        )
        ready() >> sensor
    return dag


def build_watch(spec_path: str):
    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    with new_dag("eos_health") as dag:
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


def build_watch_briefly(spec_path: str):
    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    with new_dag("eos_health") as dag:
        StreamingQueryHealthSensor(task_id="watch", spec_path=spec_path, watch="watch", poke_interval=1, timeout=15)
    return dag


def build_supervise_after_submit(spec_path: str):
    from airflow.sdk import task

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    @task
    def submit() -> None:
        """Stands for a pipeline DAG's submit: an available_now driver that found no new input and ended."""

    with new_dag("eos_health") as dag:
        # a pipeline DAG's supervise, with a timeout short enough to fail the test rather than the CI.
        sensor = StreamingQueryHealthSensor(
            task_id="supervise", spec_path=spec_path, watch="wait_healthy", poke_interval=2, timeout=45,
            driver_task_id="submit",
        )
        submit() >> sensor
    return dag


def build_supervise_after_input_arrived(spec_path: str):
    from airflow.sdk import task

    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    @task
    def submit(**context) -> None:
        """Stands for a pipeline DAG's submit: records the run's input as the operator does before spark-submit,
        then the driver finds nothing new and ends, and 5 records arrive per input partition after it ended."""
        import logging

        from confluent_kafka import Producer

        from airflow_provider_eos.core.spec import PipelineSpec
        from airflow_provider_eos.operators.run_input import record_run_input

        spec = PipelineSpec.load(spec_path)
        record_run_input(context["ti"], spec, logging.getLogger("submit"))
        producer = Producer({"bootstrap.servers": spec.kafka["bootstrap.servers"]})
        for n in range(10):
            producer.produce(spec.input_topics[0], value=b"late", partition=n % 2)
        assert producer.flush(30) == 0

    with new_dag("eos_health") as dag:
        # a pipeline DAG's supervise, with a timeout short enough to fail the test rather than the CI.
        sensor = StreamingQueryHealthSensor(
            task_id="supervise", spec_path=spec_path, watch="wait_healthy", poke_interval=2, timeout=45,
            driver_task_id="submit",
        )
        submit() >> sensor
    return dag


def build_watch_cannot_look(spec_path: str, token: str):
    # The watch's broker is unreachable for its principal.
    return watch_then_stop_dag(spec_path, "watched", token, timeout=60, kafka_connect_timeout_s=1)


# -- wait_healthy against the real job ----------------------------------------------------------


@pytest.mark.spark
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

    child = start_in_airflow(
        __name__, "wait_healthy", tmp_path, spec_path=str(harness.spec_file), ready_file=str(ready_file)
    )
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


def run_empty_batches(pipeline: CheckpointedPipeline, stop: threading.Event, interval_s: float = 0.7) -> None:
    """Play a job that keeps committing batches without ever reading the waiting input (a stuck
    group): plan, commit to Kafka, then commit to the checkpoint batch after batch, as the job
    does, each with batch 3's end offsets, so the offsets never move."""
    ends = pipeline.end_offsets(LAST_COMMITTED)
    line = json.dumps({pipeline.input_topic: {str(tp.partition): o for tp, o in ends.items()}}, separators=(",", ":"))
    batch = LAST_COMMITTED
    while not stop.wait(interval_s):
        batch += 1
        meta = json.dumps({"batchWatermarkMs": 0, "batchTimestampMs": int(time.time() * 1000), "conf": {}})
        _write_atomically(pipeline.checkpoint / "offsets" / str(batch), f"v1\n{meta}\n{line}")
        pipeline.commit_group(batch, offsets_of_batch=LAST_COMMITTED)
        _write_atomically(pipeline.checkpoint / "commits" / str(batch), 'v1\n{"nextBatchWatermarkMs":0}')


def _write_atomically(path: Path, text: str) -> None:
    # As Spark does (temporary file, then rename): a reader never sees half a batch file.
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


@pytest.fixture
def stuck(tmp_path: Path, bootstrap: str, topic_factory) -> CheckpointedPipeline:
    """A pipeline whose group committed batch 3 while 100 records wait in each input partition."""
    pipeline = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="eos", trigger="1 second")
    pipeline.commit_group(LAST_COMMITTED)
    pipeline.produce_input(dict.fromkeys(range(PARTITIONS), 100))
    return pipeline


def test_watch_fails_without_retrying_when_the_group_is_stuck(
    stuck: CheckpointedPipeline, tmp_path: Path, airflow_home: Path
) -> None:
    stop = threading.Event()
    batches = threading.Thread(target=run_empty_batches, args=(stuck, stop), daemon=True)
    batches.start()
    try:
        run = start_in_airflow(__name__, "watch", tmp_path, spec_path=str(stuck.spec_path)).finish(timeout_s=600)
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



def test_watch_gives_a_pipeline_started_after_a_long_downtime_its_first_batch(
    bootstrap: str, topic_factory, tmp_path: Path, airflow_home: Path
) -> None:
    # Down for an hour while 100 records per partition arrived (half an hour ago, by their timestamps):
    # the old run's last commit and the input waiting since make every sample UNHEALTHY by commit age
    # until the new driver commits, which watch_stream, started beside it, must wait for (up to the stop
    # threshold, 240 s here) instead of failing and so stopping it.
    stuck = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="eos", trigger="1 second")
    stuck.commit_group(LAST_COMMITTED)
    stuck.produce_input(dict.fromkeys(range(PARTITIONS), 100), created_s_ago=1800)
    stuck.age_commits(3600)
    run = start_in_airflow(__name__, "watch_briefly", tmp_path, spec_path=str(stuck.spec_path)).finish(timeout_s=300)

    assert run.states == {"watch": "success"}, run.log[-8000:]
    log = task_log(run, "watch")
    assert "UNHEALTHY [commit_age]" in log and "committed 1h" in log, log[-4000:]
    assert "Deferring: watching" in log and "running trigger in line" in log
    assert run.xcoms["watch"]["status"] == "UNHEALTHY"


def test_supervise_accepts_an_available_now_run_without_new_input(
    bootstrap: str, topic_factory, tmp_path: Path, airflow_home: Path
) -> None:
    # The previous run committed batch 3 and read all the input; this run's driver found nothing new,
    # committed no batch and succeeded. supervise used to wait for a commit after its start until its
    # timeout (600 s in the pipelines' DAGs), and the run failed although the pipeline was healthy.
    idle = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="eos")
    idle.commit_group(LAST_COMMITTED)
    idle.produce_input_of(LAST_COMMITTED)
    run = start_in_airflow(__name__, "supervise_after_submit", tmp_path,
                           spec_path=str(idle.spec_path)).finish(timeout_s=300)

    assert run.states == {"submit": "success", "supervise": "success"}, run.log[-8000:]
    log = task_log(run, "supervise")
    assert "the driver task succeeded and no input waits" in log, log[-4000:]
    report = run.xcoms["supervise"]
    assert report["status"] != "UNHEALTHY" and report["total_lag"] == 0 and report["last_committed"] == LAST_COMMITTED


def test_supervise_accepts_an_available_now_run_whose_input_arrived_after_it_ended(
    bootstrap: str, topic_factory, tmp_path: Path, airflow_home: Path
) -> None:
    # The previous run committed batch 3 an hour ago and read all the input; this run's driver found
    # nothing new and succeeded, and then input arrived. supervise compared the group with the live
    # end offsets (lag 5 per partition, and the hour-old commit with input waiting is UNHEALTHY by
    # commit age): it waited for a commit no run would make until its timeout (600 s in the pipelines' DAGs).
    idle = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="eos")
    idle.commit_group(LAST_COMMITTED)
    idle.produce_input_of(LAST_COMMITTED)
    idle.age_commits(3600)
    run = start_in_airflow(__name__, "supervise_after_input_arrived", tmp_path,
                           spec_path=str(idle.spec_path)).finish(timeout_s=300)

    assert run.states == {"submit": "success", "supervise": "success"}, run.log[-8000:]
    log = task_log(run, "supervise")
    assert "the group read all the run's input" in log and "input that arrived since is the next run's" in log, (
        log[-4000:])
    ends = idle.end_offsets(LAST_COMMITTED)
    assert all(f"{tp.topic}-{tp.partition}@{offset}" in log for tp, offset in ends.items()), log[-4000:]
    report = run.xcoms["supervise"]
    assert report["total_lag"] == 10 and report["last_committed"] == LAST_COMMITTED
    # The input waits only since it arrived, and no run is active: no commit-age finding holds against
    # it (design note 59); what this test proves is the run's input, read although lag is not zero.
    assert not [f for f in report["findings"] if f["status"] == "UNHEALTHY"], report["findings"]


def test_a_watch_that_cannot_reach_the_broker_does_not_stop_the_stream(tmp_path: Path, airflow_home: Path) -> None:
    # The health principal cannot reach the broker: watch_stream fails, but it saw nothing wrong with
    # the stream. stop_stream used to run on any failure of the watch and SIGTERM the healthy driver.
    import subprocess
    import sys
    import uuid

    token = f"eos-watch-test-{uuid.uuid4().hex[:8]}"
    spec = tmp_path / "specs" / "watched.json"
    spec.parent.mkdir()
    spec.write_text(json.dumps({
        "name": "watched", "kafka": {"bootstrap.servers": "127.0.0.1:1"}, "input_topics": ["in"],
        "output_topic": "out", "group_id": "watched-sink", "transactional_id_prefix": "watched",
        "checkpoint_location": str(tmp_path / "checkpoint"), "trigger": "5 seconds",
    }))
    # The running driver, as the process table sees it: a process carrying the run's token.
    driver = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                              env={**os.environ, "EOS_DRIVER_TOKEN": token})
    try:
        run = start_in_airflow(__name__, "watch_cannot_look", tmp_path, spec_path=str(spec),
                               token=token).finish(timeout_s=300)
        assert run.states == {"submit_stream": "success", "watch_stream": "failed", "stop_stream": "skipped"}, (
            run.log[-8000:])
        assert "no Kafka broker answered" in task_log(run, "watch_stream")
        assert "not unhealthy or driver_failed" in task_log(run, "stop_stream")
        assert driver.poll() is None, "the driver of a stream nobody found unhealthy was stopped"
    finally:
        driver.kill()
        driver.wait(30)


if __name__ == "__main__":
    child_main(globals())
