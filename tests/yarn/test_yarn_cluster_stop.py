"""YARN cluster deploy mode: a retried submit does not start a second driver, and stop_stream kills the application.

The shared MiniYARNCluster, the real submit operator (the Spark provider follows the application
through the ResourceManager) and the real stop_stream operator, as the pipeline DAG runs them.
The run's first try runs its driver (the application master) while a second try of the same run
starts: it waits for the earlier driver (its lease on HDFS and the ResourceManager see it from any
worker) and refuses, submitting nothing. Then stop_stream, from a worker whose process table
cannot see the driver, kills the application found by its driver-token tag and finds it gone.
Throughout, a secret the DAG author passes in ``env_vars`` reaches the driver's environment and no
process's command line (the Spark provider would put it there as ``spark.yarn.appMasterEnv``).
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver import DRIVER_XCOM_KEY, EvidenceSource, Liveness
from airflow_provider_eos.devstack.yarn import YarnClusterInfo
from tests.support.pipeline import json_events, wait_for
from tests.support.secret_leaks import ProcessSampler
from tests.support.yarn_cluster import FINAL_STATES, application, kill, wait_for_state
from tests.support.yarn_submit import RunningSubmit, hdfs_harness, submit_operator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

RUN_ID = "manual__yarn_stop"


def _tagged(info: YarnClusterInfo, token: str) -> list[dict]:
    """The applications the ResourceManager lists under the run's driver token."""
    query = urllib.parse.urlencode({"applicationTags": token})
    with urllib.request.urlopen(f"{info.resourcemanager_url}/ws/v1/cluster/apps?{query}", timeout=10) as response:
        return (json.load(response)["apps"] or {}).get("app", [])


class _PipelineRun:
    """The DAG run's task instance as stop_stream reads it: the submit task's ``driver`` XCom."""

    dag_id = "eos_yarn"

    def __init__(self, driver: dict[str, Any]) -> None:
        self.driver = driver

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        return self.driver if key == DRIVER_XCOM_KEY and task_ids == "submit_stream" else None


def test_a_retry_waits_for_the_earlier_cluster_mode_driver_and_stop_stream_kills_its_application(
    on_yarn: YarnClusterInfo, bootstrap: str, tmp_path: Path
) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    from airflow_provider_eos.operators.driver import StopPipelineDriverOperator

    harness = hdfs_harness(bootstrap, tmp_path, on_yarn, trigger="5 seconds", max_offsets_per_trigger=100)
    harness.with_overrides(driver_lease_ttl_s=6)
    records, _, _ = json_events(3000, prefix=f"s{uuid.uuid4().hex[:4]}-")
    harness.produce_input(records)
    secret = f"aws-secret-{uuid.uuid4().hex}"
    # Every process's command line and environment, from before spark-submit starts until the application is gone.
    with ProcessSampler([secret], interval_s=0.5) as sampler:
        first = RunningSubmit(submit_operator(harness, on_yarn, env_vars={"AWS_SECRET_ACCESS_KEY": secret}), RUN_ID,
                              on_yarn)
        checkpoint = CheckpointReader(harness.spec.checkpoint_location)
        app_id = first.application_id()
        stray: list[str] = []
        try:
            first.first_commit(checkpoint, app_id)
            token = first.operator._driver.token

            # The run's next try (same run, same token), in its own task thread: it waits for the earlier driver,
            # then refuses. Without the wait it would submit a second application and follow it: seen at once, below.
            retry_operator = submit_operator(harness, on_yarn)
            retry_operator.previous_driver_wait_s = 5  # at run time ttl + 25 s = 31 s, so the lease could expire
            began = time.monotonic()
            retry = RunningSubmit(retry_operator, RUN_ID, on_yarn)

            def second_application() -> list[str]:
                return [app["id"] for app in _tagged(on_yarn, token) if app["id"] != app_id]

            wait_for(lambda: not retry.thread.is_alive() or second_application(), 150, interval_s=1)
            stray = second_application()
            assert not stray, f"the retry submitted a second application beside {app_id}: {stray}"
            retry.thread.join(30)
            waited = time.monotonic() - began
            assert not retry.thread.is_alive() and retry.failure, "the retry neither refused nor ended"
            assert isinstance(retry.failure[0], AirflowFailException), retry.failure[0]
            assert "refusing to start a second driver" in str(retry.failure[0]), retry.failure[0]
            # The wait polls every 2 s and stops before a delay that would pass its 31 s, so it may end a poll
            # early (29.4 s measured under load); a retry that did not wait refuses within seconds.
            assert waited >= 25, f"the retry refused after {waited:.0f}s, without waiting for the earlier driver"
            assert application(on_yarn, app_id)["state"] == "RUNNING"

            # stop_stream, as the DAG runs it after an unhealthy watch: the driver's record from the submit task's
            # XCom.
            stop = StopPipelineDriverOperator(task_id="stop_stream", spec_path=str(harness.spec_file),
                                              submit_task_ids=["submit_stream"], grace_period_s=30)
            driver = first.operator._driver.model_dump(mode="json")
            stopped_at = time.monotonic()
            seen = stop.execute({"ti": _PipelineRun(driver), "run_id": RUN_ID})
            took = time.monotonic() - stopped_at
            print(f"\nstop_stream: YARN application killed and the driver GONE in {took:.1f}s: {seen['evidence']}")

            app = wait_for_state(on_yarn, app_id, FINAL_STATES)
            assert (app["state"], app["finalStatus"]) == ("KILLED", "KILLED"), app["diagnostics"]
            assert seen["liveness"] == Liveness.GONE.value, seen["evidence"]
            sources = {each["source"]: each["says"] for each in seen["sources"]}
            assert sources[EvidenceSource.PROCESS_TABLE.value] == Liveness.UNKNOWN.value, seen["evidence"]
            first.join_killed()  # the submit task, following the application, ended with it
        finally:
            for leftover in [app_id, *stray]:
                if application(on_yarn, leftover)["state"] not in FINAL_STATES:
                    kill(on_yarn, leftover)
    on_command_lines = [leak for leak in sampler.leaks if "command line" in leak]
    assert not on_command_lines, on_command_lines
    # The driver (the application master's Python process) got it, through the private properties file.
    assert any(leak.endswith("environment: python driver") for leak in sampler.leaks), (
        sampler.processes_seen, sampler.leaks)

