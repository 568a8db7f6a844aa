"""The Celery + PostgreSQL deployment's settings, worker command lines and server configs (pure pieces)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import AirflowDeploymentError, PrerequisiteError
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo, airflow_environment
from airflow_provider_eos.devstack.celery_settings import (
    CeleryWorker,
    DeploymentKind,
    PostgresServer,
    RedisServer,
    deployment_kind,
    postgres_url,
    worker_environment,
    worker_names,
)
from airflow_provider_eos.devstack.celery_workers import hosts_file_text, worker_command
from airflow_provider_eos.devstack.host_init import main as host_init
from airflow_provider_eos.devstack.postgres_server import find_postgres
from airflow_provider_eos.devstack.redis_server import redis_config


def _info(tmp_path: Path, kind: DeploymentKind) -> AirflowDeploymentInfo:
    postgres = PostgresServer(pid=10, port=5555, version="15", bin_dir="/pg/bin", data_dir="d", socket_dir="s",
                              os_user="eos-postgres", log_file="l") if kind.db == "postgres" else None
    redis = RedisServer(pid=11, port=6666, work_dir="r", log_file="l") if kind.executor == "celery" else None
    return AirflowDeploymentInfo(port=4321, airflow_home=str(tmp_path / "home"), dags_folder="/repo/dags",
                                 specs_dir=str(tmp_path / "pipelines"), password_file=str(tmp_path / "pw.json"),
                                 daemons=[], kind=kind, postgres=postgres, redis=redis)


def test_the_default_stays_the_local_executor_on_sqlite(tmp_path: Path) -> None:
    kind = deployment_kind()
    assert kind == DeploymentKind(executor="local", db="sqlite", workers=0)

    env = airflow_environment(_info(tmp_path, kind), jwt_secret="j", fernet_key="f")

    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("sqlite:///")
    assert not any(key.startswith("AIRFLOW__CELERY__") for key in env)


def test_celery_defaults_to_postgres_and_two_workers_and_refuses_sqlite() -> None:
    assert deployment_kind("celery") == DeploymentKind(executor="celery", db="postgres", workers=2)
    assert deployment_kind("celery", workers=3).workers == 3
    assert deployment_kind("local", "postgres") == DeploymentKind(executor="local", db="postgres")
    with pytest.raises(AirflowDeploymentError, match="SQLite") as refused:
        deployment_kind("celery", "sqlite")
    assert "--db postgres" in (refused.value.fix or "")
    with pytest.raises(AirflowDeploymentError, match="Celery executor only"):
        deployment_kind("local", workers=2)
    with pytest.raises(AirflowDeploymentError, match="1 to 8"):
        deployment_kind("celery", workers=0)


def test_postgres_replaces_sqlite_with_a_password_that_is_quoted(tmp_path: Path) -> None:
    env = airflow_environment(_info(tmp_path, deployment_kind("local", "postgres")), jwt_secret="j", fernet_key="f",
                              db_password="p@ss/word")

    assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == "postgresql+psycopg2://airflow:p%40ss%2Fword@127.0.0.1:5555/airflow"
    assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"


def test_celery_uses_redis_as_broker_and_postgres_for_results(tmp_path: Path) -> None:
    env = airflow_environment(_info(tmp_path, deployment_kind("celery")), jwt_secret="j", fernet_key="f",
                              db_password="db", redis_password="rd")

    assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor"
    assert env["AIRFLOW__CELERY__BROKER_URL"] == "redis://:rd@127.0.0.1:6666/0"
    # psycopg2 named: SQLAlchemy's default PostgreSQL driver is another (psycopg 3), not installed.
    assert env["AIRFLOW__CELERY__RESULT_BACKEND"] == "db+" + postgres_url(5555, "db")
    assert env["AIRFLOW__OPERATORS__DEFAULT_QUEUE"] == "default"
    assert int(env["AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT"]) <= 60


def test_a_celery_deployment_without_its_servers_is_a_callers_bug(tmp_path: Path) -> None:
    info = _info(tmp_path, deployment_kind("celery")).model_copy(update={"redis": None})
    with pytest.raises(ValueError, match="Redis"):
        airflow_environment(info, jwt_secret="j", fernet_key="f", db_password="db", redis_password="rd")


def test_an_older_state_file_without_the_new_fields_still_reads(tmp_path: Path) -> None:
    old = ('{"port": 1, "airflow_home": "h", "dags_folder": "d", "specs_dir": "s", "password_file": "p", '
           '"daemons": []}')
    info = AirflowDeploymentInfo.model_validate_json(old)
    assert info.kind == DeploymentKind() and info.workers == [] and info.postgres is None


def test_each_worker_is_a_host_of_its_own_with_its_own_queue(tmp_path: Path) -> None:
    assert worker_names(2) == ["worker-1", "worker-2"]
    command = worker_command("worker-1", "eos-worker-1", tmp_path / "hosts", "/venv/bin/airflow", concurrency=2,
                             root=True)

    init_at = command.index("-m") - 1
    assert command[:init_at] == ["unshare", "--uts", "--pid", "--fork", "--mount-proc", "--kill-child"]
    assert command[init_at + 1:init_at + 3] == ["-m", "airflow_provider_eos.devstack.host_init"]
    worker = command[command.index("--") + 1:]
    assert worker[:3] == ["/venv/bin/airflow", "celery", "worker"]
    assert worker[worker.index("--queues") + 1] == "worker-1,default"
    assert worker[worker.index("--celery-hostname") + 1] == "worker-1@eos-worker-1"
    assert "--skip-serve-logs" in worker
    # Without root, a user namespace makes the others possible.
    assert "--map-root-user" in worker_command("w", "h", tmp_path, "a", concurrency=1, root=False)
    assert "eos-worker-1" in hosts_file_text("eos-worker-1").splitlines()[0].split()


def test_airflow_reads_the_workers_hostname_from_its_uts_namespace() -> None:
    env = worker_environment("worker-2")
    assert env["AIRFLOW__CORE__HOSTNAME_CALLABLE"] == "socket.gethostname"
    assert env["EOS_CELERY_WORKER"] == "worker-2"


def test_the_recorded_worker_is_recognised_by_the_init_it_runs() -> None:
    worker = CeleryWorker(name="worker-1", hostname="eos-worker-1", queues=["worker-1", "default"], unshare_pid=1,
                          init_pid=2, worker_pid=3, pid_namespace="pid:[1]", uts_namespace="uts:[1]", work_dir="w",
                          log_file="l")
    assert worker.marker == "airflow_provider_eos.devstack.host_init"


def test_the_init_refuses_to_run_outside_a_pid_namespace_of_its_own(capsys: pytest.CaptureFixture[str]) -> None:
    # As anything but pid 1 its kill(-1) would signal every process of the machine: it must not start.
    assert os.getpid() != 1
    assert host_init(["--hostname", "h", "--", "true"]) == 2
    assert "pid 1" in capsys.readouterr().err


def test_the_newest_installed_postgres_is_found_and_a_missing_one_names_the_package(tmp_path: Path) -> None:
    for version in ("13", "15"):
        for tool in ("postgres", "initdb"):
            (tmp_path / version / "bin").mkdir(parents=True, exist_ok=True)
            (tmp_path / version / "bin" / tool).touch()
    (tmp_path / "16" / "bin").mkdir(parents=True)  # a client-only install: no server
    assert find_postgres(tmp_path) == ("15", tmp_path / "15" / "bin")
    with pytest.raises(PrerequisiteError) as missing:
        find_postgres(tmp_path / "none")
    assert "apt-get install postgresql" in (missing.value.fix or "")


def test_redis_listens_on_loopback_with_a_password_and_persists_nothing(tmp_path: Path) -> None:
    config = redis_config(tmp_path, 6379, "secret").splitlines()
    assert "bind 127.0.0.1" in config and "port 6379" in config and "requirepass secret" in config
    assert 'save ""' in config and "appendonly no" in config and f"dir {tmp_path}" in config


def test_the_reaper_finds_the_deployment_and_a_restarted_worker_does_not_hide_it(tmp_path: Path) -> None:
    from airflow_provider_eos.devstack import airflow_deployment
    from airflow_provider_eos.devstack.airflow_settings import AirflowDaemon

    # start_reaper runs `from <module> import reap`: without it the reaper died at once, unseen.
    assert callable(airflow_deployment.reap)
    worker = CeleryWorker(name="worker-1", hostname="eos-worker-1", queues=["worker-1"], unshare_pid=7, init_pid=8,
                          worker_pid=9, pid_namespace="p", uts_namespace="u", work_dir="w", log_file="l")
    info = _info(tmp_path, deployment_kind("celery")).model_copy(update={
        "daemons": [AirflowDaemon(component="scheduler", pid=5, log_file="l")], "workers": [worker]})
    airflow = airflow_deployment.LocalAirflow(tmp_path)
    restarted = info.model_copy(update={"workers": [worker.model_copy(update={"unshare_pid": 17})]})
    assert airflow.watched(info) == airflow.watched(restarted) == {5}
    assert {5, 7, 10, 11} <= set(airflow.leaders(info))
    # A host kept running beside its worker started anew (keep_old_host) is still the deployment's to stop.
    kept = restarted.model_copy(update={"retired_workers": [worker]})
    assert {7, 17} <= set(airflow.leaders(kept))


def test_the_deployments_eos_options_reach_every_component_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    from airflow_provider_eos.devstack import airflow_deployment

    info = _info(tmp_path, deployment_kind("celery")).model_copy(update={
        "eos_settings": {"queue_submit": "worker-1", "queue_recovery": "worker-2"}})
    env = airflow_environment(info, jwt_secret="j", fernet_key="f", db_password="d", redis_password="r")
    assert (env["AIRFLOW__EOS__QUEUE_SUBMIT"], env["AIRFLOW__EOS__QUEUE_RECOVERY"]) == ("worker-1", "worker-2")
    with pytest.raises(AirflowDeploymentError, match="no \\[eos\\] option queue_submitt"):
        airflow_deployment.LocalAirflow(tmp_path).up(eos_settings={"queue_submitt": "worker-1"})
