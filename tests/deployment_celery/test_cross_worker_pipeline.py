"""A pipeline's DAG on two worker hosts: the driver on ``eos-worker-1``, its recovery on ``eos-worker-2`` (issue 26).

On the shared Celery deployment, through its REST API only; its ``[eos] queue_submit`` and
``queue_recovery`` pin the submit tasks to queue ``worker-1`` and the recovery tasks (``stop_stream``,
``confirm_driver_gone``, ``recover_abort``, ``recover_verify``) to ``worker-2``. From worker-2 the
driver's process table is another host's (UNKNOWN); what it has is the driver's lease in the
checkpoint (Spark local mode: no cluster manager). docs/design-notes.md, note 37.

1. The driver is SIGKILLed: recovery runs on the other worker once the lease expired (stop, confirm,
   abort, verify), and a new run resumes exactly once.
2. The watcher fails while that new run's driver streams: the stop on the other host refuses (the
   driver renews its lease), nothing is fenced, the output stays exact; marked failed, the driver
   stops cleanly on its own host and recovery runs after the released lease.
3. The Celery worker running ``submit_stream`` is SIGKILLed while the driver is inside a long
   batch (its Python workers paused): the driver lives on past its owner's end, renewing its lease.
   The submit, cleared and run again by the worker started anew on another host, sees the lease
   alive and waits, never starting a second driver; once the batch goes on, it commits, the old
   driver stops between batches and releases its lease, and the retry's driver resumes exactly once.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from airflow_provider_eos.core.driver import DriverProcess
from airflow_provider_eos.core.driver_lease import DriverLease, read_driver_lease
from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.spark.driver_processes import processes_with_token
from tests.deployment.conftest import deploy_spec
from tests.support.airflow_api import AirflowApi
from tests.support.deployed_stream import DeployedStream
from tests.support.pipeline import PipelineHarness, wait_for

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.spark, pytest.mark.deployment,
              pytest.mark.chaos]

RECOVERY = ("confirm_driver_gone", "recover_abort", "recover_verify")
SUBMIT_HOST, RECOVERY_HOST = "eos-worker-1", "eos-worker-2"
#: The driver renews every 10/3 s; a SIGKILLed one's lease is expired 10 + 10 s after its last renewal.
LEASE_TTL_S = 10


def driver_processes(token: str) -> tuple[DriverProcess, ...]:
    """Every process carrying the run's token, on any worker host (this test sees the whole machine)."""
    table = processes_with_token(token)
    assert table is not None
    return table.carrying


def python_drivers(token: str) -> list[DriverProcess]:
    return [p for p in driver_processes(token) if p.is_python_driver]


class Stream(DeployedStream):
    """One pipeline deployed to the Celery deployment: its input so far, its runs, its driver, its lease."""

    def lease(self) -> DriverLease | None:
        return read_driver_lease(self.harness.checkpoint())

    def hosts(self, run_id: str) -> dict[str, str | None]:
        return {ti["task_id"]: ti.get("hostname") for ti in self.api.task_instances(self.dag, run_id)}

    def driver_pids(self, run_id: str) -> list[int]:
        return [process.pid for process in driver_processes(self.driver(run_id).token)]


@pytest.fixture
def stream(tmp_path: Path, bootstrap: str, celery_deployment: AirflowDeploymentInfo,
           celery_api: AirflowApi) -> Iterator[Stream]:
    # The driver writer with its spill in Python workers (`executor_writer: python`): scenario 3 pauses them to
    # hold a batch open while the driver runs on (the JVM spill, the default, runs in the driver's JVM here).
    harness = PipelineHarness(bootstrap, tmp_path, partitions=2, max_offsets_per_trigger=400,
                              trigger="2 seconds", writers="driver", executor_writer="python")
    harness.with_overrides(driver_lease_ttl_s=LEASE_TTL_S)
    deployed = deploy_spec(celery_deployment, harness.spec_file, celery_api, harness.spec.name,
                           dag_ids=(pipeline_dag_id(harness.spec.name),))
    made = Stream(harness, celery_api)
    try:
        yield made
    finally:
        made.stop_everything()
        deployed.unlink(missing_ok=True)


