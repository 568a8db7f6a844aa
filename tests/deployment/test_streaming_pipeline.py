"""The pipeline DAG as deployed: a processing-time pipeline streams while it is watched from the triggerer.

On the shared Airflow deployment, through its REST API only. One pipeline, two runs:

1. ``submit_stream`` runs the driver while ``watch_stream`` waits ``deferred`` (its trigger runs in
   the triggerer); the output is exact. Meanwhile another pipeline's run starts on its own DAG: a
   stream (its run lasts for days) holds no other pipeline back. The driver is SIGKILLed: the run
   fails with its reason, and the recovery branch (only once the driver is positively gone) aborts
   and verifies.
2. A new run resumes exactly once. ``submit_stream`` is cleared (what "Clear" in the UI sends): the
   driver stops between batches on SIGTERM and the new attempt resumes exactly once, without two
   drivers at a time. Then it is marked failed: the driver stops cleanly again, recovery runs, and
   the output is still exact.

(A third run resuming after "mark failed" proves what the second run's start and the cleared attempt
already prove: a resume after recovery, and a resume after a clean stop.)
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from airflow_provider_eos.spark.driver_processes import observe
from tests.deployment.conftest import deploy_spec
from tests.support.airflow_api import AirflowApi
from tests.support.deployed_stream import DeployedStream
from tests.support.pipeline import PipelineHarness, output_ids, wait_for

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.spark, pytest.mark.deployment,
              pytest.mark.chaos]

RECOVERY = ("confirm_driver_gone", "recover_abort", "recover_verify")


class Stream(DeployedStream):
    """The pipeline under test: its input so far and what the output must be."""

    def driver_pids(self, run_id: str) -> list[int]:
        return [process.pid for process in observe(self.driver(run_id)).processes]


@pytest.fixture
def stream(tmp_path: Path, bootstrap: str, airflow_deployment: AirflowDeploymentInfo,
           airflow_api: AirflowApi) -> Iterator[Stream]:
    harness = PipelineHarness(bootstrap, tmp_path, partitions=2, max_offsets_per_trigger=400,
                              trigger="2 seconds", writers="driver")
    deployed = deploy_spec(airflow_deployment, harness.spec_file, airflow_api, harness.spec.name,
                           dag_ids=(pipeline_dag_id(harness.spec.name),))
    made = Stream(harness, airflow_api)
    try:
        yield made
    finally:
        made.stop_everything()
        deployed.unlink(missing_ok=True)


def _recovered(stream: Stream, run_id: str) -> dict[str, str | None]:
    api = stream.api
    states = api.task_states(stream.dag, run_id)
    assert all(states[task] == "success" for task in RECOVERY), states
    assert api.xcom(stream.dag, run_id, "recover_verify")["overall"] in ("IN_SYNC", "KAFKA_AHEAD_SAFE")
    return states


def _another_pipeline_starts_while_it_streams(stream: Stream, streaming_run: str,
                                              deployment: AirflowDeploymentInfo, folder: Path) -> None:
    """A second pipeline, triggered while ``streaming_run`` streams, leaves ``queued`` and runs its first task.

    With one DAG for every pipeline (``max_active_runs=1``) its run stayed queued as long as the stream
    ran (days). Its input topic does not exist, so its pre-flight fails (EOS205) and its run ends
    without starting Spark: whether it fails or succeeds does not matter here, only that it started.
    """
    api, name = stream.api, f"{stream.harness.spec.name}_other"
    other = stream.harness.spec.with_overrides(
        name=name, input_topics=[f"{name}-missing-in"], group_id=f"{name}-sink",
        transactional_id_prefix=f"{name}-txn", checkpoint_location=str(folder / "checkpoint"))
    spec_file = folder / "spec.yaml"
    spec_file.write_text(yaml.safe_dump(other.to_dict()))
    deployed = deploy_spec(deployment, spec_file, api, name, dag_ids=(pipeline_dag_id(name),))
    dag = pipeline_dag_id(name)
    try:
        run_id = api.trigger(dag, {})
        started = {"running", "success", "failed", "up_for_retry"}
        assert wait_for(lambda: api.task_states(dag, run_id).get("preflight") in started, 120, interval_s=1), \
            f"the other pipeline's run is {api.run(dag, run_id)['state']}: {api.task_states(dag, run_id)}"
        assert api.run(dag, run_id)["state"] != "queued"
        # ... while the first pipeline's stream still runs: its run held nothing back.
        assert api.run(stream.dag, streaming_run)["state"] == "running"
        assert api.task_instance(stream.dag, streaming_run, "submit_stream")["state"] == "running"
        api.wait_for_run(dag, run_id, timeout_s=240)  # ended (its pre-flight refuses the missing topic)
        # The pipelines view reads the run from the pipeline's own DAG and links that DAG.
        (row,) = [row for row in api.pipelines_view_rows() if row["pipeline"] == name]
        assert row["dag_path"] == f"/dags/{dag}", row
        assert [(run["dag_id"], run["run_id"]) for run in row["pipeline_runs"]] == [(dag, run_id)], row
    finally:
        deployed.unlink(missing_ok=True)


@pytest.mark.long  # ~4-5 min; CI: the Celery deployment's cross-worker test kills, marks failed and recovers a stream
def test_streaming_run_sigkill_clear_and_mark_failed_stay_exactly_once(
        stream: Stream, airflow_api: AirflowApi, airflow_deployment: AirflowDeploymentInfo, tmp_path: Path) -> None:
    api, dag = airflow_api, stream.dag
    stream.produce(1200)

    # 1. Streaming, watched from the triggerer; another pipeline starts meanwhile; then the driver host crashes.
    first = stream.start_run()
    (tmp_path / "other").mkdir()
    _another_pipeline_starts_while_it_streams(stream, first, airflow_deployment, tmp_path / "other")
    stream.wait_exact()
    stream.produce(800)
    handle = stream.driver(first)
    processes = observe(handle).processes
    assert any(p.is_python_driver for p in processes), processes
    for process in processes:
        os.kill(process.pid, signal.SIGKILL)

    assert api.wait_for_run(dag, first, timeout_s=300) == "failed"
    states = _recovered(stream, first)
    assert states["submit_stream"] == "failed" and states["pipeline_failed"] == "failed", states
    assert "The pipeline failed" in api.task_log(dag, first, "pipeline_failed")

    # 2. A new run resumes exactly once; a cleared driver task stops its driver between batches.
    second = stream.start_run()
    stream.wait_exact()
    stream.produce(800)
    handle = stream.driver(second)  # one token per run: both attempts' processes carry it
    earlier = {p.pid for p in observe(handle).processes}
    api.clear_task(dag, second, "submit_stream")
    stream.wait_streaming(second, try_number=2)
    now = observe(handle).processes
    assert not earlier & {p.pid for p in now}, "the first attempt's driver outlived the start of the second"
    assert wait_for(lambda: any(p.is_python_driver for p in observe(handle).processes), 120)
    drivers = [p for p in observe(handle).processes if p.is_python_driver]
    assert len(drivers) == 1, f"two drivers of one run: {drivers}"
    first_attempt = api.task_log(dag, second, "submit_stream", try_number=1)
    assert "EOS-QUERY SIGTERM" in first_attempt, first_attempt[-4000:]
    stream.wait_exact()

    # Marked failed in the UI: SIGTERM again, then the recovery branch; the run ends failed.
    written = set(stream.valid)  # all in the output, once (wait_exact above)
    stream.produce(600)
    api.set_task_state(dag, second, "submit_stream", "failed")
    assert api.wait_for_run(dag, second, timeout_s=300) == "failed"
    _recovered(stream, second)
    # The killed attempt's log is complete once Airflow has written what the task read before its end.
    killed_log = ""

    def announced() -> bool:
        nonlocal killed_log
        killed_log = api.task_log(dag, second, "submit_stream", try_number=2)
        return "EOS-QUERY SIGTERM" in killed_log

    assert wait_for(announced, 30, interval_s=2), killed_log[-4000:]
    # What the stopped driver committed before its clean stop is there once; what it had not read waits.
    seen = output_ids(stream.harness.output_values())
    assert not {k: v for k, v in seen.items() if v > 1} and written <= set(seen) <= set(stream.valid), len(seen)
