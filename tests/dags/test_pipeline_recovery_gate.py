"""A pipeline DAG's recovery branch never acts on a live job (docs/architecture.md, recovery), in dag.test().

- pre-flight fails: nothing is stopped or aborted; a live producer's transaction under the
  prefix stays open and still commits;
- the watcher fails while the stream runs: the driver is stopped first, then recovery runs.
(A submit that fails after a crash recovers: tests/dags/test_dags.py.)
"""

from __future__ import annotations

import datetime as dt
import json
import time

import pytest
from confluent_kafka import Producer

from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from airflow_provider_eos.core.driver import DRIVER_TOKEN_ENV, driver_token
from tests.support.dag_runner import manual_run_id, run_dag
from tests.support.kafka import end_offsets
from tests.support.pipeline import PipelineHarness, json_events, kill_group, output_ids, wait_for

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

SPARK_LOCAL = {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"})}


def _open_transaction(bootstrap: str, transactional_id: str, topic: str) -> Producer:
    """A producer of the prefix holding one transaction open (a live writer of the pipeline)."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         "transaction.timeout.ms": 600_000})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(topic, b"in-flight", partition=0)
    assert producer.flush(30) == 0
    return producer


def test_failed_preflight_aborts_nothing_and_a_live_transaction_stays_open(airflow_home, bootstrap, tmp_path):
    (tmp_path / "pipeline").mkdir()
    harness = PipelineHarness(bootstrap, tmp_path / "pipeline")
    # A read_uncommitted source is a pre-flight error (EOS3xx): the run must stop there.
    harness.with_overrides(kafka={"bootstrap.servers": bootstrap, "isolation.level": "read_uncommitted"})
    live = _open_transaction(bootstrap, harness.spec.transactional_id(0), harness.output_topic)

    run = run_dag(pipeline_dag_id(harness.spec.name), {}, tmp_path / "run.json",
                  env={"EOS_SPECS_DIR": str(harness.spec_file.parent), **SPARK_LOCAL})

    assert run.state == "failed" and run.states["preflight"] == "failed", run.states
    assert "EOS301" in run.task_log("preflight"), "pre-flight failed for another reason than the source"
    for task in ("stop_stream", "confirm_driver_gone", "recover_abort", "recover_verify"):
        assert run.states[task] in {"skipped", "upstream_failed"}, (task, run.states)
    assert run.states["confirm_driver_gone"] == "skipped"
    assert "nothing for recovery to do" in run.task_log("confirm_driver_gone")
    lso = end_offsets(bootstrap, harness.output_topic, harness.partitions, committed=True)
    hwm = end_offsets(bootstrap, harness.output_topic, harness.partitions, committed=False)
    assert lso[0] < hwm[0], "the live transaction was aborted"
    live.commit_transaction(30)  # not fenced: its producer can still finish its work
    # The commit returns once the coordinator decided; the partition's marker follows (and the LSO with it).
    assert wait_for(lambda: end_offsets(bootstrap, harness.output_topic, harness.partitions,
                                        committed=True)[0] == hwm[0] + 1, 30)


@pytest.mark.spark
def test_watcher_failure_stops_the_driver_first_then_recovers(airflow_home, bootstrap, tmp_path):
    (tmp_path / "pipeline").mkdir()
    harness = PipelineHarness(bootstrap, tmp_path / "pipeline", trigger="2 seconds",
                              transaction_timeout_ms=20_000, max_offsets_per_trigger=200)
    records, _, _ = json_events(600)
    harness.produce_input(records)
    run_after = dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()
    token = driver_token(harness.spec.name, pipeline_dag_id(harness.spec.name), manual_run_id(run_after))
    # dag.test() runs one task at a time, so the streaming submit cannot run beside the watcher:
    # the test starts the real driver exactly as submit_stream would (tagged with the run's
    # token) and dag.test() marks the steps before the stream done.
    driver, log_path = harness.start(env_extra={DRIVER_TOKEN_ENV: token})
    zombie = None
    try:
        assert wait_for(lambda: harness.checkpoint().latest_committed_batch() is not None, 240), log_path.read_text()
        # A zombie writer of the prefix that outlives the lingering threshold turns the stream UNHEALTHY.
        zombie = _open_transaction(bootstrap, harness.spec.transactional_id(7), harness.output_topic)
        time.sleep(harness.spec.transaction_timeout_ms / 1000 + 2)

        run = run_dag(pipeline_dag_id(harness.spec.name), {}, tmp_path / "run.json",
                      env={"EOS_SPECS_DIR": str(harness.spec_file.parent), **SPARK_LOCAL}, run_after=run_after,
                      mark_success="preflight|abort_lingering|verify|submit_stream")

        assert run.states["watch_stream"] == "failed", run.states
        watched = run.xcoms["watch_stream"]
        assert watched["status"] == "UNHEALTHY" and harness.spec.transactional_id(7) in json.dumps(watched), (
            "the watch must have failed on the zombie writer")
        assert run.states["stop_stream"] == "success" and run.xcoms["stop_stream"]["liveness"] == "GONE"
        assert driver.wait(timeout=30) == 0, "SIGTERM first: the driver stopped its query cleanly"
        assert run.states["confirm_driver_gone"] == "success"
        assert run.ended("stop_stream") <= run.started("confirm_driver_gone") <= run.started("recover_abort")
        assert run.states["recover_abort"] == "success" and run.states["recover_verify"] == "success"
        aborted = {row["transactional_id"] for row in run.xcoms["recover_abort"]["rows"]}
        assert harness.spec.transactional_id(7) in aborted
        assert run.states["pipeline_failed"] == "failed" and run.state == "failed"
        visible = harness.output_values("read_committed")
        assert b"in-flight" not in visible, "the zombie's write became visible"
        committed = output_ids(visible)
        assert committed and max(committed.values()) == 1, "a batch was written twice"
    finally:
        kill_group(driver)
        del zombie
