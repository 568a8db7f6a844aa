"""One Airflow deployment per test run (`eos airflow up`), shared by every pytest-xdist worker.

The first worker to need it starts it in a folder beside the workers' own; each worker counts
itself in and out under an ``flock``, and the last one out stops it. The deployment is also tied
to the pytest controller's pid (a reaper stops it if the run is killed). Its specs folder is where
tests put their pipelines' spec files; each spec names its own broker, so the workers' brokers
need not be shared.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from tests.support.airflow_api import AirflowApi


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with path.open("a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _users(path: Path, change: int) -> int:
    count = (int(path.read_text() or 0) if path.exists() else 0) + change
    path.write_text(str(count))
    return count


@pytest.fixture(scope="session")
def airflow_deployment(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[AirflowDeploymentInfo]:
    """The running deployment (started by the first worker, stopped by the last)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if worker_id != "master" else base
    airflow = LocalAirflow(shared / "airflow-deployment")
    lock, users = shared / "airflow-deployment.lock", shared / "airflow-deployment.users"
    # Under xdist the controller outlives every worker: the deployment must not die with the first worker out.
    owner = os.getppid() if worker_id != "master" else os.getpid()
    with _locked(lock):
        try:
            info = airflow.up(stop_with_pid=owner)
        except BaseException:
            _users(users, 0)
            raise
        _users(users, +1)
    try:
        yield info
    finally:
        with _locked(lock):
            if _users(users, -1) <= 0:
                locked = _sqlite_contention(Path(info.airflow_home))
                airflow.down()
                # The measure behind SQLite as the metadata DB (README, Airflow): it must hold.
                assert not locked, f"SQLite could not keep up with the deployment's parallel tasks: {locked}"


def _sqlite_contention(home: Path) -> list[str]:
    """Lines of the components' and tasks' logs that say SQLite refused a write (``database is locked``)."""
    found = []
    for log in home.joinpath("logs").rglob("*"):
        if log.is_file():
            found += [f"{log.name}: {line.strip()[:300]}" for line in log.read_text(errors="replace").splitlines()
                      if "database is locked" in line]
    return found[:10]


@pytest.fixture(scope="session")
def airflow_api(airflow_deployment: AirflowDeploymentInfo) -> Iterator[AirflowApi]:
    with AirflowApi(airflow_deployment.url, airflow_deployment.user, airflow_deployment.password()) as api:
        yield api


def deploy_spec(deployment: AirflowDeploymentInfo, spec_file: Path, api: AirflowApi, name: str,
                dag_ids: tuple[str, ...] = ("eos_manual_recovery",)) -> Path:
    """Put a pipeline's spec into the deployment's pipelines folder and wait until the DAGs offer it."""
    target = Path(deployment.specs_dir) / f"{name}{spec_file.suffix}"
    shutil.copy(spec_file, target)
    os.chmod(target, 0o600)
    for dag_id in dag_ids:
        api.wait_for_param_choice(dag_id, "pipeline", name)
    return target
