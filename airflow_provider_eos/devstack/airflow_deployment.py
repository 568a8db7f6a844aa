"""Start, stop and describe the devstack's Airflow deployment: api-server, scheduler, dag-processor, triggerer.

``eos airflow up`` migrates a SQLite metadata DB in ``<state folder>/airflow``, creates the
devstack's ``kafka`` and ``spark`` connections, starts the four components bound to 127.0.0.1 on
a free port, and returns once the api-server reports the scheduler, the dag-processor and the
triggerer healthy and this project's DAGs are parsed. Settings: :mod:`.airflow_settings`.

``--db postgres`` starts a PostgreSQL server first (:mod:`.postgres_server`); ``--executor celery``
also Redis (:mod:`.redis_server`) and, after the components, N Celery workers, each on a "host" of
its own (:mod:`.celery_workers`). ``down`` stops them all with the components.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from airflow_provider_eos.configuration import OPTIONS
from airflow_provider_eos.core.dag_ids import PROVIDER_DAG_IDS
from airflow_provider_eos.core.errors import AirflowDeploymentError
from airflow_provider_eos.devstack.airflow_settings import (
    ADMIN_USER,
    COMPONENTS,
    GUEST_USER,
    STATE_FILE,
    VIEWER_USER,
    AirflowDaemon,
    AirflowDeploymentInfo,
    airflow_environment,
    check_same_options,
    check_spark_master,
    check_statsd_address,
    devstack_connections,
    new_secret,
)
from airflow_provider_eos.devstack.broker_config import free_port
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.celery_settings import CeleryWorker, DeploymentKind, worker_names
from airflow_provider_eos.devstack.celery_workers import spawn_worker, worker_ready
from airflow_provider_eos.devstack.postgres_server import start_postgres
from airflow_provider_eos.devstack.private_files import write_private
from airflow_provider_eos.devstack.process_groups import Marker, runs, stop_groups
from airflow_provider_eos.devstack.recorded import RecordedDaemons
from airflow_provider_eos.devstack.redis_server import start_redis
from airflow_provider_eos.subprocesses import run_bounded

__all__ = ["PACKAGED_DAGS", "REPO_DAGS", "LocalAirflow", "default_dags_folder"]

log = logging.getLogger(__name__)

#: The DAGs this project ships, in a source checkout: ``dags/`` beside the package (an installed wheel has none).
REPO_DAGS = Path(__file__).resolve().parents[2] / "dags"
#: The same DAGs in an installed wheel: setup.py's build step copies ``dags/`` (with ``pipelines/``) there.
PACKAGED_DAGS = Path(__file__).resolve().parents[1] / "example_dags"


def default_dags_folder(repo_dags: Path = REPO_DAGS, packaged_dags: Path = PACKAGED_DAGS) -> Path:
    """The DAG files ``eos airflow up`` serves unless told: a checkout's ``dags/``, else the wheel's example DAGs.

    The two hold the same files (the wheel's are copies made when it was built); an editable install
    has only the checkout's.
    """
    return repo_dags if repo_dags.is_dir() else packaged_dags


_PROJECT_DAGS = PROVIDER_DAG_IDS
_SECRETS_FILE = "secrets.json"
#: The pipelines folder in the state folder, unless ``up`` is given another: the user's spec files.
DEFAULT_SPECS_DIR = "pipelines"
#: Seconds one setup command (`airflow db migrate`, a connections import) may take.
AIRFLOW_COMMAND_TIMEOUT_S = 600.0


class LocalAirflow(RecordedDaemons[AirflowDeploymentInfo]):
    """The Airflow deployment recorded in ``state_dir`` (one per folder, beside the broker's)."""

    state_name = STATE_FILE
    what = "Airflow deployment"
    work_name = "airflow"
    info_type = AirflowDeploymentInfo
    error_type = AirflowDeploymentError
    user_folders = (DEFAULT_SPECS_DIR,)

    def leaders(self, info: AirflowDeploymentInfo) -> dict[int, Marker]:
        leaders: dict[int, Marker] = {d.pid: d.marker for d in info.daemons}
        leaders.update({w.unshare_pid: w.marker for w in [*info.workers, *info.retired_workers]})
        leaders.update({server.pid: server.marker for server in (info.postgres, info.redis) if server is not None})
        return leaders

    def watched(self, info: AirflowDeploymentInfo) -> set[int]:
        # The components' pids, not the workers': a worker started anew (restart_worker) is the same deployment.
        return {d.pid for d in info.daemons}

    def running(self) -> AirflowDeploymentInfo | None:
        """The recorded deployment if every component, server and worker runs and the api-server answers, else None."""
        info = self.recorded()
        if info is None or len(info.daemons) != len(COMPONENTS) or len(info.workers) != info.kind.workers:
            return None
        if not all(self.parts(info).values()):
            return None
        return info if _health(info.url) is not None else None

    @staticmethod
    def parts(info: AirflowDeploymentInfo) -> dict[str, bool]:
        """Whether each recorded part's process runs: the components, ``postgres``, ``redis``, the workers."""
        processes: dict[str, tuple[int, Marker]] = {d.component: (d.pid, d.marker) for d in info.daemons}
        processes.update({name: (s.pid, s.marker) for name, s in (("postgres", info.postgres), ("redis", info.redis))
                          if s is not None})
        processes.update({w.name: (w.worker_pid, "celery") for w in info.workers})
        return {name: pid_alive(pid) and runs(pid, marker) for name, (pid, marker) in processes.items()}

    def environment(self, info: AirflowDeploymentInfo) -> dict[str, str]:
        """The environment the components run with: this process's, the venv's tools first, the pinned settings."""
        secrets = json.loads((Path(info.airflow_home) / _SECRETS_FILE).read_text())
        tools = str(Path(sys.executable).parent)
        return {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}",
                **airflow_environment(info, **secrets)}

    def up(  # noqa: PLR0913  # keyword-only options with defaults; the CLI passes them by name
        self,
        *,
        specs_dir: Path | str | None = None,
        dags_folder: Path | str | None = None,
        bootstrap_servers: str | None = None,
        spark_master: str = "local[2]",
        timeout_s: float = 240,
        stop_with_pid: int | None = None,
        kind: DeploymentKind | None = None,
        eos_settings: dict[str, str] | None = None,
        statsd: str | None = None,
    ) -> AirflowDeploymentInfo:
        """Start the deployment; return once its components are healthy and the project's DAGs are parsed.

        Idempotent: a running deployment with the same options is returned as it is (one with other
        options is refused, not silently kept); a partly running one
        is stopped and started anew. On any failure, what was started is stopped and the logs are kept.

        :param specs_dir: the pipelines folder the DAGs read (``$EOS_SPECS_DIR``); default
            ``<state folder>/pipelines``.
        :param dags_folder: the DAG files; default :func:`default_dags_folder`.
        :param bootstrap_servers: the devstack broker, for the ``kafka_default`` connection.
        :param spark_master: the ``spark_default`` connection's master, recorded and compared as
            :func:`~airflow_provider_eos.core.spark_master.canonical_master` spells it.
        :param stop_with_pid: stop the deployment when this process dies, even without its cleanup.
        :param kind: the executor, metadata DB and workers (default: LocalExecutor on SQLite);
            Celery workers are ready too when this returns.
        :param eos_settings: ``[eos]`` options of the deployment (``{"queue_submit": "worker-1"}``), given to
            every component and task as ``AIRFLOW__EOS__<OPTION>``; a running deployment must have the same.
        :param statsd: ``host:port`` of a StatsD listener for Airflow's metrics (the package's task
            metrics among them); ``None``: metrics off.
        :raises AirflowDeploymentError: a component, server or worker did not come up (the message names
            its log), an option is invalid (checked before the state folder is claimed), or a deployment
            with other options (kind, [eos] settings, StatsD, DAGs, pipelines, Spark master) runs in the folder.
        :raises PrerequisiteError: PostgreSQL's or Redis's binaries are missing.
        """
        # Every option checked before the folder is claimed: a refused one must leave nothing behind.
        kind = kind or DeploymentKind()
        eos_settings = _checked_eos_settings(eos_settings or {})
        statsd = check_statsd_address(statsd)
        spark_master = check_spark_master(spark_master)
        specs = (Path(specs_dir) if specs_dir else self.state_dir / DEFAULT_SPECS_DIR).resolve()
        dags = (Path(dags_folder) if dags_folder else default_dags_folder()).resolve()
        self.folder.claim()
        current = self.running()
        if current is not None:
            check_same_options(current, self.state_dir, current.model_copy(update={
                "kind": kind, "eos_settings": eos_settings, "statsd": statsd, "dags_folder": str(dags),
                "specs_dir": str(specs), "spark_master": spark_master}))
            return current
        if self.recorded() is not None:
            log.warning("Stopping the partly running Airflow deployment of %s to start it anew.", self.state_dir)
            self.down()
        home = self._fresh_work_dir()
        (home / "logs").mkdir()
        specs.mkdir(parents=True, exist_ok=True)
        info = AirflowDeploymentInfo(
            port=free_port(), airflow_home=str(home), dags_folder=str(dags), specs_dir=str(specs),
            password_file=str(home / "passwords.json"), daemons=[], kind=kind, eos_settings=eos_settings,
            statsd=statsd, spark_master=spark_master,
        )
        write_private(Path(info.password_file),
                      json.dumps({user: new_secret()[:20] for user in (ADMIN_USER, VIEWER_USER, GUEST_USER)}, indent=2))
        secrets = {"jwt_secret": new_secret(), "fernet_key": _fernet_key()}
        if kind.db == "postgres":
            secrets["db_password"] = new_secret()
        if kind.executor == "celery":
            secrets["redis_password"] = new_secret()
        write_private(home / _SECRETS_FILE, json.dumps(secrets, indent=2))
        deadline = time.monotonic() + timeout_s
        try:
            info = self._start_servers(info, secrets)
            env = self.environment(info)
            self._airflow(env, ["db", "migrate"], "db-migrate")
            connections = home / "connections.json"
            write_private(connections, json.dumps(devstack_connections(bootstrap_servers, spark_master), indent=2))
            self._airflow(env, ["connections", "import", "--overwrite", str(connections)], "connections")
            for component in COMPONENTS:
                daemon = self._spawn(env, component)
                info = self._record(info.model_copy(update={"daemons": [*info.daemons, daemon]}))
            for name in worker_names(kind.workers):
                info = self._record_worker(info, self._spawn_worker(env, name))
            if stop_with_pid is not None:
                self._start_reaper(stop_with_pid)
            self._wait_until_ready(info, deadline)
        except BaseException:
            self.down(keep_logs=True)
            raise
        return info

    def _start_servers(self, info: AirflowDeploymentInfo, secrets: dict[str, str]) -> AirflowDeploymentInfo:
        """PostgreSQL and Redis, as the deployment's kind asks, each recorded once it answers."""
        home = Path(info.airflow_home)
        if info.kind.db == "postgres":
            info = self._record(info.model_copy(update={
                "postgres": start_postgres(home / "postgres", free_port(), secrets["db_password"])}))
        if info.kind.executor == "celery":
            info = self._record(info.model_copy(update={
                "redis": start_redis(home / "redis", free_port(), secrets["redis_password"])}))
        return info

    def _spawn_worker(self, env: dict[str, str], name: str) -> CeleryWorker:
        return spawn_worker(name, env, self.work_dir / "workers" / name, _airflow_bin())

    def _record_worker(self, info: AirflowDeploymentInfo, worker: CeleryWorker) -> AirflowDeploymentInfo:
        workers = [w for w in info.workers if w.name != worker.name] + [worker]
        return self._record(info.model_copy(update={"workers": sorted(workers, key=lambda w: w.name)}))

    def restart_worker(self, name: str, *, timeout_s: float = 120, keep_old_host: bool = False) -> CeleryWorker:
        """Stop worker ``name``'s host (every process of its namespaces) and start it anew; return it once ready.

        What a reboot of one worker host is: its tasks that still ran are gone with it.

        :param keep_old_host: leave the old host's processes running (a task's orphaned process, the
            driver it started) and start the worker on a new host of the same name: what replacing a
            worker whose machine still runs is. The old host is recorded, and stopped by
            :meth:`stop_old_hosts` or ``down``.
        :raises AirflowDeploymentError: no such worker is recorded, or it did not come up again.
        """
        info = self.recorded()
        old = info.worker(name) if info else None
        if info is None or old is None:
            raise AirflowDeploymentError(f"no Celery worker {name} is recorded in {self.state_file}.",
                                         fix="start the deployment with `eos airflow up --executor celery`.")
        if keep_old_host:
            info = self._record(info.model_copy(update={"retired_workers": [*info.retired_workers, old]}))
        else:
            stop_groups({old.unshare_pid: old.marker}, 20)
        worker = self._spawn_worker(self.environment(info), name)
        self._record_worker(self.recorded() or info, worker)
        deadline = time.monotonic() + timeout_s
        while not worker_ready(worker):
            if time.monotonic() > deadline:
                raise AirflowDeploymentError(f"Celery worker {name} did not become ready within {timeout_s:g}s.",
                                             fix=f"read {worker.log_file}.")
            time.sleep(0.5)
        return worker

    def stop_old_hosts(self, name: str, *, timeout_s: float = 20) -> list[CeleryWorker]:
        """Stop the old hosts of worker ``name`` that :meth:`restart_worker` kept running (every process in them:
        the host goes down); return them."""
        info = self.recorded()
        if info is None:
            return []
        old = [w for w in info.retired_workers if w.name == name]
        stop_groups({w.unshare_pid: w.marker for w in old}, timeout_s)
        self._record(info.model_copy(update={"retired_workers": [w for w in info.retired_workers if w.name != name]}))
        return old

    def _airflow(self, env: dict[str, str], args: list[str], name: str) -> None:
        log_file = self.work_dir / "logs" / f"{name}.log"
        with log_file.open("w") as out:
            done = run_bounded([_airflow_bin(), *args], timeout_s=AIRFLOW_COMMAND_TIMEOUT_S,
                               error=AirflowDeploymentError, fix=f"read {log_file}.", stdout=out,
                               stderr=subprocess.STDOUT, env=env, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            raise AirflowDeploymentError(
                f"`airflow {' '.join(args)}` failed with exit code {done.returncode}:\n{_tail(log_file)}",
                fix=f"read {log_file}.",
            )

    def _spawn(self, env: dict[str, str], component: str) -> AirflowDaemon:
        log_file = self.work_dir / "logs" / f"{component}.log"
        with log_file.open("w") as out:
            process = subprocess.Popen([_airflow_bin(), component], stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=env, start_new_session=True,
                                       cwd=self.work_dir)
        return AirflowDaemon(component=component, pid=process.pid, log_file=str(log_file))

    def _wait_until_ready(self, info: AirflowDeploymentInfo, deadline: float) -> None:
        """Healthy components (the api-server's ``/api/v2/monitor/health``), then the project's DAGs parsed
        and every Celery worker consuming its queues."""
        waiting_for = "the api-server"
        while time.monotonic() < deadline:
            for daemon in info.daemons:
                if not pid_alive(daemon.pid):
                    raise AirflowDeploymentError(
                        f"Airflow's {daemon.component} exited while starting:\n{_tail(Path(daemon.log_file))}",
                        fix=f"read {daemon.log_file}.",
                    )
            unready = [w.name for w in info.workers if not worker_ready(w)]
            health = _health(info.url)
            if health is not None:
                unhealthy = [part for part in ("metadatabase", "scheduler", "triggerer", "dag_processor")
                             if (health.get(part) or {}).get("status") != "healthy"]
                missing = [] if unhealthy else _missing_dags(info)
                if not unhealthy and not missing and not unready:
                    return
                waiting_for = (f"{', '.join(unhealthy)} to report healthy" if unhealthy else
                               f"the DAGs {', '.join(missing)} to be parsed" if missing else
                               f"the Celery workers {', '.join(unready)} to be ready")
            time.sleep(1)
        logs = ", ".join(d.log_file for d in info.daemons)
        raise AirflowDeploymentError(f"The Airflow deployment at {info.url} did not come up: waited for {waiting_for}.",
                                     fix=f"read the logs: {logs}.")


#: The reaper's entry point (:func:`~airflow_provider_eos.devstack.process_groups.start_reaper` imports ``reap``).
reap = LocalAirflow.reap


def _health(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=3) as answer:
            return json.loads(answer.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _missing_dags(info: AirflowDeploymentInfo) -> list[str]:
    """The project's DAGs the deployment does not list yet (its REST API, whichever the metadata DB)."""
    try:
        login = urllib.request.Request(f"{info.url}/auth/token", method="POST", headers=_JSON,
                                       data=json.dumps({"username": info.user, "password": info.password()}).encode())
        with urllib.request.urlopen(login, timeout=10) as answer:
            token = json.loads(answer.read())["access_token"]
        listing = urllib.request.Request(f"{info.url}/api/v2/dags?limit=1000",
                                         headers={**_JSON, "Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(listing, timeout=10) as answer:
            found = {dag["dag_id"] for dag in json.loads(answer.read())["dags"]}
    except (OSError, ValueError, KeyError, urllib.error.URLError):
        return list(_PROJECT_DAGS)
    return [dag for dag in _PROJECT_DAGS if dag not in found]


_JSON = {"Content-Type": "application/json", "Accept": "application/json"}


def _airflow_bin() -> str:
    return str(Path(sys.executable).with_name("airflow"))


def _fernet_key() -> str:
    from cryptography.fernet import Fernet  # Airflow's own dependency

    return Fernet.generate_key().decode()


def _checked_eos_settings(settings: dict[str, str]) -> dict[str, str]:
    """The ``[eos]`` options given to ``up``, each one the provider declares.

    :raises AirflowDeploymentError: naming an option the provider does not have.
    """
    unknown = sorted(set(settings) - set(OPTIONS))
    if unknown:
        raise AirflowDeploymentError(f"no [eos] option {', '.join(unknown)}.",
                                     fix=f"use one of {', '.join(OPTIONS)}.")
    return dict(settings)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} is missing)"
