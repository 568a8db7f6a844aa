"""What the devstack's Airflow deployment is: its state file, its settings, its connections.

Pure models and functions, no processes: :mod:`airflow_provider_eos.devstack.airflow_deployment`
starts the daemons and records an :class:`AirflowDeploymentInfo` in ``airflow-deployment.json``.

The deployment is a small production Airflow on one machine, as the project asks (docs/design-notes.md note 26): an
api-server, a scheduler with the LocalExecutor, a dag-processor and a triggerer, each its own
process (``airflow standalone`` runs the same four, but as threads of one command that a test
cannot stop one part of). The default metadata DB is SQLite: Airflow 3 runs the LocalExecutor on it
(``airflow standalone`` does), and the deployment tests measure that it holds parallel tasks and
a deferred sensor (see the README's Airflow section). ``--db postgres`` and ``--executor celery``
make it closer to production: PostgreSQL, Redis and Celery workers that are hosts of their own
(:mod:`.celery_settings`, docs/design-notes.md note 34).
"""

from __future__ import annotations

import importlib.util
import secrets
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from airflow_provider_eos.core.errors import AirflowDeploymentError, PrerequisiteError
from airflow_provider_eos.core.spark_master import canonical_master, checked_master
from airflow_provider_eos.devstack.celery_settings import (
    CeleryWorker,
    DeploymentKind,
    PostgresServer,
    RedisServer,
    celery_environment,
    postgres_url,
)

__all__ = [
    "ADMIN_USER",
    "COMPONENTS",
    "STATE_FILE",
    "AirflowDaemon",
    "AirflowDeploymentInfo",
    "Component",
    "airflow_environment",
    "check_same_options",
    "check_spark_master",
    "check_statsd_address",
    "devstack_connections",
    "new_secret",
]

STATE_FILE = "airflow-deployment.json"
ADMIN_USER = "admin"
#: May read everything, change nothing (Airflow's simple auth manager role ``viewer``).
VIEWER_USER = "viewer"
#: May log in and read nothing (no role): what a user without access to the DAGs sees.
GUEST_USER = "guest"
#: ``user:role`` for the simple auth manager (an empty role grants nothing).
DEVSTACK_USERS = f"{ADMIN_USER}:admin,{VIEWER_USER}:viewer,{GUEST_USER}:"
Component = Literal["api-server", "scheduler", "dag-processor", "triggerer"]
#: In start order: the api-server first, it serves the execution API the others' tasks call.
COMPONENTS: tuple[Component, ...] = ("api-server", "scheduler", "dag-processor", "triggerer")
#: ``[core] min_serialized_dag_update_interval``: how soon a parsed DAG may be written again, and how long the
#: scheduler serves its cached copy of a DAG version without checking it was rewritten in place.
SERIALIZED_DAG_WINDOW_S = 2


class AirflowDaemon(BaseModel):
    """One component's process; its pid is also its process group (it leads its own session)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    component: Component
    pid: int
    log_file: str

    @property
    def marker(self) -> tuple[str, ...]:
        """What its command line holds: ``airflow`` then the component (NUL-separated, as /proc has it),
        or the title the api-server gives itself once it serves (``airflow api_server -- host:...``)."""
        return f"airflow\0{self.component}", f"airflow {self.component.replace('-', '_')} -- "


class AirflowDeploymentInfo(BaseModel):
    """What ``airflow-deployment.json`` records (written as each daemon starts)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    port: int
    airflow_home: str
    dags_folder: str
    specs_dir: str
    password_file: str
    daemons: list[AirflowDaemon]
    kind: DeploymentKind = DeploymentKind()
    postgres: PostgresServer | None = None
    redis: RedisServer | None = None
    workers: list[CeleryWorker] = Field(default_factory=list)
    #: Hosts of workers started anew while their old host kept running (``restart_worker(keep_old_host=True)``):
    #: ``down`` stops them too.
    retired_workers: list[CeleryWorker] = Field(default_factory=list)
    #: The ``[eos]`` options of the deployment (``AIRFLOW__EOS__<OPTION>`` in every component and task).
    eos_settings: dict[str, str] = Field(default_factory=dict)
    #: ``host:port`` of the StatsD listener Airflow's metrics go to (``eos airflow up --statsd``); ``None``: off.
    statsd: str | None = None
    #: The ``spark_default`` connection's master; ``None`` in state files written before it was recorded.
    spark_master: str | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def user(self) -> str:
        return ADMIN_USER

    def password(self, user: str = ADMIN_USER) -> str:
        """A devstack user's password (default: the admin's), read from the owner-only passwords file
        (never recorded in the state)."""
        import json

        return json.loads(Path(self.password_file).read_text())[user]

    def daemon(self, component: Component) -> AirflowDaemon | None:
        return next((d for d in self.daemons if d.component == component), None)

    def worker(self, name: str) -> CeleryWorker | None:
        return next((w for w in self.workers if w.name == name), None)


