"""A streaming pipeline deployed to a real Airflow deployment, driven through its REST API only.

The deployment tests of a pipeline's DAG (``eos_pipeline__<name>``; the LocalExecutor deployment and the Celery one)
produce input in chunks, start runs, wait until ``submit_stream`` runs while ``watch_stream`` is
deferred, and check the read_committed output exactly once. How a test finds the driver's
processes (for the cleanup's SIGKILL) is its own: :meth:`DeployedStream.driver_pids`.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections import Counter

from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from airflow_provider_eos.core.driver import DriverHandle
from tests.support.airflow_api import AirflowApi
from tests.support.pipeline import PipelineHarness, json_events, output_ids, wait_for

__all__ = ["DeployedStream"]


class DeployedStream:
    """One pipeline on a deployment: its DAG, its input so far, its runs, its driver."""

    def __init__(self, harness: PipelineHarness, api: AirflowApi) -> None:
        self.harness, self.api = harness, api
        self.dag = pipeline_dag_id(harness.spec.name)
        self.valid: list[str] = []
        self.chunks = 0
        self.runs: list[str] = []

    def produce(self, count: int) -> None:
        """Produce ``count`` valid records, with an aborted transaction every 4th chunk of 250."""
        records, valid, _ = json_events(count, prefix=f"c{self.chunks}-")
        self.chunks += 1
        self.harness.produce_input(records, aborted_every=4, chunk=250)
        self.valid += valid

    def output(self) -> Counter:
        return output_ids(self.harness.output_values())  # read_committed

    def wait_exact(self, timeout_s: float = 240) -> None:
        """Wait until every valid id is in the read_committed output, then check nothing is there twice."""
        seen: Counter = Counter()

        def complete() -> bool:
            nonlocal seen
            seen = self.output()
            return set(self.valid) <= set(seen)

        assert wait_for(complete, timeout_s, interval_s=2), f"{len(set(self.valid) - set(seen))} ids never arrived"
        duplicates = {k: v for k, v in seen.items() if v > 1}
        assert not duplicates and set(seen) == set(self.valid), (list(duplicates.items())[:5], len(seen))

    def start_run(self) -> str:
        run_id = self.api.trigger(self.dag, {})
        self.runs.append(run_id)
        self.wait_streaming(run_id)
        return run_id

    def wait_streaming(self, run_id: str, try_number: int = 1, timeout_s: float = 300) -> dict:
        """``submit_stream`` running (its ``try_number``) while ``watch_stream`` is deferred, at the same moment.

        :return: ``submit_stream``'s task instance as the API gave it then.
        """
        submit: dict = {}

        def both() -> bool:
            nonlocal submit
            tis = {ti["task_id"]: ti for ti in self.api.task_instances(self.dag, run_id)}
            submit, watch = tis.get("submit_stream") or {}, tis.get("watch_stream") or {}
            failed = self.api.run(self.dag, run_id)["state"] == "failed"
            if submit.get("state") in ("failed", "upstream_failed") or failed:
                raise AssertionError(f"the run failed while starting: {self.api.task_states(self.dag, run_id)}")
            return (submit.get("state") == "running" and submit.get("try_number") == try_number
                    and watch.get("state") == "deferred")

        assert wait_for(both, timeout_s, interval_s=1), self.api.task_states(self.dag, run_id)
        return submit

    def driver(self, run_id: str) -> DriverHandle:
        return DriverHandle.model_validate(self.api.xcom(self.dag, run_id, "submit_stream", key="driver"))

    def driver_pids(self, run_id: str) -> list[int]:
        """The pids of the run's driver processes that this test can see."""
        raise NotImplementedError

    def stop_everything(self) -> None:
        """Cleanup: no run left running, no driver left alive, whatever the test did."""
        for run_id in self.runs:
            with contextlib.suppress(Exception):
                if self.api.run(self.dag, run_id)["state"] not in ("success", "failed"):
                    self.api.request("PATCH", f"/dags/{self.dag}/dagRuns/{run_id}", json={"state": "failed"})
            with contextlib.suppress(Exception):
                for pid in self.driver_pids(run_id):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
