"""One start attempt of the devstack's brokers: format each node's KRaft storage, start its JVM, record the nodes.

:meth:`~airflow_provider_eos.devstack.broker.LocalKafka.up` chooses the ports and runs an attempt
through :func:`start_nodes`; when a node lost its port it stops the attempt (:func:`stop_nodes`)
and tries again on ports chosen anew. A secured broker's passwords never reach a command line:
its config file is private and the formatter reads the SCRAM users from an argument file
(:class:`~airflow_provider_eos.devstack.security.BrokerSecrets`).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.devstack.broker_config import NodeLayout, server_properties
from airflow_provider_eos.devstack.broker_nodes import JVM_OPTIONS_ENV, jvm_command, jvm_options, start_node, terminate
from airflow_provider_eos.devstack.broker_state import BrokerInfo, NodeInfo
from airflow_provider_eos.devstack.private_files import write_private
from airflow_provider_eos.devstack.security import BrokerSecrets, Security
from airflow_provider_eos.subprocesses import run_bounded

__all__ = ["FORMAT_TIMEOUT_S", "StartSettings", "format_storage", "start_nodes", "stop_nodes"]

#: Seconds Kafka's storage formatter (a short JVM run) may take; a hung one must not hang `up`.
FORMAT_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class StartSettings:
    """What every start attempt of :meth:`~airflow_provider_eos.devstack.broker.LocalKafka.up` runs the nodes with.

    :param state_dir: the devstack's folder (absolute), named in the fixes.
    :param heap: JVM heap of each node.
    :param security: the devstack's security, recorded in the state file.
    :param secured: the broker's secrets when ``security`` is not ``plaintext``, else ``None``.
    """

    java: str
    classpath: str
    transaction_max_timeout_ms: int
    kafka_version: str
    state_dir: Path
    heap: str
    security: Security
    secured: BrokerSecrets | None


def start_nodes(layouts: list[NodeLayout], cluster_id: str, settings: StartSettings,
                state_file: Path) -> tuple[BrokerInfo, list[subprocess.Popen]]:
    """Format each node's storage, start the nodes, record them in ``state_file``.

    :returns: the recorded devstack and the nodes' processes, in the order of ``layouts``; not yet ready.
    :raises DevstackError: a node's storage could not be formatted (:func:`format_storage`).
    """
    for node in layouts:
        format_storage(node, layouts, cluster_id, settings)
    processes = [start_node(jvm_command(settings.java, settings.heap, settings.classpath, node.log_dir), node)
                 for node in layouts]
    nodes = tuple(NodeInfo(n.node_id, p.pid, n.port, n.controller_port, n.folder)
                  for n, p in zip(layouts, processes, strict=True))
    client_config = None if settings.secured is None else str(settings.secured.write_client_config(
        ",".join(f"127.0.0.1:{n.port}" for n in nodes)))
    info = BrokerInfo(nodes[0].pid, nodes[0].port, nodes[0].controller_port, str(settings.state_dir),
                      settings.transaction_max_timeout_ms, settings.security, client_config, nodes,
                      settings.kafka_version)
    state_file.write_text(info.to_json())
    return info, processes


def stop_nodes(processes: list[subprocess.Popen]) -> None:
    """Stop the nodes of a failed attempt that still run; reap those that exited."""
    for process in processes:
        if process.poll() is None:
            terminate(process.pid, 30)


def format_storage(node: NodeLayout, layouts: list[NodeLayout], cluster_id: str, settings: StartSettings) -> None:
    """Write ``node``'s ``server.properties`` and format its KRaft storage for ``cluster_id``.

    :param layouts: every node of the cluster (the controller quorum names them all).
    :raises DevstackError: the formatter failed or outlived :data:`FORMAT_TIMEOUT_S`.
    """
    node.log_dir.mkdir(parents=True, exist_ok=True)
    secured = settings.secured
    if secured is None:
        node.config_file.write_text(server_properties(node, layouts, settings.transaction_max_timeout_ms))
    else:  # it holds the broker's password
        write_private(node.config_file, server_properties(node, layouts, settings.transaction_max_timeout_ms,
                                                          secured.server_properties(node.port, node.controller_port)))
    java = settings.java
    jvm = jvm_command(java, settings.heap, settings.classpath, node.log_dir)
    command = ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(node.config_file)]
    # The JVM options first in the message would hide the tool behind the classpath.
    fix = f"check that Java 17+ runs ({java} -version) and that {node.folder} is writable, then retry."

    def run(args: list[str]) -> subprocess.CompletedProcess:
        return run_bounded(args, timeout_s=FORMAT_TIMEOUT_S, error=DevstackError, fix=fix, capture_output=True,
                           text=True, stdin=subprocess.DEVNULL)

    if secured is None:
        fmt = run([*jvm, *command])
    else:
        argfile = secured.format_argfile(command)  # the SCRAM passwords, off the command line
        try:
            fmt = run([*jvm, f"@{argfile}"])
        finally:
            argfile.unlink()
    if fmt.returncode != 0:
        extra = " ".join(jvm_options())
        raise DevstackError(
            f"Formatting KRaft storage in {node.folder} failed: {fmt.stderr or fmt.stdout}",
            fix=f"run `eos devstack down --state-dir {settings.state_dir}` and retry; check that Java 17+ runs"
                + (f" and takes {JVM_OPTIONS_ENV}={extra!r}." if extra else "."),
        )
