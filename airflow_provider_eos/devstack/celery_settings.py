"""The production-like variant of the devstack's Airflow deployment: PostgreSQL, Redis and Celery workers.

Pure models and functions, no processes: what ``airflow-deployment.json`` records about the
metadata DB's server, the Celery broker and each worker "host", and the settings they imply.
:mod:`.postgres_server`, :mod:`.redis_server` and :mod:`.celery_workers` start them
(docs/design-notes.md note 34).

A worker is a host of its own as far as Airflow and the tasks can tell: its own hostname (its UTS
namespace, and Airflow's ``[core] hostname_callable`` reads it), its own process table (its pid
namespace, with a small init as pid 1, :mod:`.host_init`) and its own working folder. It shares the
network, the file system and the users with the machine.
"""

from __future__ import annotations

from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict

from airflow_provider_eos.core.errors import AirflowDeploymentError

__all__ = [
    "DB_NAME",
    "DB_USER",
    "DEFAULT_QUEUE",
    "CeleryWorker",
    "DeploymentKind",
    "Executor",
    "MetadataDb",
    "PostgresServer",
    "RedisServer",
    "celery_environment",
    "deployment_kind",
    "postgres_url",
    "worker_environment",
    "worker_names",
]

Executor = Literal["local", "celery"]
MetadataDb = Literal["sqlite", "postgres"]
DB_NAME = "airflow"
DB_USER = "airflow"
#: The queue every worker consumes besides its own; tasks that name none go there.
DEFAULT_QUEUE = "default"
#: Airflow's hostname of a worker is read from its UTS namespace, which the init set.
_HOSTNAME_CALLABLE = "socket.gethostname"


class DeploymentKind(BaseModel):
    """Which executor, metadata DB and how many Celery workers (none with the LocalExecutor)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    executor: Executor = "local"
    db: MetadataDb = "sqlite"
    workers: int = 0

    def describe(self) -> str:
        workers = f", {self.workers} workers" if self.executor == "celery" else ""
        return f"executor={self.executor}, db={self.db}{workers}"


def deployment_kind(executor: Executor = "local", db: MetadataDb | None = None, workers: int | None = None,
                    ) -> DeploymentKind:
    """The deployment ``eos airflow up --executor E --db D --workers N`` asks for, checked.

    ``--db`` defaults to SQLite for the LocalExecutor and PostgreSQL for Celery, ``--workers`` to 2.

    :raises AirflowDeploymentError: Celery on SQLite (Airflow refuses it), or workers without Celery.
    """
    if executor == "local":
        if workers:
            raise AirflowDeploymentError("--workers applies to the Celery executor only (the LocalExecutor runs "
                                         "tasks in the scheduler's own processes).",
                                         fix="add --executor celery, or drop --workers.")
        return DeploymentKind(executor="local", db=db or "sqlite")
    if db == "sqlite":
        raise AirflowDeploymentError("the Celery executor needs a metadata DB its workers' tasks and the scheduler "
                                     "can share over the network; Airflow refuses SQLite with it.",
                                     fix="use --db postgres (the default with --executor celery).")
    count = 2 if workers is None else workers
    if not 1 <= count <= 8:
        raise AirflowDeploymentError(f"--workers {count}: the devstack runs 1 to 8 Celery workers on this machine.",
                                     fix="pass --workers between 1 and 8.")
    return DeploymentKind(executor="celery", db="postgres", workers=count)


def worker_names(count: int) -> list[str]:
    """``worker-1`` ... ``worker-N``: each worker's name, and the queue only it consumes."""
    return [f"worker-{n}" for n in range(1, count + 1)]


class PostgresServer(BaseModel):
    """The metadata DB's PostgreSQL server (Debian's binaries), its data and socket in the deployment's folder."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pid: int
    port: int
    version: str
    bin_dir: str
    data_dir: str
    socket_dir: str
    #: The unprivileged OS user it runs as when ``up`` runs as root (PostgreSQL refuses root), else None.
    os_user: str | None
    log_file: str

    #: What the postmaster's command line holds (it keeps its argv; its children retitle themselves).
    marker: str = "bin/postgres\0-D\0"


class RedisServer(BaseModel):
    """The Celery broker: Debian's ``redis-server`` on 127.0.0.1, nothing persisted."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pid: int
    port: int
    work_dir: str
    log_file: str

    marker: str = "redis-server"


class CeleryWorker(BaseModel):
    """One ``airflow celery worker`` in its own pid and UTS namespace: a host of its own to Airflow and its tasks.

    Pids are as the machine (the root pid namespace) sees them: ``unshare_pid`` leads the process
    group ``down`` stops; ``init_pid`` is pid 1 inside (:mod:`.host_init`), whose end ends every
    process of the namespace; ``worker_pid`` is the Celery worker's main process, the one a test
    SIGKILLs to lose "the worker but not the host".
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    hostname: str
    queues: list[str]
    unshare_pid: int
    init_pid: int
    worker_pid: int
    #: ``/proc/<init_pid>/ns/pid`` and ``.../uts`` as the kernel names them (``pid:[4026532...]``).
    pid_namespace: str
    uts_namespace: str
    work_dir: str
    log_file: str

    #: What ``unshare``'s command line holds: the init module it runs.
    marker: str = "airflow_provider_eos.devstack.host_init"


def postgres_url(port: int, password: str, *, driver: str = "postgresql+psycopg2") -> str:
    """The metadata DB's SQLAlchemy URL over TCP on 127.0.0.1 (a worker's task reaches it as any client would)."""
    return f"{driver}://{DB_USER}:{quote(password, safe='')}@127.0.0.1:{port}/{DB_NAME}"


def celery_environment(postgres_port: int, db_password: str, redis_port: int, redis_password: str,
                       *, concurrency: int = 2) -> dict[str, str]:
    """The ``AIRFLOW__*`` settings of the Celery executor, for every component and worker.

    Results go to the metadata DB (Celery's ``db+`` backend), not to Redis: Redis keeps nothing
    on disk, and a restarted Redis must not lose what the scheduler still has to read.
    """
    return {
        "AIRFLOW__CORE__EXECUTOR": "CeleryExecutor",
        "AIRFLOW__CELERY__BROKER_URL": f"redis://:{quote(redis_password, safe='')}@127.0.0.1:{redis_port}/0",
        "AIRFLOW__CELERY__RESULT_BACKEND": "db+" + postgres_url(postgres_port, db_password),
        "AIRFLOW__CELERY__WORKER_CONCURRENCY": str(concurrency),
        # One process sends the scheduler's tasks to Redis: the default (one per core but one) buys nothing here.
        "AIRFLOW__CELERY__SYNC_PARALLELISM": "1",
        "AIRFLOW__OPERATORS__DEFAULT_QUEUE": DEFAULT_QUEUE,
        # A worker that dies takes its tasks' supervisors (they run in its pool's processes), and with them
        # the heartbeats (every 5 s): the scheduler fails (or retries) such a task after this, not 5 minutes.
        "AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT": "60",
    }


def worker_environment(worker_name: str) -> dict[str, str]:
    """What one worker adds: Airflow's hostname read from the worker's own UTS namespace."""
    return {
        "AIRFLOW__CORE__HOSTNAME_CALLABLE": _HOSTNAME_CALLABLE,
        "EOS_CELERY_WORKER": worker_name,
    }
