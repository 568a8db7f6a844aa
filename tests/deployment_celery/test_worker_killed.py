"""A Celery worker SIGKILLed while its task runs: what stays running on its host, and what Airflow does.

Measured (docs/design-notes.md note 34): the worker's pool processes die with it, and with them
the task's supervisor; the task's own process (and what it started) lives on, orphaned, under the
namespace's init, as it would on a real host. Nothing reports for the task any more: the
scheduler fails its try once the heartbeats stop for ``task_instance_heartbeat_timeout`` (60 s in
this deployment) and retries it, here on the worker's host started anew.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from tests.deployment_celery.conftest import eos_status, wait_for_dag
from tests.support.airflow_api import AirflowApi

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.deployment, pytest.mark.chaos]

DAG, TASK = "eos_celery_long", "long_on_worker_2"


def _root_pid(pid_namespace: str, namespaced_pid: int) -> int | None:
    """The machine's pid of the process that is ``namespaced_pid`` in ``pid_namespace`` (``NSpid`` in /proc)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.readlink(entry / "ns" / "pid") != pid_namespace:
                continue
            nspid = next(line for line in (entry / "status").read_text().splitlines() if line.startswith("NSpid:"))
        except (OSError, StopIteration):
            continue
        if int(nspid.split()[-1]) == namespaced_pid:
            return int(entry.name)
    return None


def _wait_for_facts(api: AirflowApi, run_id: str, facts_file: Path) -> dict:
    deadline = time.monotonic() + 120
    while not facts_file.exists() or not facts_file.read_text():
        assert time.monotonic() < deadline, f"the task never started: {api.task_states(DAG, run_id)}"
        time.sleep(0.5)
    return json.loads(facts_file.read_text())


@pytest.mark.long  # 90 s, 60 of them Airflow's heartbeat timeout: CI keeps the two hosts' test (make test-long)
def test_a_sigkilled_worker_leaves_its_hosts_processes_and_its_task_is_retried_on_the_host_started_anew(
    celery_deployment: AirflowDeploymentInfo, celery_api: AirflowApi, worker_hosts: LocalAirflow, tmp_path: Path,
) -> None:
    info = worker_hosts.recorded()
    worker = info.worker("worker-2") if info else None
    assert worker is not None and pid_alive(worker.worker_pid)
    wait_for_dag(celery_api, DAG)
    facts_file = tmp_path / "facts.json"
    run_id = celery_api.trigger(DAG, {"facts_file": str(facts_file), "seconds": 600})
    restarted = None
    try:
        facts = _wait_for_facts(celery_api, run_id, facts_file)
        assert facts["hostname"] == worker.hostname and facts["pid_namespace"] == worker.pid_namespace, facts
        task_pid, child_pid = (_root_pid(worker.pid_namespace, facts[key]) for key in ("pid", "child_pid"))
        assert task_pid and child_pid, facts

        os.kill(worker.worker_pid, signal.SIGKILL)
        time.sleep(3)
        # Only the worker died: the host's init, the task's own process and the child it started live on.
        assert not pid_alive(worker.worker_pid)
        assert pid_alive(worker.init_pid) and pid_alive(task_pid) and pid_alive(child_pid)
        assert celery_api.task_instance(DAG, run_id, TASK)["state"] == "running"
        code, status = eos_status(worker_hosts.state_dir)
        assert (code, status["running"], status["down"]) == (1, False, ["worker-2"]), status

        # The host "reboots": every process of its namespaces ends, a new worker starts on it.
        restarted = worker_hosts.restart_worker("worker-2")
        assert not any(pid_alive(pid) for pid in (worker.init_pid, task_pid, child_pid))
        assert restarted.pid_namespace != worker.pid_namespace

        # The scheduler fails the silent try after the heartbeat timeout and retries it on the new worker.
        assert celery_api.wait_for_run(DAG, run_id, timeout_s=150) == "success"
        ti = celery_api.task_instance(DAG, run_id, TASK)
        assert (ti["try_number"], ti["hostname"]) == (2, "eos-worker-2"), ti
        assert celery_api.xcom(DAG, run_id, TASK)["pid_namespace"] == restarted.pid_namespace
    finally:
        if restarted is None:
            worker_hosts.restart_worker("worker-2")
