"""A Celery worker SIGKILLed while its task runs: what Airflow does, and what stays running on its host."""

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
from tests.deployment_celery.conftest import wait_for_dag
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


def test_a_sigkilled_worker_leaves_its_hosts_other_processes_running(
    celery_deployment: AirflowDeploymentInfo, celery_api: AirflowApi, worker_hosts: LocalAirflow, tmp_path: Path,
) -> None:
    info = worker_hosts.recorded()
    assert info is not None
    worker = info.worker("worker-2")
    assert worker is not None and pid_alive(worker.worker_pid)
    wait_for_dag(celery_api, DAG)
    facts_file = tmp_path / "facts.json"
    run_id = celery_api.trigger(DAG, {"facts_file": str(facts_file), "seconds": 30})
    try:
        deadline = time.monotonic() + 120
        while not facts_file.exists() or not facts_file.read_text():
            assert time.monotonic() < deadline, celery_api.task_states(DAG, run_id)
            time.sleep(0.5)
        facts = json.loads(facts_file.read_text())
        assert facts["hostname"] == "eos-worker-2" and facts["pid_namespace"] == worker.pid_namespace
        task_pid, child_pid = _root_pid(worker.pid_namespace, facts["pid"]), _root_pid(worker.pid_namespace,
                                                                                        facts["child_pid"])
        assert task_pid and child_pid, facts

        os.kill(worker.worker_pid, signal.SIGKILL)
        time.sleep(3)
        seen = {"worker": pid_alive(worker.worker_pid), "init": pid_alive(worker.init_pid),
                "task": pid_alive(task_pid), "child": pid_alive(child_pid)}
        print(f"3 s after SIGKILL of worker-2's Celery process: alive={seen}")
        state = celery_api.wait_for_run(DAG, run_id, timeout_s=240)
        tis = celery_api.task_instances(DAG, run_id)
        print(f"run {state}; tis: {[(t['task_id'], t['state'], t['try_number'], t['hostname']) for t in tis]}")
        print(f"after the run: alive task={pid_alive(task_pid)} child={pid_alive(child_pid)} "
              f"init={pid_alive(worker.init_pid)}")
        assert not seen["worker"]
        assert seen["init"] and seen["child"], seen
    finally:
        restarted = worker_hosts.restart_worker("worker-2")
    assert pid_alive(restarted.worker_pid) and restarted.pid_namespace != worker.pid_namespace
