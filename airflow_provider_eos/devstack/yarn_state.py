"""What the devstack knows about its Hadoop MiniCluster: the state file and the client configuration.

Pure models and files, no processes: :mod:`airflow_provider_eos.devstack.yarn` starts and stops
the cluster and records a :class:`YarnClusterInfo` in ``yarn-cluster.json``; any process reads it
back to find the JVM and the addresses.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

from pydantic import BaseModel, ConfigDict

from airflow_provider_eos.devstack.broker_config import free_port

__all__ = ["CLUSTER_CLASS", "STATE_FILE", "YarnClusterInfo", "YarnClusterStatus", "YarnPorts", "write_client_conf"]

STATE_FILE = "yarn-cluster.json"
CLUSTER_CLASS = "org.apache.hadoop.mapreduce.MiniHadoopClusterManager"


class YarnPorts(BaseModel):
    """The loopback ports the MiniCluster binds (all chosen here, none left to the defaults)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    namenode: int
    namenode_http: int
    resourcemanager: int
    scheduler: int
    resource_tracker: int
    rm_admin: int
    rm_webapp: int
    history: int
    history_webapp: int
    history_admin: int

    @classmethod
    def choose(cls) -> YarnPorts:
        chosen: set[int] = set()
        while len(chosen) < len(cls.model_fields):
            chosen.add(free_port())
        return cls(**dict(zip(cls.model_fields, sorted(chosen), strict=True)))


class YarnClusterInfo(BaseModel):
    """What ``yarn-cluster.json`` records about a MiniCluster (written as soon as its JVM is started)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pid: int
    hadoop_version: str
    state_dir: str
    ports: YarnPorts
    node_memory_mb: int
    node_vcores: int

    @property
    def resourcemanager_address(self) -> str:
        """``host:port`` of the ResourceManager's client RPC (``yarn.resourcemanager.address``)."""
        return f"127.0.0.1:{self.ports.resourcemanager}"

    @property
    def resourcemanager_url(self) -> str:
        """The ResourceManager's web UI and REST API (``/ws/v1/cluster/apps``)."""
        return f"http://127.0.0.1:{self.ports.rm_webapp}"

    @property
    def namenode_url(self) -> str:
        """``fs.defaultFS``: where ``hdfs://`` paths without an authority go."""
        return f"hdfs://127.0.0.1:{self.ports.namenode}"

    @property
    def webhdfs_url(self) -> str:
        """The NameNode's HTTP address; WebHDFS is ``<this>/webhdfs/v1`` (``fsspec``'s ``webhdfs`` needs no libhdfs)."""
        return f"http://127.0.0.1:{self.ports.namenode_http}"

    @property
    def spark_conf(self) -> dict[str, str]:
        """Spark settings for applications on this cluster: the driver binds the loopback interface too.

        In cluster deploy mode the driver runs in the application master's container and, without
        ``SPARK_LOCAL_IP``, binds the host's first non-loopback address; executors bind the host
        name the NodeManager registered (``localhost``). Not set through the NodeManager's
        ``admin-env``: it is appended (``127.0.0.1:127.0.0.1``) to the value Spark passes executors.
        """
        return {"spark.yarn.appMasterEnv.SPARK_LOCAL_IP": "127.0.0.1"}

    @property
    def yarn_dir(self) -> Path:
        return Path(self.state_dir) / "yarn"

    @property
    def hadoop_conf_dir(self) -> Path:
        """A client configuration (core-site, hdfs-site, yarn-site) for spark-submit's ``HADOOP_CONF_DIR``."""
        return self.yarn_dir / "conf"

    @property
    def log_file(self) -> Path:
        return self.yarn_dir / "cluster.log"


class YarnClusterStatus(BaseModel):
    """The recorded cluster and how much of it answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    info: YarnClusterInfo
    running: bool
    nodes_running: int

    @property
    def healthy(self) -> bool:
        return self.running and self.nodes_running >= 1


def write_client_conf(info: YarnClusterInfo) -> None:
    """The few client settings spark-submit needs; the full server configuration is in ``cluster-conf.xml``."""
    p = info.ports
    files = {
        "core-site.xml": {"fs.defaultFS": info.namenode_url},
        "hdfs-site.xml": {"dfs.namenode.http-address": f"127.0.0.1:{p.namenode_http}", "dfs.replication": "1"},
        "yarn-site.xml": {
            "yarn.resourcemanager.hostname": "127.0.0.1",
            "yarn.resourcemanager.address": info.resourcemanager_address,
            "yarn.resourcemanager.scheduler.address": f"127.0.0.1:{p.scheduler}",
            "yarn.resourcemanager.admin.address": f"127.0.0.1:{p.rm_admin}",
            "yarn.resourcemanager.webapp.address": f"127.0.0.1:{p.rm_webapp}",
        },
    }
    info.hadoop_conf_dir.mkdir(parents=True, exist_ok=True)
    for name, properties in files.items():
        body = "".join(
            f"  <property><name>{escape(key)}</name><value>{escape(value)}</value></property>\n"
            for key, value in properties.items()
        )
        (info.hadoop_conf_dir / name).write_text(f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n')
