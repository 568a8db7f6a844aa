"""A Spark standalone cluster on 127.0.0.1: a master and workers from PySpark's own ``spark-class``.

Used by ``eos devstack up --spark-workers N`` and by the ``spark_standalone`` test fixture: one
code path. Every daemon leads its own session, so stopping its process group also stops the
executors (and their Python workers) it launched. What runs is recorded in ``spark-cluster.json``
(:mod:`~airflow_provider_eos.devstack.spark_cluster_state`) in the state folder, so
``eos devstack down`` or ``status`` in another process finds it. Logs, work and local folders
live in ``<state folder>/spark``. Workers advertise different host names that all resolve to the
loopback address (``127.0.0.1``, ``localhost``): Spark launches a speculative copy of a task only
on a host without an attempt of it, so speculation needs two "hosts" on one machine.
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Literal

from airflow_provider_eos.core.errors import SparkClusterError
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.broker_config import BIND_FAILURE, free_port
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.process_groups import runs, stop_groups
from airflow_provider_eos.devstack.recorded import RecordedDaemons
from airflow_provider_eos.devstack.spark_cluster_state import (
    MASTER_CLASS,
    STATE_FILE,
    WORKER_CLASS,
    MasterView,
    SparkClusterInfo,
    SparkClusterStatus,
    SparkDaemon,
    check_worker_settings,
    parse_master_json,
)

__all__ = ["WORKER_HOSTS", "SparkCluster", "SparkClusterInfo", "SparkClusterStatus", "reap"]

log = logging.getLogger(__name__)

#: Loopback names a worker may advertise; each is a different "host" to Spark's scheduler.
WORKER_HOSTS = ("127.0.0.1", "localhost")
_MASTER_START_ATTEMPTS = 3  # a free port can be taken by another program between choosing and binding it

# The waits of :meth:`SparkCluster.up`, each bounded by the caller's timeout.
MASTER_ANSWERS = RetryPolicy(waiting_for="the Spark master's web UI", timeout_s=60, first_delay_s=0.3, max_delay_s=0.5)
WORKERS_REGISTER = RetryPolicy(
    waiting_for="every worker to register with the master", timeout_s=90, first_delay_s=0.3, max_delay_s=0.5
)


class SparkCluster(RecordedDaemons[SparkClusterInfo]):
    """Start, stop and describe the Spark standalone cluster recorded in ``state_dir``.

    :param state_dir: the devstack folder (shared with the broker); one cluster per folder.
    :param daemon_memory: heap of the master and worker JVMs themselves (executors get the worker memory).
    """

    state_name = STATE_FILE
    what = "Spark cluster"
    work_name = "spark"
    info_type = SparkClusterInfo
    error_type = SparkClusterError

    def __init__(self, state_dir: Path | str | None = None, *, daemon_memory: str = "256m") -> None:
        super().__init__(state_dir)
        self.daemon_memory = daemon_memory

    @property
    def _spark_dir(self) -> Path:
        return self.work_dir

    def leaders(self, info: SparkClusterInfo) -> dict[int, str]:
        return {d.pid: d.main_class for d in info.daemons}

    def status(self, *, http_timeout_s: float = 2) -> SparkClusterStatus | None:
        """The recorded cluster and how much of it runs, or None if none is recorded."""
        info = self.recorded()
        if info is None:
            return None
        running = {d.pid for d in info.daemons if pid_alive(d.pid) and runs(d.pid, d.main_class)}
        master_running = any(pid in running for pid in info.pids("master"))
        view = self._master_view(info, http_timeout_s) if master_running else None
        return SparkClusterStatus(
            info=info,
            master_running=master_running,
            workers_running=sum(1 for pid in info.pids("worker") if pid in running),
            workers_registered=view.alive_workers if view else 0,
        )

    def up(
        self,
        *,
        workers: int = 2,
        worker_memory: str = "1g",
        worker_cores: int = 1,
        timeout_s: float = 90,
        stop_with_pid: int | None = None,
    ) -> SparkClusterInfo:
        """Start a master and ``workers`` workers; return once the master lists every worker ALIVE.

        Idempotent: a healthy cluster with the same settings is returned; a partly running one is
        stopped and started anew. On any failure, what was started is stopped.

        :param stop_with_pid: stop the cluster when this process dies, even without its cleanup
            (SIGKILL, a CI timeout); the test fixture passes its own pid.
        :raises SparkClusterError: the settings are unusable, another cluster with other settings
            runs from this folder, or the cluster did not come up (the message names the log).
        """
        check_worker_settings(workers, worker_cores, worker_memory)
        self.folder.claim()
        current = self.status()
        if current is not None:
            settings = (current.info.workers, current.info.worker_cores, current.info.worker_memory)
            if current.healthy and settings == (workers, worker_cores, worker_memory):
                return current.info
            if current.healthy:
                raise SparkClusterError(
                    f"A Spark cluster already runs at {current.info.master_url} with {settings[0]} workers of "
                    f"{settings[1]} core(s) and {settings[2]}, not {workers} of {worker_cores} and {worker_memory}.",
                    fix="run `eos devstack down` first, then `eos devstack up` with the new values.",
                )
            log.warning("Stopping the partly running Spark cluster of %s to start it anew.", self.state_dir)
            self.down()
        from airflow_provider_eos.devstack.jars import pyspark_jars_dir, require_java

        require_java()
        spark_home = pyspark_jars_dir().parent  # the full PySpark distribution, with bin/spark-class
        (self._fresh_work_dir() / "conf").mkdir()  # empty: no user spark-defaults.conf or spark-env.sh
        info = SparkClusterInfo(
            master_port=0, webui_port=0, workers=workers, worker_cores=worker_cores, worker_memory=worker_memory,
            state_dir=str(self.state_dir), daemons=[],
        )
        deadline = time.monotonic() + timeout_s
        try:
            info = self._start_master(spark_home, info, timeout_s)
            for i in range(workers):
                host = WORKER_HOSTS[i % len(WORKER_HOSTS)]
                # Port 0: the OS picks the worker's RPC and web UI ports, so no race with another stack.
                args = [WORKER_CLASS, "--host", host, "--port", "0", "--webui-port", "0",
                        "--cores", str(worker_cores), "--memory", worker_memory, info.master_url]
                worker = self._spawn(spark_home, "worker", f"worker-{i}", host, args, {})
                info = self._record(info.model_copy(update={"daemons": [*info.daemons, worker]}))
            if stop_with_pid is not None:
                self._start_reaper(stop_with_pid)
            self._wait_for_workers(info, max(1.0, deadline - time.monotonic()))
        except BaseException:
            self.down(keep_logs=True)  # the error names a log file: it must still be there to read
            raise
        return info

    def kill_worker(self, index: int) -> SparkDaemon:
        """SIGKILL worker ``index``'s process group, as a crashed host: the worker JVM, the executors it
        launched and their Python workers. Returns the killed daemon; :meth:`restart_worker` brings it back."""
        _, worker = self._worker(index)
        stop_groups({worker.pid: worker.main_class}, timeout_s=0, crash=True)
        return worker

    def restart_worker(self, index: int, *, timeout_s: float = 90) -> SparkClusterInfo:
        """Start worker ``index`` anew (same host name, new ports); return once the master lists it ALIVE.

        The master keeps a killed worker ALIVE until its heartbeat times out, so the wait is for a
        worker id it did not list before, not for a count.
        """
        from airflow_provider_eos.devstack.jars import pyspark_jars_dir

        info, old = self._worker(index)
        if pid_alive(old.pid) and runs(old.pid, old.main_class):
            raise SparkClusterError(f"Spark worker {index} (pid {old.pid}) still runs.",
                                    fix="kill it first (SparkCluster.kill_worker) or leave it running.")
        view = self._master_view(info, http_timeout_s=2)
        known = {w.id for w in view.workers} if view else set()
        name = Path(old.log_file).stem
        args = [WORKER_CLASS, "--host", old.host, "--port", "0", "--webui-port", "0",
                "--cores", str(info.worker_cores), "--memory", info.worker_memory, info.master_url]
        worker = self._spawn(pyspark_jars_dir().parent, "worker", name, old.host, args, {})
        daemons = [worker if d.pid == old.pid else d for d in info.daemons]
        info = self._record(info.model_copy(update={"daemons": daemons}))

        def registered_or_exited() -> bool:
            current = self._master_view(info, http_timeout_s=2)
            fresh = current is not None and any(w.id not in known and w.state == "ALIVE" for w in current.workers)
            return fresh or not pid_alive(worker.pid)

        waited = WORKERS_REGISTER.bounded(timeout_s=timeout_s).poll(
            registered_or_exited, until=bool, what=f"registration of the restarted worker {index}")
        if not waited.settled or not pid_alive(worker.pid):
            raise SparkClusterError(f"Spark worker {index} did not register again at {info.master_url}.",
                                    fix=f"read {worker.log_file}.")
        return info

    def _worker(self, index: int) -> tuple[SparkClusterInfo, SparkDaemon]:
        info = self.recorded()
        workers = [d for d in info.daemons if d.role == "worker"] if info else []
        if not 0 <= index < len(workers):
            raise SparkClusterError(f"No Spark worker {index} in {self.state_dir} ({len(workers)} recorded).",
                                    fix="start the cluster (`eos devstack up --spark-workers N`) or pick an index "
                                        f"below {len(workers)}.")
        return info, workers[index]

    def _start_master(self, spark_home: Path, info: SparkClusterInfo, timeout_s: float) -> SparkClusterInfo:
        for attempt in range(1, _MASTER_START_ATTEMPTS + 1):
            port = free_port()
            webui_port = free_port()
            while webui_port == port:
                webui_port = free_port()
            args = [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(webui_port)]
            # No REST submission server (it would take the fixed port 6066), and no quiet move to the
            # next port when ours is taken (the recorded URL would be wrong): exit, and we choose again.
            opts = {"SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false -Dspark.port.maxRetries=0"}
            master = self._spawn(spark_home, "master", "master", "127.0.0.1", args, opts)
            info = self._record(
                info.model_copy(update={"master_port": port, "webui_port": webui_port, "daemons": [master]})
            )
            if self._wait_for_master(info, master, timeout_s):
                return info
            log.warning("The Spark master lost a port to another program (attempt %d); choosing again.", attempt)
        raise SparkClusterError(
            f"The Spark master could not bind free ports in {_MASTER_START_ATTEMPTS} attempts.",
            fix=f"read {info.master_log}.",
        )

    def _spawn(
        self, spark_home: Path, role: Literal["master", "worker"], name: str, host: str, args: list[str],
        extra_env: dict[str, str],
    ) -> SparkDaemon:
        env = {**os.environ, "SPARK_HOME": str(spark_home), "SPARK_CONF_DIR": str(self._spark_dir / "conf"),
               "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_LOCAL_HOSTNAME": host, "SPARK_DAEMON_MEMORY": self.daemon_memory,
               "SPARK_WORKER_DIR": str(self._spark_dir / name / "work"),
               "SPARK_LOCAL_DIRS": str(self._spark_dir / name / "local"), **extra_env}
        log_file = self._spark_dir / f"{name}.log"
        with log_file.open("w") as out:
            process = subprocess.Popen(
                [str(spark_home / "bin" / "spark-class"), *args], stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, env=env, start_new_session=True,
            )
        return SparkDaemon(role=role, pid=process.pid, host=host, log_file=str(log_file))

    def master_view(self, *, http_timeout_s: float = 2) -> MasterView | None:
        """The recorded master's ``/json/`` now: its workers and applications; None if it does not answer."""
        info = self.recorded()
        return None if info is None else self._master_view(info, http_timeout_s)

    @staticmethod
    def _master_view(info: SparkClusterInfo, http_timeout_s: float) -> MasterView | None:
        """The master's ``/json/``; None while it does not answer or when the port serves another master."""
        try:
            with urllib.request.urlopen(f"{info.webui_url}/json/", timeout=http_timeout_s) as response:
                view = parse_master_json(response.read())
        except (OSError, SparkClusterError):  # URLError and timeouts are OSErrors
            return None
        return view if view.serves(info) else None

    def _wait_for_master(self, info: SparkClusterInfo, master: SparkDaemon, timeout_s: float) -> bool:
        """True once the master answers; False if it exited on a taken port; an error otherwise."""

        def answers_or_exited() -> bool:
            return not pid_alive(master.pid) or self._master_view(info, http_timeout_s=2) is not None

        waited = MASTER_ANSWERS.bounded(timeout_s=timeout_s).poll(
            answers_or_exited, until=bool, what=f"start of the Spark master {info.master_url}"
        )
        exited = not pid_alive(master.pid)
        if waited.settled and not exited:
            return True
        log_text = Path(master.log_file).read_text(errors="replace")
        if exited and BIND_FAILURE.search(log_text):
            stop_groups({master.pid: master.main_class}, timeout_s=10)  # reaps the zombie
            return False
        raise SparkClusterError(
            f"The Spark master {info.master_url} did not come up within {timeout_s:.0f}s"
            f"{' (it exited)' if exited else ''}:\n{_tail(log_text)}",
            fix=f"read {master.log_file}.",
        )

    def _wait_for_workers(self, info: SparkClusterInfo, timeout_s: float) -> None:
        def registered_or_exited() -> bool:
            if any(not pid_alive(daemon.pid) for daemon in info.daemons):
                return True  # a dead daemon will not register: stop waiting
            view = self._master_view(info, http_timeout_s=2)
            return view is not None and view.alive_workers >= info.workers

        waited = WORKERS_REGISTER.bounded(timeout_s=timeout_s).poll(
            registered_or_exited, until=bool, what=f"registration of {info.workers} workers at {info.master_url}"
        )
        exited = [daemon for daemon in info.daemons if not pid_alive(daemon.pid)]
        if waited.settled and not exited:
            return
        culprit = exited[0] if exited else info.daemons[0]
        reason = f"the {culprit.role} (pid {culprit.pid}) exited" if exited else f"not within {timeout_s:.0f}s"
        raise SparkClusterError(
            f"The Spark cluster {info.master_url} did not get its {info.workers} workers registered: {reason}:\n"
            f"{_tail(Path(culprit.log_file).read_text(errors='replace'))}",
            fix=f"read {culprit.log_file} (all logs: {info.log_dir}).",
        )

#: The body of the reaper process (:func:`~airflow_provider_eos.devstack.process_groups.start_reaper`).
reap = SparkCluster.reap


def _tail(text: str, lines: int = 20) -> str:
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"
