"""Hadoop's own test cluster (HDFS + YARN) on 127.0.0.1, for Spark's cluster deploy mode.

Spark's standalone manager runs no Python application in cluster deploy mode; YARN does. This
starts Hadoop's CLI MiniCluster (``org.apache.hadoop.mapreduce.MiniHadoopClusterManager`` from
``hadoop-minicluster``, resolved from Maven Central at the Hadoop version PySpark ships) as one
JVM: a NameNode and a DataNode, a ResourceManager, a NodeManager and a JobHistoryServer. Every
address is on the loopback interface on a port chosen here (the MiniCluster's "fixed ports" mode
binds exactly those); only MapReduce's shuffle service, which the MiniCluster always adds to the
NodeManager, listens on an OS-chosen port of every interface. The JVM leads its own session; the
NodeManager starts each YARN container (Spark drivers, executors and their Python workers) in a
session of its own, so ``down`` stops the JVM's group and every process descending from it. What
runs is recorded in ``yarn-cluster.json`` in the state folder, so ``down`` and ``status`` work
from another process; data, logs and the client configuration (``HADOOP_CONF_DIR`` for
spark-submit) live in ``<state folder>/yarn``.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import time
import urllib.request
from pathlib import Path

from airflow_provider_eos.core.errors import PrerequisiteError, YarnClusterError
from airflow_provider_eos.core.progress import say
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.broker_config import BIND_FAILURE
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.jars import _resolve, eos_home, pyspark_jars_dir, require_java
from airflow_provider_eos.devstack.process_groups import runs
from airflow_provider_eos.devstack.recorded import RecordedDaemons
from airflow_provider_eos.devstack.yarn_state import (
    CLUSTER_CLASS,
    STATE_FILE,
    YarnClusterInfo,
    YarnClusterStatus,
    YarnPorts,
    write_client_conf,
)

__all__ = [
    "CLUSTER_CLASS", "STATE_FILE", "YarnClusterInfo", "YarnClusterStatus", "YarnMiniCluster", "YarnPorts",
    "hadoop_minicluster_jars_dir", "pyspark_hadoop_version", "reap",
]

log = logging.getLogger(__name__)

_HADOOP_CLIENT_JAR = re.compile(r"^hadoop-client-api-(?P<version>\d[\w.\-]*)\.jar$")
_START_ATTEMPTS = 3  # a free port can be taken by another program between choosing and binding it

CLUSTER_READY = RetryPolicy(
    waiting_for="HDFS and YARN of the Hadoop MiniCluster", timeout_s=180, first_delay_s=0.5, max_delay_s=1.0
)


def pyspark_hadoop_version() -> str:
    """The Hadoop version of the client PySpark ships (``hadoop-client-api-<version>.jar``)."""
    for jar in pyspark_jars_dir().glob("hadoop-client-api-*.jar"):
        if match := _HADOOP_CLIENT_JAR.match(jar.name):
            return match.group("version")
    raise PrerequisiteError(
        f"No hadoop-client-api jar in {pyspark_jars_dir()}: this PySpark ships no Hadoop client.",
        fix="install the full `pyspark` distribution (`make install`).",
    )


def hadoop_minicluster_jars_dir(version: str | None = None) -> Path:
    """``hadoop-minicluster`` (default: the Hadoop version PySpark ships) with its runtime jars, via Maven."""
    version = version or pyspark_hadoop_version()
    return _resolve(
        "hadoop-minicluster-pom.xml", eos_home() / "jars" / f"hadoop-minicluster-{version}",
        {"hadoop.version": version},
    )


class YarnMiniCluster(RecordedDaemons[YarnClusterInfo]):
    """Start, stop and describe the Hadoop MiniCluster recorded in ``state_dir``.

    :param state_dir: the devstack folder (shared with the broker and the Spark cluster); one per folder.
    :param heap: ``-Xmx`` of the one JVM that runs every Hadoop daemon (containers are separate JVMs).
    """

    state_name = STATE_FILE
    what = "Hadoop MiniCluster"
    work_name = "yarn"
    info_type = YarnClusterInfo
    error_type = YarnClusterError

    def __init__(self, state_dir: Path | str | None = None, *, heap: str = "1g") -> None:
        super().__init__(state_dir)
        self.heap = heap

    @property
    def _yarn_dir(self) -> Path:
        return self.work_dir

    def leaders(self, info: YarnClusterInfo) -> dict[int, str]:
        # Its descendants too (stop_groups): the YARN containers are children of the NodeManagers.
        return {info.pid: CLUSTER_CLASS} if info.pid else {}

    def status(self, *, http_timeout_s: float = 2) -> YarnClusterStatus | None:
        """The recorded cluster, whether its JVM runs and how many NodeManagers the ResourceManager lists RUNNING."""
        info = self.recorded()
        if info is None:
            return None
        running = pid_alive(info.pid) and runs(info.pid, CLUSTER_CLASS)
        nodes = _running_nodes(info, http_timeout_s) if running else 0
        return YarnClusterStatus(info=info, running=running, nodes_running=nodes)

    def up(
        self,
        *,
        node_memory_mb: int = 6144,
        node_vcores: int = 4,
        timeout_s: float = 180,
        stop_with_pid: int | None = None,
    ) -> YarnClusterInfo:
        """Start HDFS and YARN; return once a NodeManager is RUNNING and WebHDFS answers.

        The NodeManager's resources are bookkeeping (memory checks are off): the defaults fit a
        Spark driver and two executors of Spark's default 1g (1408 MB containers each).
        Idempotent for a healthy cluster; a partly running one is stopped and started anew.

        :param stop_with_pid: stop the cluster when this process dies, even without its cleanup.
        :raises YarnClusterError: the cluster did not come up (the message holds the log's tail).
        """
        self.folder.claim()
        current = self.status()
        if current is not None and current.healthy:
            return current.info
        if current is not None:
            log.warning("Stopping the partly running YARN cluster of %s to start it anew.", self.state_dir)
            self.down()
        java = require_java()
        version = pyspark_hadoop_version()
        jars = hadoop_minicluster_jars_dir(version)
        # A minute or more on a small machine: the wait's own progress lines follow (core.retry).
        say(f"starting the Hadoop MiniCluster {version} (HDFS + YARN); logs: {self._yarn_dir / 'cluster.log'}")
        deadline = time.monotonic() + timeout_s
        for attempt in range(1, _START_ATTEMPTS + 1):
            (self._fresh_work_dir() / "tmp").mkdir()
            info = YarnClusterInfo(
                pid=0, hadoop_version=version, state_dir=str(self.state_dir), ports=YarnPorts.choose(),
                node_memory_mb=node_memory_mb, node_vcores=node_vcores,
            )
            try:
                info = self._record(info.model_copy(update={"pid": self._spawn(java, jars, info)}))
                if stop_with_pid is not None:
                    self._start_reaper(stop_with_pid)  # one per attempt: each watches its own JVM
                if self._wait_ready(info, max(1.0, deadline - time.monotonic())):
                    write_client_conf(info)
                    return info
            except BaseException:
                self.down(keep_logs=True)  # the error names cluster.log: it must still be there to read
                raise
            log.warning("The Hadoop MiniCluster lost a port to another program (attempt %d); choosing again.", attempt)
            # The log kept: the next attempt empties the folder anyway, and after the last one the error names it.
            self.down(keep_logs=True)
        raise YarnClusterError(
            f"The Hadoop MiniCluster could not bind free ports in {_START_ATTEMPTS} attempts.",
            fix=f"read {self._yarn_dir / 'cluster.log'}.",
        )

    def _spawn(self, java: str, jars: Path, info: YarnClusterInfo) -> int:
        yarn_dir, p = info.yarn_dir, info.ports
        settings = {
            # Every daemon on the loopback interface, on the ports chosen above.
            "yarn.resourcemanager.hostname": "127.0.0.1",
            "yarn.resourcemanager.scheduler.address": f"127.0.0.1:{p.scheduler}",
            "yarn.resourcemanager.resource-tracker.address": f"127.0.0.1:{p.resource_tracker}",
            "yarn.resourcemanager.admin.address": f"127.0.0.1:{p.rm_admin}",
            "yarn.resourcemanager.webapp.address": f"127.0.0.1:{p.rm_webapp}",
            "mapreduce.jobhistory.webapp.address": f"127.0.0.1:{p.history_webapp}",
            "mapreduce.jobhistory.admin.address": f"127.0.0.1:{p.history_admin}",
            # The MiniCluster reads the NodeManager's memory from its own key, not the NodeManager's.
            "yarn.minicluster.yarn.nodemanager.resource.memory-mb": str(info.node_memory_mb),
            "yarn.nodemanager.resource.cpu-vcores": str(info.node_vcores),
            "yarn.scheduler.minimum-allocation-mb": "256",
            "yarn.scheduler.maximum-allocation-mb": str(info.node_memory_mb),
            "yarn.scheduler.maximum-allocation-vcores": str(info.node_vcores),
            # A killed test can leave the next one's application waiting behind a 10% AM share.
            "yarn.scheduler.capacity.maximum-am-resource-percent": "0.5",
            # Spark's JVMs and Python workers exceed YARN's virtual-memory estimate on any real host.
            "yarn.nodemanager.vmem-check-enabled": "false",
            "yarn.nodemanager.pmem-check-enabled": "false",
            # A nearly full developer disk must not mark the only NodeManager UNHEALTHY.
            "yarn.nodemanager.disk-health-checker.max-disk-utilization-per-disk-percentage": "100",
            "dfs.replication": "1",
        }
        command = [
            java, f"-Xmx{self.heap}", f"-Djava.io.tmpdir={yarn_dir / 'tmp'}", f"-Dtest.build.data={yarn_dir / 'data'}",
            "-cp", str(jars / "*"), CLUSTER_CLASS, "-format", "-datanodes", "1", "-nodemanagers", "1",
            "-nnport", str(p.namenode), "-nnhttpport", str(p.namenode_http), "-rmport", str(p.resourcemanager),
            "-jhsport", str(p.history), "-writeConfig", str(yarn_dir / "cluster-conf.xml"),
            "-writeDetails", str(yarn_dir / "details.json"),
            *(arg for key, value in settings.items() for arg in ("-D", f"{key}={value}")),
        ]
        with info.log_file.open("w") as out:
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=yarn_dir,
                start_new_session=True,
            )
        return process.pid

    def _wait_ready(self, info: YarnClusterInfo, timeout_s: float) -> bool:
        """True once ready; False when a port was taken (retry); an error for anything else."""

        def bind_failed() -> bool:
            return bool(BIND_FAILURE.search(info.log_file.read_text(errors="replace")))

        def ready_or_failed() -> bool:
            if not pid_alive(info.pid):
                return True
            if (info.yarn_dir / "details.json").exists():  # written once HDFS and YARN both started
                return _running_nodes(info, 2) >= 1 and _webhdfs_answers(info)
            return bind_failed()  # a failed start can leave the JVM alive on non-daemon threads

        waited = CLUSTER_READY.bounded(timeout_s=timeout_s).poll(
            ready_or_failed, until=bool, what=f"start of the Hadoop MiniCluster in {info.yarn_dir}"
        )
        alive = pid_alive(info.pid)
        if waited.settled and alive and (info.yarn_dir / "details.json").exists():
            return True
        if bind_failed():
            return False
        reason = "its JVM exited" if not alive else f"not ready within {timeout_s:.0f}s"
        raise YarnClusterError(
            f"The Hadoop MiniCluster did not come up ({reason}):\n{_tail(info.log_file)}",
            fix=f"read {info.log_file}.",
        )

#: The body of the reaper process (:func:`~airflow_provider_eos.devstack.process_groups.start_reaper`).
reap = YarnMiniCluster.reap


def _get_json(url: str, timeout_s: float) -> dict | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as response:
            return json.load(response)
    except (OSError, ValueError):  # URLError, HTTPError and timeouts are OSErrors
        return None


def _running_nodes(info: YarnClusterInfo, timeout_s: float) -> int:
    answer = _get_json(f"{info.resourcemanager_url}/ws/v1/cluster/nodes", timeout_s)
    nodes = ((answer or {}).get("nodes") or {}).get("node") or []
    return sum(1 for node in nodes if node.get("state") == "RUNNING")


def _webhdfs_answers(info: YarnClusterInfo) -> bool:
    answer = _get_json(f"{info.webhdfs_url}/webhdfs/v1/?op=GETFILESTATUS", 2)
    return bool(answer and "FileStatus" in answer)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:]) or "(empty log)"
    except OSError:
        return f"(no log at {path})"