def new_secret() -> str:
    return secrets.token_urlsafe(32)


def airflow_environment(info: AirflowDeploymentInfo, *, jwt_secret: str, fernet_key: str,
                        parallelism: int = 8, db_password: str | None = None,
                        redis_password: str | None = None) -> dict[str, str]:
    """The ``AIRFLOW__*`` settings every component (and every task it runs) gets.

    Everything is pinned here rather than in an ``airflow.cfg``, so a user's own
    ``~/airflow/airflow.cfg`` or environment cannot leak into the deployment.

    :param db_password: the PostgreSQL password (``--db postgres``; the server must be recorded in ``info``).
    :param redis_password: Redis's password (``--executor celery``; the server must be recorded in ``info``).
    """
    home = Path(info.airflow_home)
    return {**_local_environment(info, home, jwt_secret, fernet_key, parallelism),
            **_server_environment(info, db_password, redis_password)}


def _server_environment(info: AirflowDeploymentInfo, db_password: str | None,
                        redis_password: str | None) -> dict[str, str]:
    """What PostgreSQL and Celery replace of the SQLite and LocalExecutor defaults (nothing without them)."""
    env: dict[str, str] = {}
    if info.kind.db == "postgres":
        if info.postgres is None or db_password is None:
            raise ValueError("a PostgreSQL deployment's settings need its server and password")  # a caller's bug
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = postgres_url(info.postgres.port, db_password)
    if info.kind.executor == "celery":
        if info.postgres is None or info.redis is None or db_password is None or redis_password is None:
            raise ValueError("a Celery deployment's settings need PostgreSQL, Redis and their passwords")
        env.update(celery_environment(info.postgres.port, db_password, info.redis.port, redis_password))
    return env


def _local_environment(info: AirflowDeploymentInfo, home: Path, jwt_secret: str, fernet_key: str,
                       parallelism: int) -> dict[str, str]:
    return {
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": info.dags_folder,
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": str(parallelism),
        "AIRFLOW__CORE__FERNET_KEY": fernet_key,
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{info.url}/execution/",
        "AIRFLOW__CORE__AUTH_MANAGER":
            "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager",
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": DEVSTACK_USERS,
        "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": info.password_file,
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__API__HOST": "127.0.0.1",
        "AIRFLOW__API__PORT": str(info.port),
        "AIRFLOW__API__BASE_URL": info.url,
        "AIRFLOW__API__WORKERS": "1",
        "AIRFLOW__API_AUTH__JWT_SECRET": jwt_secret,
        # Airflow's default: each DAG file parsed again every 30 s. At 5 s an idle deployment's dag-processor
        # took 14.3 CPU s a minute with three specs (3.2 s at 30 s): a quarter of a core, for good. A new
        # spec shows at the next parse; touching a DAG file has it parsed at once (its mtime is newer).
        "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "30",
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "10",
        # Airflow's default, 30 s, is how soon a parsed DAG may be written again (and how long the api-server
        # and scheduler serve their cached copy unchecked): a spec added right after a parse reached the forms
        # and the health check's list only 30-60 s later, touched DAG file or not. Parses are what bound the
        # writes (a DAG is written only when it changed), so a short window costs one indexed lookup a lookup.
        "AIRFLOW__CORE__MIN_SERIALIZED_DAG_UPDATE_INTERVAL": str(SERIALIZED_DAG_WINDOW_S),
        "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
        "AIRFLOW__TRIGGERER__CAPACITY": "50",
        "AIRFLOW__LOGGING__BASE_LOG_FOLDER": str(home / "logs"),
        "AIRFLOW__WEBSERVER__EXPOSE_CONFIG": "False",
        "EOS_SPECS_DIR": info.specs_dir,
        **{f"AIRFLOW__EOS__{key.upper()}": value for key, value in info.eos_settings.items()},
        **_metrics_environment(info.statsd),
    }


