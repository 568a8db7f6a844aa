"""The tests' Spark standalone cluster: the product's :class:`SparkCluster` (``eos devstack up --spark-workers``).

Its workers advertise different loopback host names, so speculative attempts can run on another
"host"; a reaper stops the cluster if the test process dies without its cleanup.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from airflow_provider_eos.devstack.spark_cluster import WORKER_HOSTS, SparkCluster, SparkClusterInfo

__all__ = ["WORKER_HOSTS", "StandaloneCluster"]


class StandaloneCluster:
    """Master and workers in ``state_dir``; :meth:`up` returns once every worker registered with the master."""

    def __init__(self, state_dir: Path, workers: int = 2, worker_memory: str = "1g") -> None:
        self.workers, self.worker_memory = workers, worker_memory
        self._cluster = SparkCluster(state_dir)
        self.info: SparkClusterInfo | None = None

    @property
    def master_url(self) -> str:
        assert self.info is not None, "the cluster is not up"
        return self.info.master_url

    def up(self, timeout_s: float = 90) -> StandaloneCluster:
        self.info = self._cluster.up(workers=self.workers, worker_memory=self.worker_memory, timeout_s=timeout_s,
                                     stop_with_pid=os.getpid())
        return self

    def wait_until_idle(self, timeout_s: float = 120) -> None:
        """Return once every worker host has one ALIVE worker with all its cores free and no application runs.

        An application granted fewer executors than its test expects (a core still held by the previous
        test's application while it exits) runs its tasks on one host: a speculative copy, which Spark
        never starts on the host of the attempt it copies, then has nowhere to run.
        """
        hosts = sorted(WORKER_HOSTS[i % len(WORKER_HOSTS)] for i in range(self.workers))
        deadline = time.monotonic() + timeout_s
        while True:
            view = self._cluster.master_view()
            alive = [w for w in view.workers if w.state == "ALIVE"] if view else []
            if (view is not None and sorted(w.host for w in alive) == hosts
                    and all(w.coresfree == w.cores for w in alive) and not view.activeapps):
                return
            if time.monotonic() > deadline:
                seen = "its master did not answer" if view is None else (
                    f"workers {[(w.host, w.state, w.coresfree, w.cores) for w in view.workers]}, "
                    f"applications {[(a.id, a.name, a.state) for a in view.activeapps]}")
                raise AssertionError(f"the standalone cluster was not idle within {timeout_s:.0f} s: {seen}")
            time.sleep(0.5)

    def kill_worker(self, index: int) -> int:
        """SIGKILL worker ``index`` with its executors (a crashed host); returns its pid."""
        return self._cluster.kill_worker(index).pid

    def restart_worker(self, index: int) -> None:
        self.info = self._cluster.restart_worker(index)

    def down(self) -> None:
        self._cluster.down()
        self.info = None
