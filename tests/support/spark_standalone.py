"""A Spark standalone cluster for tests: a master and workers from PySpark's own ``spark-class``.

Bound to 127.0.0.1 on free ports, one core and modest memory per worker, logs and work
folders in its own state folder, every process in its own session so ``down`` (and a failed
start) kills whole process groups. The workers advertise different host names that all resolve
to the loopback address (``127.0.0.1``, ``localhost``): Spark launches a speculative copy of a
task only on a host without an attempt of it, so speculation needs two "hosts" on one machine.
(The clusters issue turns this into ``eos devstack up --spark-workers N``.)
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pyspark

from airflow_provider_eos.devstack.broker import free_port

#: Loopback names a worker may advertise; each is a different "host" to Spark's scheduler.
WORKER_HOSTS = ("127.0.0.1", "localhost")


class StandaloneCluster:
    """Master and workers; :meth:`up` returns once every worker registered with the master."""

    def __init__(self, state_dir: Path, workers: int = 2, worker_memory: str = "1g") -> None:
        self.state_dir, self.workers, self.worker_memory = state_dir, workers, worker_memory
        self.spark_home = Path(pyspark.__file__).parent
        self.port = free_port()
        self._processes: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _start(self, name: str, args: list[str], host: str) -> subprocess.Popen:
        env = {**os.environ, "SPARK_HOME": str(self.spark_home), "SPARK_LOCAL_IP": "127.0.0.1",
               "SPARK_LOCAL_HOSTNAME": host, "SPARK_WORKER_DIR": str(self.state_dir / f"{name}-work"),
               "SPARK_DAEMON_MEMORY": "256m",
               # No REST submission server: it would take the fixed port 6066.
               "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false"}
        log = (self.state_dir / f"{name}.log").open("w")
        process = subprocess.Popen([str(self.spark_home / "bin" / "spark-class"), *args], stdout=log,
                                   stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._processes.append(process)
        return process

    def up(self, timeout_s: float = 90) -> StandaloneCluster:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._start("master", ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                                   str(self.port), "--webui-port", str(free_port())], "127.0.0.1")
            for i in range(self.workers):
                host = WORKER_HOSTS[i % len(WORKER_HOSTS)]
                self._start(f"worker-{i}", ["org.apache.spark.deploy.worker.Worker", "--host", host, "--port",
                                            str(free_port()), "--webui-port", str(free_port()), "--cores", "1",
                                            "--memory", self.worker_memory, self.master_url], host)
            self._wait_for_workers(timeout_s)
        except BaseException:
            self.down()
            raise
        return self

    def _wait_for_workers(self, timeout_s: float) -> None:
        master_log = self.state_dir / "master.log"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            registered = len(re.findall(r"Registering worker", master_log.read_text(errors="replace")))
            if registered >= self.workers:
                return
            if any(p.poll() is not None for p in self._processes):
                break
            time.sleep(0.5)
        raise RuntimeError(f"the standalone cluster did not come up within {timeout_s}s; see {self.state_dir}/*.log")

    def down(self) -> None:
        for process in reversed(self._processes):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(30)
        self._processes.clear()
