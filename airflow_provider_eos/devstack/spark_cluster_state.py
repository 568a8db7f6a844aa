"""What the devstack knows about its Spark standalone cluster: the state file and the master's ``/json/``.

Pure models, no processes: :mod:`airflow_provider_eos.devstack.spark_cluster` starts and stops
the cluster and records a :class:`SparkClusterInfo` in ``spark-cluster.json``; any process reads
it back to find the daemons, and reads the master's web UI ``/json/`` as a :class:`MasterView`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from airflow_provider_eos.core.cluster_records import StandaloneMasterRecord
from airflow_provider_eos.core.errors import SparkClusterError

__all__ = [
    "MASTER_CLASS",
    "STATE_FILE",
    "WORKER_CLASS",
    "MasterView",
    "SparkClusterInfo",
    "SparkClusterStatus",
    "SparkDaemon",
    "check_worker_settings",
    "parse_master_json",
]

STATE_FILE = "spark-cluster.json"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
_JVM_MEMORY = re.compile(r"^[1-9]\d*[kmgt]?$", re.IGNORECASE)


class SparkDaemon(BaseModel):
    """One master or worker process; its pid is also its process group (it leads its own session)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: Literal["master", "worker"]
    pid: int
    host: str
    log_file: str

    @property
    def main_class(self) -> str:
        """The JVM main class its command line holds (tells it apart from a later owner of the pid)."""
        return MASTER_CLASS if self.role == "master" else WORKER_CLASS


class SparkClusterInfo(BaseModel):
    """What ``spark-cluster.json`` records about a cluster (written before each daemon is waited for)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    master_port: int
    webui_port: int
    workers: int
    worker_cores: int
    worker_memory: str
    state_dir: str
    daemons: list[SparkDaemon]

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @property
    def webui_url(self) -> str:
        return f"http://127.0.0.1:{self.webui_port}"

    @property
    def log_dir(self) -> Path:
        return Path(self.state_dir) / "spark"

    @property
    def master_log(self) -> Path:
        return self.log_dir / "master.log"

    def pids(self, role: Literal["master", "worker"] | None = None) -> list[int]:
        return [d.pid for d in self.daemons if role is None or d.role == role]


class MasterView(StandaloneMasterRecord):
    """The master's web UI ``/json/`` document (its model is the core's), with what the devstack asks of it."""

    @property
    def alive_workers(self) -> int:
        """Workers the master counts as ALIVE (it keeps a killed one ALIVE until its heartbeat times out)."""
        return sum(1 for worker in self.workers if worker.state == "ALIVE")

    def serves(self, info: SparkClusterInfo) -> bool:
        """Whether this is the recorded cluster's master, elected and answering."""
        return self.url == info.master_url and self.status == "ALIVE"


@dataclass(frozen=True)
class SparkClusterStatus:
    """A recorded cluster and how much of it runs.

    :param workers_running: recorded worker processes that are alive.
    :param workers_registered: workers the master lists as ALIVE (0 when it does not answer).
    """

    info: SparkClusterInfo
    master_running: bool
    workers_running: int
    workers_registered: int

    @property
    def workers_alive(self) -> int:
        """A worker counts when its process runs and the master lists it; either alone can be stale."""
        return min(self.workers_running, self.workers_registered) if self.master_running else 0

    @property
    def healthy(self) -> bool:
        return self.master_running and self.workers_alive == self.info.workers


def parse_master_json(text: str | bytes) -> MasterView:
    """The master's ``/json/`` document; a :class:`SparkClusterError` if it is not one."""
    try:
        return MasterView.model_validate_json(text)
    except ValidationError as exc:
        raise SparkClusterError(
            f"The Spark master's /json/ answer is not the document expected ({exc.error_count()} errors: {exc}).",
            fix="check that the web UI port belongs to the devstack's master (`eos devstack status`).",
        ) from exc


def check_worker_settings(workers: int, worker_cores: int, worker_memory: str) -> None:
    """Refuse settings no worker can start with, before anything starts."""
    if workers < 1 or worker_cores < 1:
        raise SparkClusterError(
            f"A Spark cluster needs at least one worker with at least one core, got {workers} x {worker_cores}.",
            fix="pass --spark-workers 1 or more.",
        )
    if not _JVM_MEMORY.match(worker_memory):
        raise SparkClusterError(
            f"Worker memory {worker_memory!r} is not a JVM memory size.", fix="pass e.g. --spark-worker-memory 1g."
        )
