"""One Celery + PostgreSQL deployment (`eos airflow up --executor celery --workers 2 --db postgres`) for this package.

Started by the first pytest-xdist worker to need it and stopped by the last one out
(``tests.support.shared_services``). Its DAGs folder is the repository's DAGs plus this package's
test DAGs (``dags/``). Every test here holds :func:`worker_hosts` (autouse) while it runs: some kill a
worker on purpose and start it anew before they let go, and every other one runs tasks on both workers
(the cross-worker pipeline's driver on worker-1, its recovery on worker-2), which such a kill on the
other pytest-xdist worker would break.
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_eos.devstack.airflow_deployment import REPO_DAGS, LocalAirflow
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from airflow_provider_eos.devstack.celery_settings import deployment_kind
from tests.support.airflow_api import AirflowApi
from tests.support.shared_services import shared_service

TEST_DAGS = Path(__file__).parent / "dags"
SERVICE = "airflow-celery-deployment"
#: A pipeline DAG's driver on one host and its recovery on the other (test_cross_worker_pipeline.py).
EOS_SETTINGS = {"queue_submit": "worker-1", "queue_recovery": "worker-2"}


def _start(folder: Path, owner: int) -> AirflowDeploymentInfo:
    dags = folder.parent / f"{SERVICE}-dags"
    shutil.rmtree(dags, ignore_errors=True)
    shutil.copytree(REPO_DAGS, dags, ignore=shutil.ignore_patterns("__pycache__"))
    for dag_file in TEST_DAGS.glob("*.py"):
        shutil.copy(dag_file, dags / dag_file.name)
    return LocalAirflow(folder).up(dags_folder=dags, stop_with_pid=owner,
                                   kind=deployment_kind("celery", "postgres", 2), eos_settings=EOS_SETTINGS)


@pytest.fixture(scope="package")
def celery_deployment(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[AirflowDeploymentInfo]:
    """The running deployment: api-server, scheduler, dag-processor, triggerer, PostgreSQL, Redis, two workers."""
    with shared_service(tmp_path_factory, worker_id, SERVICE, _start, lambda folder: LocalAirflow(folder).down(),
                        ) as info:
        yield info


@pytest.fixture(scope="package")
def celery_api(celery_deployment: AirflowDeploymentInfo) -> Iterator[AirflowApi]:
    with AirflowApi(celery_deployment.url, celery_deployment.user, celery_deployment.password()) as api:
        yield api


@pytest.fixture(autouse=True)
def worker_hosts(celery_deployment: AirflowDeploymentInfo, tmp_path_factory: pytest.TempPathFactory,
                 ) -> Iterator[LocalAirflow]:
    """The deployment's workers, for this test alone (an flock beside the deployment's folder).

    Autouse: a test that does not kill a worker still has its tasks on them. CI's two pytest-xdist
    workers take the package's tests in turn, so the cross-worker pipeline test (its driver's task on
    worker-1 for minutes) could otherwise run while the other test SIGKILLs worker-1 and then stops its
    old host, driver included.
    """
    folder = Path(celery_deployment.airflow_home).parent
    with (folder.parent / f"{SERVICE}.workers.lock").open("a+") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield LocalAirflow(folder)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def eos_status(state_dir: Path) -> tuple[int, dict]:
    """``eos airflow status --json`` of the deployment: its exit code and its JSON."""
    done = subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", "airflow", "status", "--state-dir",
                           str(state_dir), "--json"], capture_output=True, text=True, timeout=120, check=False)
    return done.returncode, json.loads(done.stdout)


def db_password(info: AirflowDeploymentInfo) -> str:
    """The metadata DB's password, from the deployment's owner-only secrets file."""
    return json.loads((Path(info.airflow_home) / "secrets.json").read_text())["db_password"]


def wait_for_dag(api: AirflowApi, dag_id: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if any(d["dag_id"] == dag_id for d in api.get("/dags", limit=1000)["dags"]):
            return
        time.sleep(1)
    raise AssertionError(f"{dag_id} was never parsed")