def _recovered_on_the_other_host(stream: Stream, run_id: str) -> dict:
    """The recovery tasks succeeded on the recovery host; the gate's evidence; returns it."""
    api = stream.api
    states, hosts = api.task_states(stream.dag, run_id), stream.hosts(run_id)
    assert all(states[task] == "success" for task in RECOVERY), states
    assert {task: hosts[task] for task in RECOVERY} == dict.fromkeys(RECOVERY, RECOVERY_HOST), hosts
    assert api.xcom(stream.dag, run_id, "recover_verify")["overall"] in ("IN_SYNC", "KAFKA_AHEAD_SAFE")
    gate = api.xcom(stream.dag, run_id, "confirm_driver_gone")
    said = {source["source"]: source["says"] for source in gate["sources"]}
    # From the other host the process table says nothing; the lease says gone.
    assert gate["liveness"] == "GONE" and said["driver lease"] == "GONE" and said["process table"] == "UNKNOWN", gate
    return gate


def test_driver_killed_on_one_worker_is_recovered_from_the_other_and_a_failed_watcher_fences_nothing(
    stream: Stream, celery_api: AirflowApi,
) -> None:
    api, timings = celery_api, {}
    began = time.monotonic()
    stream.produce(1200)

    # 1. The driver streams on worker-1, then dies with its host's processes (SIGKILL).
    first = stream.start_run()
    stream.wait_exact()
    handle = stream.driver(first)
    assert handle.host == SUBMIT_HOST and stream.hosts(first)["submit_stream"] == SUBMIT_HOST, handle
    stream.produce(800)
    killed = driver_processes(handle.token)
    assert any(p.is_python_driver for p in killed), killed
    for process in killed:
        # A Python worker that finished its task between the listing and here needs no kill.
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, signal.SIGKILL)

    assert api.wait_for_run(stream.dag, first, timeout_s=240) == "failed"
    states = api.task_states(stream.dag, first)
    assert states["submit_stream"] == "failed" and states["pipeline_failed"] == "failed", states
    # stop_stream could not signal a driver on another host: it waited for the lease to expire.
    assert states["stop_stream"] == "success" and stream.hosts(first)["stop_stream"] == RECOVERY_HOST, states
    assert api.xcom(stream.dag, first, "stop_stream")["liveness"] == "GONE"
    gate = _recovered_on_the_other_host(stream, first)
    assert "expired" in gate["evidence"], gate["evidence"]
    timings["1: killed, recovered from the other host"] = time.monotonic() - began

    # A new run resumes exactly once.
    second = stream.start_run()
    stream.wait_exact()
    timings["1: new run resumed exactly once"] = time.monotonic() - began

    # 2. The watcher fails while the driver streams: the stop on the other host refuses, nothing is fenced.
    handle = stream.driver(second)
    drivers = python_drivers(handle.token)
    assert len(drivers) == 1, drivers
    api.set_task_state(stream.dag, second, "watch_stream", "failed")
    assert api.wait_for_task(stream.dag, second, "stop_stream", ("failed",), timeout_s=120) == "failed"
    refused = api.task_log(stream.dag, second, "stop_stream")
    assert "the driver could not be stopped from eos-worker-2" in refused, refused[-3000:]
    assert "the lease was renewed while this host waited" in refused, refused[-3000:]
    stream.produce(800)
    stream.wait_exact()  # the driver was not fenced: it still commits, once
    states = api.task_states(stream.dag, second)
    assert states["submit_stream"] == "running" and states["recover_abort"] is None, states
    assert [p.pid for p in python_drivers(handle.token)] == [drivers[0].pid]
    lease = stream.lease()
    assert lease is not None and lease.token == handle.token and not lease.released, lease
    timings["2: watcher failed, nothing fenced"] = time.monotonic() - began

    # Marked failed: the driver's own host stops it cleanly (SIGTERM), the lease is released, recovery runs.
    api.set_task_state(stream.dag, second, "submit_stream", "failed")
    assert api.wait_for_run(stream.dag, second, timeout_s=240) == "failed"
    gate = _recovered_on_the_other_host(stream, second)
    assert "released" in gate["evidence"], gate["evidence"]
    seen = stream.output()
    assert not {k: v for k, v in seen.items() if v > 1} and set(seen) == set(stream.valid), len(seen)
    timings["2: stopped on its host, recovered"] = time.monotonic() - began
    print("phases (s since start):", {k: round(v, 1) for k, v in timings.items()})


