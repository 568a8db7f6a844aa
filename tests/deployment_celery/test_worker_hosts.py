"""Two Celery workers are two hosts to Airflow and to their tasks; PostgreSQL holds the metadata."""

from __future__ import annotations

import os
from contextlib import closing

import pytest

from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from tests.deployment_celery.conftest import db_password, eos_status, wait_for_dag
from tests.support.airflow_api import AirflowApi

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.deployment]

DAG = "eos_celery_hosts"


def test_tasks_pinned_to_two_queues_run_on_two_hosts_recorded_in_postgres(
    celery_deployment: AirflowDeploymentInfo, celery_api: AirflowApi, worker_hosts: LocalAirflow,
) -> None:
    info = worker_hosts.recorded()
    assert info is not None and info.kind.executor == "celery" and info.kind.db == "postgres"
    assert [w.name for w in info.workers] == ["worker-1", "worker-2"]
    code, status = eos_status(worker_hosts.state_dir)
    assert code == 0 and (status["executor"], status["db"]) == ("celery", "postgres"), status
    assert {name: w["hostname"] for name, w in status["workers"].items()} == {
        "worker-1": "eos-worker-1", "worker-2": "eos-worker-2"}
    wait_for_dag(celery_api, DAG)

    run_id = celery_api.trigger(DAG, {})
    assert celery_api.wait_for_run(DAG, run_id, timeout_s=180) == "success", celery_api.task_states(DAG, run_id)

    facts = {name: celery_api.xcom(DAG, run_id, f"on_{name.replace('-', '_')}") for name in ("worker-1", "worker-2")}
    own_pid_namespace = os.readlink("/proc/self/ns/pid")
    for name, fact in facts.items():
        worker = info.worker(name)
        assert worker is not None
        # The host's name, as the task and as Airflow see it, and the namespaces the state file records.
        assert fact["hostname"] == fact["airflow_hostname"] == worker.hostname == f"eos-{name}", fact
        assert fact["pid_namespace"] == worker.pid_namespace != own_pid_namespace, fact
        assert fact["uts_namespace"] == worker.uts_namespace, fact
        assert fact["worker"] == name and fact["cwd"] == worker.work_dir, fact
    assert facts["worker-1"]["pid_namespace"] != facts["worker-2"]["pid_namespace"]

    # Airflow's record of where each task ran: through the REST API, and in PostgreSQL itself.
    by_task = {ti["task_id"]: ti for ti in celery_api.task_instances(DAG, run_id)}
    assert {t: (ti["hostname"], ti["queue"]) for t, ti in by_task.items()} == {
        "on_worker_1": ("eos-worker-1", "worker-1"), "on_worker_2": ("eos-worker-2", "worker-2")}
    assert _hosts_in_postgres(info, run_id) == {"on_worker_1": "eos-worker-1", "on_worker_2": "eos-worker-2"}
    # No worker serves its logs (their hosts' names resolve nowhere else): the api-server reads the shared folder.
    log = celery_api.task_log(DAG, run_id, "on_worker_1")
    assert f"{info.airflow_home}/logs/dag_id={DAG}" in log and "'hostname': 'eos-worker-1'" in log, log[-3000:]


def _hosts_in_postgres(info: AirflowDeploymentInfo, run_id: str) -> dict[str, str]:
    import psycopg2

    assert info.postgres is not None
    with closing(psycopg2.connect(host="127.0.0.1", port=info.postgres.port, user="airflow", dbname="airflow",
                                  password=db_password(info))) as db, db.cursor() as cursor:
        cursor.execute("SELECT task_id, hostname FROM task_instance WHERE dag_id = %s AND run_id = %s", (DAG, run_id))
        return dict(cursor.fetchall())

