"""What the devstack records about its brokers (``devstack.json``), and what ``down`` did.

A node's pid is read back from the state file, possibly after the node died and its pid was
given to another program; a node counts as running, and is signalled, only while the pid still
runs that node (:meth:`NodeInfo.running`: the check of
:func:`~airflow_provider_eos.devstack.process_groups.runs` that the Spark, YARN and Airflow
daemons pass too, with the node's config file as the mark).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.devstack.broker_config import NodeLayout
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.process_groups import runs
from airflow_provider_eos.devstack.security import read_client_config

__all__ = ["BrokerDown", "BrokerInfo", "NodeInfo"]


@dataclass(frozen=True)
class NodeInfo:
    """One node of the devstack cluster, as recorded when it started."""

    node_id: int
    pid: int
    port: int
    controller_port: int
    folder: str

    @property
    def layout(self) -> NodeLayout:
        return NodeLayout(self.node_id, self.port, self.controller_port, self.folder)

    @property
    def marker(self) -> str:
        """What the node's command line holds and another program's would not: its own config file."""
        return str(self.layout.config_file)

    def running(self) -> bool:
        """Whether the recorded pid still runs this node, not a program that was given the pid since."""
        return runs(self.pid, self.marker)

    def pid_reused(self) -> bool:
        """Whether the recorded pid runs another program now: never to be signalled."""
        return pid_alive(self.pid) and not self.running()


@dataclass(frozen=True)
class BrokerInfo:
    """Where a running devstack broker (or cluster: ``nodes``) is and how to reach it; ``pid`` is node 1's."""

    pid: int
    port: int
    controller_port: int
    state_dir: str
    transaction_max_timeout_ms: int
    #: ``plaintext``, ``sasl_plaintext`` or ``sasl_ssl`` (:data:`~airflow_provider_eos.devstack.security.Security`).
    security: str = "plaintext"
    #: The admin's librdkafka settings (JSON, mode 0600) of a secured broker; None for plaintext.
    client_config: str | None = None
    #: Every node, node 1 first (one for a single broker).
    nodes: tuple[NodeInfo, ...] = ()
    #: The Kafka version the nodes run (state files from before it was recorded ran the default of their day).
    kafka_version: str = "4.1.1"

    @property
    def every_node(self) -> tuple[NodeInfo, ...]:
        """:attr:`nodes`, or the one node a state file written before ``nodes`` existed describes."""
        return self.nodes or (NodeInfo(1, self.pid, self.port, self.controller_port, self.state_dir),)

    @classmethod
    def from_json(cls, text: str) -> BrokerInfo:
        data = json.loads(text)
        nodes = tuple(NodeInfo(**n) for n in data.pop("nodes", None) or ())
        return cls(**data, nodes=nodes)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @property
    def bootstrap_servers(self) -> str:
        ports = [n.port for n in self.nodes] or [self.port]
        return ",".join(f"127.0.0.1:{p}" for p in ports)

    def client_settings(self) -> dict[str, Any]:
        """librdkafka settings that reach this broker: the admin's ``client.config`` when secured. Holds secrets."""
        if self.client_config is None:
            return {"bootstrap.servers": self.bootstrap_servers}
        return read_client_config(self.client_config)

    @property
    def log_file(self) -> Path:
        """Node 1's log."""
        return self.nodes[0].layout.log_file if self.nodes else Path(self.state_dir) / "logs" / "server.log"

    def node(self, node_id: int) -> NodeInfo:
        """The node with ``node_id``.

        :raises DevstackError: naming the node ids there are.
        """
        for candidate in self.nodes:
            if candidate.node_id == node_id:
                return candidate
        raise DevstackError(f"the devstack has no broker with node id {node_id}; its nodes are "
                            f"{[n.node_id for n in self.nodes]}",
                            fix="pass one of those ids (see `eos devstack status`)")

    def refuse_other_settings(self, security: str, transaction_max_timeout_ms: int, brokers: int,
                              kafka_version: str) -> None:
        """Refuse an ``up`` asking for other settings than this running devstack's (returning it would ignore them).

        :raises DevstackError: naming the setting, what runs, and the ``down`` then ``up`` that changes it.
        """

        def refuse(what: str, flag: str) -> DevstackError:
            return DevstackError(f"A devstack already runs at {self.bootstrap_servers} with {what}.",
                                 fix=f"run `eos devstack down` first, then `eos devstack up {flag}`.")

        if self.security != security:
            raise refuse(f"security {self.security}, not {security}", f"--security {security}")
        if self.transaction_max_timeout_ms != transaction_max_timeout_ms:
            raise refuse(f"transaction.max.timeout.ms={self.transaction_max_timeout_ms}, not "
                         f"{transaction_max_timeout_ms}", f"--transaction-max-timeout-ms {transaction_max_timeout_ms}")
        if len(self.every_node) != brokers:
            raise refuse(f"{len(self.every_node)} broker(s), not {brokers}", f"--brokers {brokers}")
        if self.kafka_version != kafka_version:
            raise refuse(f"Kafka {self.kafka_version}, not {kafka_version}", f"--kafka-version {kafka_version}")

    def alive(self) -> bool:
        """Whether any node still runs (a cluster with one node killed is still up)."""
        return any(n.running() for n in self.every_node)


@dataclass(frozen=True)
class BrokerDown:
    """What :meth:`~airflow_provider_eos.devstack.broker.LocalKafka.down` did; true when a broker was running."""

    #: The pids of the nodes it stopped.
    stopped: tuple[int, ...] = ()
    #: Nodes whose recorded pid runs another program now (the node died, the pid was reused): not signalled.
    left_alone: tuple[NodeInfo, ...] = ()
    #: What the state folder still holds that is not the broker's (then the folder stays).
    kept: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.stopped)