def python_workers(token: str) -> list[DriverProcess]:
    """The driver's Spark Python workers and their daemon (the driver writer's spill tasks run there with
    ``executor_writer: python``)."""
    return [p for p in driver_processes(token) if "pyspark.daemon" in p.command or "pyspark.worker" in p.command]


@contextlib.contextmanager
def python_workers_paused(token: str) -> Iterator[None]:
    """The driver's Python workers stopped (SIGSTOP) while the block runs, continued (SIGCONT) on the way out.

    A batch that reaches them waits, as a long batch does (a slow transform, a large backlog), while
    the driver itself runs and renews its lease. What a driver does with a long batch when its owner
    dies is the point: it finishes the batch, then stops (it never leaves one half done).
    """
    paused = python_workers(token)
    assert paused, f"no Python worker carries {token}: {driver_processes(token)}"
    for process in paused:
        os.kill(process.pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for process in paused:
            with contextlib.suppress(ProcessLookupError):
                os.kill(process.pid, signal.SIGCONT)


def _batch_in_flight(stream: Stream) -> bool:
    """A batch planned in the checkpoint's offset log and not committed: the driver is inside it."""
    checkpoint = stream.harness.checkpoint()
    planned, committed = checkpoint.latest_planned_batch(), checkpoint.latest_committed_batch()
    return planned is not None and (committed is None or planned > committed)


def test_a_sigkilled_worker_under_submit_stream_leaves_one_driver_and_the_retry_waits_for_it(
    stream: Stream, celery_api: AirflowApi, worker_hosts: LocalAirflow,
) -> None:
    api, timings = celery_api, {}
    began = time.monotonic()
    info = worker_hosts.recorded()
    worker = info.worker("worker-1") if info else None
    assert worker is not None
    stream.produce(1200)
    run_id = stream.start_run()
    stream.wait_exact()
    token = stream.driver(run_id).token
    old_driver = python_drivers(token)
    assert len(old_driver) == 1, old_driver
    timings["streaming"] = time.monotonic() - began
    log, restarted = "", None

    def retry_log() -> str:
        nonlocal log
        assert len(python_drivers(token)) <= 1, python_drivers(token)  # never two drivers
        log = api.task_log(stream.dag, run_id, "submit_stream", try_number=retried["try_number"])
        return log

    try:
        with python_workers_paused(token):
            # A batch the driver cannot finish yet: it lives on past its owner's end (it stops between batches).
            stream.produce(400)
            assert wait_for(lambda: _batch_in_flight(stream), 60, interval_s=1), "no batch started"
            time.sleep(5)  # well inside the sink (it starts within a second of the plan), not before it
            assert _batch_in_flight(stream), "the batch was not held"
            timings["batch held open"] = time.monotonic() - began

            # The worker dies; its host lives on, with what the task started.
            os.kill(worker.worker_pid, signal.SIGKILL)
            # A user retries the silent task at once: "Clear" on a running task only marks it restarting (its
            # supervisor, dead with the worker, would have ended it); cleared again, a new try is queued.
            api.clear_task(stream.dag, run_id, "submit_stream")
            restarted = worker_hosts.restart_worker("worker-1", keep_old_host=True)
            assert restarted.pid_namespace != worker.pid_namespace and not pid_alive(worker.worker_pid)
            retried = _wait_for_retry(stream, run_id)
            assert retried["hostname"] == SUBMIT_HOST
            timings["retry running"] = time.monotonic() - began

            # The retry sees the old driver alive (its lease, renewed mid-batch) and waits.
            def waits() -> bool:
                assert "No earlier driver of the pipeline is alive" not in retry_log(), log[-3000:]
                return "An earlier driver of the pipeline still runs" in log

            assert wait_for(waits, 120, interval_s=1), log[-3000:]
            assert "driver lease: ALIVE" in log, log[-3000:]
            # Judged where its lease says the old driver runs (the old pid namespace): this new host's process
            # table cannot see it, and says so, instead of "no process carries the token".
            waiting = next(line for line in log.splitlines() if "An earlier driver of the pipeline still runs" in line)
            assert "process table: no evidence" in waiting and "pid namespace" in waiting, waiting
            timings["retry waiting for the old driver"] = time.monotonic() - began
            # It keeps waiting while the old driver lives: the one driver is still the old one.
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                assert waits() and [p.pid for p in python_drivers(token)] == [old_driver[0].pid]
                time.sleep(1)

        # The held batch goes on and commits; the old driver, its owner gone, then stops and releases its lease.
        assert wait_for(lambda: "No earlier driver of the pipeline is alive" in retry_log(), 150, interval_s=1), \
            log[-3000:]
        decided = next(line for line in log.splitlines() if "No earlier driver of the pipeline is alive" in line)
        # The released lease is the proof: the old driver stopped its query and commits nothing more. Its
        # process exits a moment after (the JVM shuts down), while the retry's spark-submit is still starting.
        assert "driver lease: GONE" in decided and "released" in decided, decided
        timings["retry found the old driver gone after waiting"] = time.monotonic() - began
        assert wait_for(lambda: not pid_alive(old_driver[0].pid), 60, interval_s=0.5), "the old driver never exited"

        # The retry starts its driver, the only one, which resumes exactly once.
        def new_driver() -> bool:
            drivers = python_drivers(token)
            assert len(drivers) <= 1, drivers
            return bool(drivers) and drivers[0].pid != old_driver[0].pid

        assert wait_for(new_driver, 180, interval_s=1), api.task_states(stream.dag, run_id)
        stream.produce(400)
        stream.wait_exact()
        timings["resumed exactly once"] = time.monotonic() - began
    finally:
        worker_hosts.stop_old_hosts("worker-1")
        if restarted is None:
            worker_hosts.restart_worker("worker-1")
    print("phases (s since start):", {k: round(v, 1) for k, v in timings.items()})


def _wait_for_retry(stream: Stream, run_id: str) -> dict:
    """The cleared ``submit_stream`` running again on its queue's worker.

    Cleared while running, the task is ``restarting``: its supervisor would end it and it would be
    retried, but the supervisor died with the worker, and the scheduler would only fail the silent
    try after the heartbeat timeout. So it is cleared once more, which schedules a new try at once.
    """
    api = stream.api
    deadline = time.monotonic() + 240
    cleared_again = False
    while time.monotonic() < deadline:
        ti = api.task_instance(stream.dag, run_id, "submit_stream")
        if ti["state"] in ("restarting", "up_for_retry") and not cleared_again:
            api.clear_task(stream.dag, run_id, "submit_stream")
            cleared_again = True
        if ti["state"] == "running" and ti["try_number"] > 1:
            assert api.task_instance(stream.dag, run_id, "watch_stream")["state"] == "deferred"
            return ti
        assert ti["state"] not in ("failed", "upstream_failed"), api.task_states(stream.dag, run_id)
        time.sleep(2)
    raise AssertionError(f"submit_stream was never retried: {api.task_states(stream.dag, run_id)}")
