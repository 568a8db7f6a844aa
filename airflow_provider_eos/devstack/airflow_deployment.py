"""Start, stop and describe the devstack's Airflow deployment: api-server, scheduler, dag-processor, triggerer.

``eos airflow up`` migrates a SQLite metadata DB in ``<state folder>/airflow``, creates the
devstack's ``kafka`` and ``spark`` connections, starts the four components bound to 127.0.0.1 on
a free port, and returns once the api-server reports the scheduler, the dag-processor and the
triggerer healthy and this project's DAGs are parsed. Settings: :mod:`.airflow_settings`.
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

from airflow_provider_eos.core.errors import AirflowDeploymentError
from airflow_provider_eos.devstack.airflow_settings import (
    ADMIN_USER,
    COMPONENTS,
    STATE_FILE,
    AirflowDaemon,
    AirflowDeploymentInfo,
    airflow_environment,
    devstack_connections,
    new_secret,
)
from airflow_provider_eos.devstack.broker_config import free_port
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.process_groups import Marker, runs
from airflow_provider_eos.devstack.recorded import RecordedDaemons
from airflow_provider_eos.subprocesses import run_bounded

__all__ = ["REPO_DAGS", "LocalAirflow"]

log = logging.getLogger(__name__)

#: The DAGs this project ships (``dags/`` of a source checkout).
REPO_DAGS = Path(__file__).resolve().parents[2] / "dags"
_PROJECT_DAGS = ("eos_pipeline", "eos_health_check", "eos_manual_recovery")
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
        return {d.pid: d.marker for d in info.daemons}

    def running(self) -> AirflowDeploymentInfo | None:
        """The recorded deployment if every component runs and the api-server answers, else None."""
        info = self.recorded()
        if info is None or len(info.daemons) != len(COMPONENTS):
            return None
        if not all(pid_alive(d.pid) and runs(d.pid, d.marker) for d in info.daemons):
            return None
        return info if _health(info.url) is not None else None

    def environment(self, info: AirflowDeploymentInfo) -> dict[str, str]:
        """The environment the components run with: this process's, the venv's tools first, the pinned settings."""
        secrets = json.loads((Path(info.airflow_home) / _SECRETS_FILE).read_text())
        tools = str(Path(sys.executable).parent)
        return {**os.environ, "PATH": f"{tools}{os.pathsep}{os.environ.get('PATH', '')}",
                **airflow_environment(info, **secrets)}

    def up(
        self,
        *,
        specs_dir: Path | str | None = None,
        dags_folder: Path | str = REPO_DAGS,
        bootstrap_servers: str | None = None,
        spark_master: str = "local[2]",
        timeout_s: float = 240,
        stop_with_pid: int | None = None,
    ) -> AirflowDeploymentInfo:
        """Start the deployment; return once its components are healthy and the project's DAGs are parsed.

        Idempotent: a running deployment is returned as it is; a partly running one is stopped and
        started anew. On any failure, what was started is stopped and the logs are kept.

        :param specs_dir: the pipelines folder the DAGs read (``$EOS_SPECS_DIR``); default
            ``<state folder>/pipelines``.
        :param bootstrap_servers: the devstack broker, for the ``kafka_default`` connection.
        :param spark_master: the ``spark_default`` connection's master.
        :param stop_with_pid: stop the deployment when this process dies, even without its cleanup.
        :raises AirflowDeploymentError: a component did not come up (the message names its log).
        """
        self.folder.claim()
        current = self.running()
        if current is not None:
            return current
        if self.recorded() is not None:
            log.warning("Stopping the partly running Airflow deployment of %s to start it anew.", self.state_dir)
            self.down()
        home = self._fresh_work_dir()
        (home / "logs").mkdir()
        specs = Path(specs_dir) if specs_dir else self.state_dir / DEFAULT_SPECS_DIR
        specs.mkdir(parents=True, exist_ok=True)
        info = AirflowDeploymentInfo(
            port=free_port(), airflow_home=str(home), dags_folder=str(Path(dags_folder).resolve()),
            specs_dir=str(specs.resolve()), password_file=str(home / "passwords.json"), daemons=[],
        )
        _write_private(Path(info.password_file), {ADMIN_USER: new_secret()[:20]})
        _write_private(home / _SECRETS_FILE, {"jwt_secret": new_secret(), "fernet_key": _fernet_key()})
        env = self.environment(info)
        deadline = time.monotonic() + timeout_s
        try:
            self._airflow(env, ["db", "migrate"], "db-migrate")
            connections = home / "connections.json"
            _write_private(connections, devstack_connections(bootstrap_servers, spark_master))
            self._airflow(env, ["connections", "import", "--overwrite", str(connections)], "connections")
            for component in COMPONENTS:
                daemon = self._spawn(env, component)
                info = self._record(info.model_copy(update={"daemons": [*info.daemons, daemon]}))
            if stop_with_pid is not None:
                self._start_reaper(stop_with_pid)
            self._wait_until_ready(info, deadline)
        except BaseException:
            self.down(keep_logs=True)
            raise
        return info

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
        """Healthy components (the api-server's ``/api/v2/monitor/health``), then the project's DAGs parsed."""
        waiting_for = "the api-server"
        while time.monotonic() < deadline:
            for daemon in info.daemons:
                if not pid_alive(daemon.pid):
                    raise AirflowDeploymentError(
                        f"Airflow's {daemon.component} exited while starting:\n{_tail(Path(daemon.log_file))}",
                        fix=f"read {daemon.log_file}.",
                    )
            health = _health(info.url)
            if health is not None:
                unhealthy = [part for part in ("metadatabase", "scheduler", "triggerer", "dag_processor")
                             if (health.get(part) or {}).get("status") != "healthy"]
                missing = [] if unhealthy else _missing_dags(info)
                if not unhealthy and not missing:
                    return
                waiting_for = f"{', '.join(unhealthy)} to report healthy" if unhealthy else \
                    f"the DAGs {', '.join(missing)} to be parsed"
            time.sleep(1)
        logs = ", ".join(d.log_file for d in info.daemons)
        raise AirflowDeploymentError(f"The Airflow deployment at {info.url} did not come up: waited for {waiting_for}.",
                                     fix=f"read the logs: {logs}.")


def _health(url: str) -> dict | None:
    try:
        with urllib.request.urlopen(f"{url}/api/v2/monitor/health", timeout=3) as answer:
            return json.loads(answer.read())
    except (OSError, ValueError, urllib.error.URLError):
        return None


def _missing_dags(info: AirflowDeploymentInfo) -> list[str]:
    """The project's DAGs the deployment has not serialized yet (read from its metadata DB)."""
    import sqlite3
    from contextlib import closing

    with closing(sqlite3.connect(Path(info.airflow_home) / "airflow.db", timeout=5)) as db:
        try:
            found = {row[0] for row in db.execute("SELECT dag_id FROM serialized_dag")}
        except sqlite3.Error:
            return list(_PROJECT_DAGS)
    return [dag for dag in _PROJECT_DAGS if dag not in found]


def _airflow_bin() -> str:
    return str(Path(sys.executable).with_name("airflow"))


def _fernet_key() -> str:
    from cryptography.fernet import Fernet  # Airflow's own dependency

    return Fernet.generate_key().decode()


def _write_private(path: Path, content: dict) -> None:
    # Owner-only before the first byte: passwords, keys and connections.
    path.touch(mode=0o600)
    path.write_text(json.dumps(content, indent=2))


def _tail(path: Path, lines: int = 25) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} is missing)"
