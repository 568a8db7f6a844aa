"""Faults of one node of a devstack cluster: kill, pause, resume, stop or restart it by its node id.

What ``eos devstack broker ACTION ID`` and the fault tests do to a ``--brokers 3`` devstack
(:meth:`~airflow_provider_eos.devstack.broker.LocalKafka.fault`). A recorded pid that runs another
program now is never signalled; a restart returns once the node is back in the cluster's metadata.
"""

from __future__ import annotations

import signal
from dataclasses import replace
from pathlib import Path
from typing import Literal

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.broker_nodes import jvm_command, send, start_node, terminate
from airflow_provider_eos.devstack.broker_ready import listening, log_tail, registered
from airflow_provider_eos.devstack.broker_state import BrokerInfo, NodeInfo
from airflow_provider_eos.devstack.jars import kafka_classpath, require_java

__all__ = ["NODE_FAULTS", "NODE_REJOINS", "NodeFault", "check_fault", "fault_node"]

#: What ``eos devstack broker ACTION ID`` does to one node.
NodeFault = Literal["kill", "pause", "resume", "stop", "restart"]
NODE_FAULTS: tuple[NodeFault, ...] = ("kill", "pause", "resume", "stop", "restart")
NODE_REJOINS = RetryPolicy(waiting_for="the broker to rejoin the cluster", timeout_s=120, first_delay_s=0.5,
                           max_delay_s=1.0)


def check_fault(action: str) -> None:
    """Refuse an ``action`` that is not one of :data:`NODE_FAULTS`.

    :raises DevstackError: naming the actions.
    """
    if action not in NODE_FAULTS:
        raise DevstackError(f"unknown broker action {action!r}", fix=f"use one of {', '.join(NODE_FAULTS)}")


def fault_node(info: BrokerInfo, action: NodeFault, node_id: int, *, heap: str, state_file: Path,
               timeout_s: float) -> NodeInfo:
    """Kill (SIGKILL), pause (SIGSTOP), resume (SIGCONT), stop (SIGTERM) or restart node ``node_id`` of ``info``.

    :param heap: the restarted node's JVM heap.
    :param state_file: where ``info`` is recorded, in the devstack's folder (named in the fix); a restart
        records the node's new pid there.
    :returns: the node as recorded afterwards (``restart``: its new pid).
    :raises DevstackError: no such node, its pid runs another program now (any action but
        ``restart``), or the restart did not rejoin within ``timeout_s``.
    """
    node = info.node(node_id)
    if action != "restart" and node.pid_reused():
        raise DevstackError(f"broker {node_id} (pid {node.pid}) is not running: that pid now runs another "
                            "program, which is left alone.",
                            fix=f"start the broker again: eos devstack broker restart {node_id} --state-dir "
                            f"{state_file.parent}")
    if action == "kill":
        terminate(node.pid, 0.1, sig=signal.SIGKILL)
    elif action == "pause":
        send(node.pid, signal.SIGSTOP)
    elif action == "resume":
        send(node.pid, signal.SIGCONT)
    elif action == "stop":
        terminate(node.pid, 30)
    else:
        return _restart(info, node, heap, state_file, timeout_s)
    return node


def _restart(info: BrokerInfo, node: NodeInfo, heap: str, state_file: Path, timeout_s: float) -> NodeInfo:
    """Stop ``node`` if it runs, start it on its own data, record its pid and wait until it rejoined."""
    if node.running():
        terminate(node.pid, 30)
    process = start_node(jvm_command(require_java(), heap, kafka_classpath(info.kafka_version),
                                     node.layout.log_dir),
                         node.layout)
    restarted = replace(node, pid=process.pid)
    nodes = tuple(restarted if n.node_id == node.node_id else n for n in info.nodes)
    updated = replace(info, nodes=nodes, pid=nodes[0].pid)
    state_file.write_text(updated.to_json())

    def rejoined() -> bool:
        if process.poll() is not None:
            raise DevstackError(f"broker {node.node_id} exited with code {process.returncode} on restart.\n"
                                f"{log_tail(node.layout)}", fix=f"read {node.layout.log_file}")
        return listening(node.port) and registered(updated, {node.node_id})

    back = NODE_REJOINS.bounded(timeout_s=timeout_s).poll(rejoined, until=bool,
                                                          what=f"restart of broker {node.node_id}")
    if not back.settled:
        raise DevstackError(f"broker {node.node_id} did not rejoin the cluster within {timeout_s:.0f}s",
                            fix=f"read {node.layout.log_file}")
    return restarted