def check_statsd_address(statsd: str | None) -> str | None:
    """``host:port`` of a StatsD listener, checked (``None`` stays ``None``).

    :raises AirflowDeploymentError: the value is not ``host:port`` with a port of 1-65535.
    :raises PrerequisiteError: the ``statsd`` client Airflow sends through is not installed.
    """
    if statsd is None:
        return None
    host, _, port = statsd.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise AirflowDeploymentError(f"--statsd {statsd!r} is not HOST:PORT",
                                     fix="give the StatsD listener's address, e.g. --statsd 127.0.0.1:8125")
    if importlib.util.find_spec("statsd") is None:
        raise PrerequisiteError("Airflow's StatsD metrics need the `statsd` client, which is not installed",
                                fix="pip install 'apache-airflow[statsd]' (the provider's `dev` extra has it)")
    return statsd


def check_same_options(current: AirflowDeploymentInfo, state_dir: Path, asked: AirflowDeploymentInfo) -> None:
    """Refuse options that differ from the running deployment's: returning it as it is would ignore them.

    :param asked: the options asked for, in the fields
        :meth:`~airflow_provider_eos.devstack.airflow_deployment.LocalAirflow.up` records.
    :raises AirflowDeploymentError: naming each differing option, what runs and what was asked.
    """
    options = {"executor, db and workers": "kind", "[eos] settings": "eos_settings", "--statsd": "statsd",
               "--dags-folder": "dags_folder", "--specs-dir": "specs_dir", "--spark-master": "spark_master"}
    differing = []
    for option, field in options.items():
        found, wanted = getattr(current, field), getattr(asked, field)
        if field == "spark_master":
            if found is None:
                continue  # a state file from before the master was recorded: nothing to compare with
            found = canonical_master(found)  # a state file from before the master was spelled one way
        if found != wanted:
            shown = [v.describe() if isinstance(v, DeploymentKind) else repr(v) for v in (found, wanted)]
            differing.append(f"{option} {shown[0]} runs, {shown[1]} asked for")
    if differing:
        raise AirflowDeploymentError(
            f"an Airflow deployment runs in {state_dir} with other options: {'; '.join(differing)}.",
            fix="stop it first (`eos airflow down`) and start it with the new options, or ask for the same ones.")


def check_spark_master(master: str) -> str:
    """``master`` spelled one way (:func:`canonical_master`): what is recorded, compared and put in ``spark_default``.

    :raises AirflowDeploymentError: the master is empty.
    """
    return checked_master(master, option="--spark-master", error=AirflowDeploymentError)


def _metrics_environment(statsd: str | None) -> dict[str, str]:
    """Airflow's metrics (its own and the package's task metrics) to the StatsD listener ``host:port``."""
    if statsd is None:
        return {}
    host, _, port = statsd.rpartition(":")
    return {"AIRFLOW__METRICS__STATSD_ON": "True", "AIRFLOW__METRICS__STATSD_HOST": host,
            "AIRFLOW__METRICS__STATSD_PORT": port, "AIRFLOW__METRICS__STATSD_PREFIX": "airflow"}


def devstack_connections(bootstrap_servers: str | None, spark_master: str) -> dict[str, dict]:
    """The ``kafka`` and ``spark`` connections for the devstack, as ``airflow connections import`` reads them.

    ``kafka_default`` reaches the devstack broker (the DAGs use it for a role only when
    ``$EOS_KAFKA_CONN_ID`` names it; by default each spec's own settings apply); ``spark_default``
    is the master the pipeline DAG submits to.
    """
    connections: dict[str, dict] = {"spark_default": {"conn_type": "spark", "host": spark_master}}
    if bootstrap_servers:
        connections["kafka_default"] = {"conn_type": "kafka",
                                        "extra": {"bootstrap.servers": bootstrap_servers}}
    return connections
