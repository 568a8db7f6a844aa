"""The devstack brokers' ``server.properties``: one KRaft node of a one- or three-node cluster.

Every node is both broker and controller (KRaft combined mode), so a three-node cluster keeps
its controller quorum, and its partitions' leaders, when any one node is killed, paused or
restarted. With three nodes the internal topics and new topics get replication factor 3,
``min.insync.replicas`` 2 and no unclean leader election: what a small production cluster runs,
and what the soak's broker faults need to be survivable without losing a committed record.
"""

from __future__ import annotations

import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["BIND_FAILURE", "NodeLayout", "bind_failed", "choose_layouts", "free_port", "server_properties",
           "taken_ports"]

#: What a JVM (a broker, Spark, Hadoop) logs when a port it was given is taken by the time it binds it.
BIND_FAILURE = re.compile(r"BindException|Address already in use")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now.

    Only now: another program can take it before the JVM it is meant for binds it, which then
    exits (:data:`BIND_FAILURE`); the devstack's parts choose again when that happens.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass(frozen=True)
class NodeLayout:
    """One node's id, ports and folder (config, data, logs)."""

    node_id: int
    port: int
    controller_port: int
    folder: str

    @property
    def data_dir(self) -> Path:
        return Path(self.folder) / "data"

    @property
    def config_file(self) -> Path:
        return Path(self.folder) / "server.properties"

    @property
    def log_dir(self) -> Path:
        return Path(self.folder) / "logs"

    @property
    def log_file(self) -> Path:
        return self.log_dir / "server.log"


def server_properties(node: NodeLayout, nodes: Sequence[NodeLayout], txn_max_timeout_ms: int,
                      security: Mapping[str, str] | None = None) -> str:
    """The ``server.properties`` of ``node`` in a cluster of ``nodes`` (one or three).

    :param security: listener settings replacing the plaintext ones (a secured devstack).
    """
    replicas = len(nodes)
    min_isr = 1 if replicas == 1 else 2
    settings = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": ",".join(f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in nodes),
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(node.data_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "default.replication.factor": str(replicas),
        "min.insync.replicas": str(min_isr),
        "unclean.leader.election.enable": "false",
        "offsets.topic.replication.factor": str(replicas),
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": str(replicas),
        "transaction.state.log.min.isr": str(min_isr),
        "transaction.state.log.num.partitions": "10",
        "share.coordinator.state.topic.replication.factor": str(replicas),
        "share.coordinator.state.topic.min.isr": str(min_isr),
        "group.initial.rebalance.delay.ms": "0",
        "transaction.max.timeout.ms": str(txn_max_timeout_ms),
        # Timed-out transactions are aborted within a second instead of ten, so tests of
        # transaction timeouts and lingering transactions run fast.
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        "log.segment.bytes": str(64 * 1024 * 1024),
    }
    if replicas > 1:
        # A restarted node rejoins within seconds, not after the default 9 s session; a killed one
        # is fenced by the quorum as soon as its heartbeats stop.
        settings |= {"broker.session.timeout.ms": "6000", "broker.heartbeat.interval.ms": "1000"}
    settings.update(security or {})
    return "".join(f"{k}={v}\n" for k, v in settings.items())


def choose_layouts(state_dir: Path, brokers: int) -> list[NodeLayout]:
    """``brokers`` nodes on free ports, two each and no port twice, in ``state_dir``."""
    taken: set[int] = set()

    def port() -> int:
        found = free_port()
        while found in taken:
            found = free_port()
        taken.add(found)
        return found

    # One node keeps the folder layout it always had; a cluster gives each node its own folder.
    return [NodeLayout(i, port(), port(), str(state_dir if brokers == 1 else state_dir / f"node-{i}"))
            for i in range(1, brokers + 1)]


def taken_ports(node: NodeLayout) -> list[int]:
    """Those of ``node``'s ports another socket holds: binding them fails (call it once the node is gone)."""
    taken = []
    for port in (node.port, node.controller_port):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                taken.append(port)
    return taken


def bind_failed(node: NodeLayout) -> bool:
    """Whether ``node``, which exited, lost a port to another program.

    Its log says so, or a port of its is held by another socket now that the node is gone: the
    proof that holds when the broker logged nothing (it exits before its logging is set up, or a
    classpath without a logging binding drops what it logs).
    """
    if taken_ports(node):
        return True
    for log in (node.log_file, node.log_dir / "kafka.out"):
        try:
            if BIND_FAILURE.search(log.read_text(errors="replace")):
                return True
        except FileNotFoundError:
            continue
    return False
