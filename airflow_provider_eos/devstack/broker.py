"""Real Apache Kafka brokers (KRaft) on 127.0.0.1: one node, or a three-node cluster whose nodes can be faulted.

Used by ``eos devstack``, by the test fixtures, the demo, the bench and the soak: one code path,
so the tests exercise exactly what users start. Configured for transactions. PLAINTEXT by
default; SASL/SCRAM with ACLs (and TLS) on request, see :mod:`airflow_provider_eos.devstack.security`.
With ``brokers=3`` every node is broker and controller (:mod:`.broker_config`), and one node at
a time can be killed, paused, resumed, stopped and restarted by its node id (:meth:`LocalKafka.fault`).
The state folder is a :class:`~airflow_provider_eos.devstack.state_folder.StateFolder`: ``up``
claims it, ``down`` removes only the broker's own files (:data:`BROKER_ENTRIES`) from it.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.core.kafka_defaults import KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.broker_config import (
    NodeLayout,
    bind_failed,
    choose_layouts,
    server_properties,
    taken_ports,
)
from airflow_provider_eos.devstack.broker_nodes import (
    JVM_OPTIONS_ENV,
    jvm_command,
    jvm_options,
    pid_alive,
    send,
    start_node,
    terminate,
)
from airflow_provider_eos.devstack.broker_ready import listening, log_tail, registered, wait_transactional
from airflow_provider_eos.devstack.broker_state import BrokerDown, BrokerInfo, NodeInfo
from airflow_provider_eos.devstack.jars import (
    KAFKA_VERSION,
    check_kafka_version,
    eos_home,
    kafka_classpath,
    require_java,
)
from airflow_provider_eos.devstack.private_files import write_private
from airflow_provider_eos.devstack.process_groups import start_reaper
from airflow_provider_eos.devstack.security import (
    CLIENT_CONFIG,
    BrokerSecrets,
    Security,
    check_security,
)
from airflow_provider_eos.devstack.state_folder import StateFolder
from airflow_provider_eos.devstack.state_lock import hold_state_folder_to_reap
from airflow_provider_eos.subprocesses import run_bounded

log = logging.getLogger(__name__)

__all__ = ["BROKER_ENTRIES", "LocalKafka", "NodeFault", "default_state_dir", "reap"]

_STATE_FILE = "devstack.json"
#: A single node's config, data and logs, a cluster's node folders: what a start on new ports writes anew.
_NODE_ENTRIES = ("server.properties", "data", "logs", "node-[0-9]*")
#: What the brokers write in the state folder, and all ``down`` removes from it: the state file, the nodes'
#: files, a secured broker's TLS and client files.
BROKER_ENTRIES = (_STATE_FILE, *_NODE_ENTRIES, "ca.pem", "broker.keystore.pem", CLIENT_CONFIG, "format.args")
#: Starts on newly chosen ports when a node lost one to another program between choice and bind.
START_ATTEMPTS = 3
#: What ``eos devstack broker ACTION ID`` does to one node.
NodeFault = Literal["kill", "pause", "resume", "stop", "restart"]
NODE_FAULTS: tuple[NodeFault, ...] = ("kill", "pause", "resume", "stop", "restart")

#: Seconds Kafka's storage formatter (a short JVM run) may take; a hung one must not hang `up`.
FORMAT_TIMEOUT_S = 180.0
NODE_REJOINS = RetryPolicy(waiting_for="the broker to rejoin the cluster", timeout_s=120, first_delay_s=0.5,
                           max_delay_s=1.0)


@dataclass(frozen=True)
class _StartSettings:
    """What every start attempt of :meth:`LocalKafka.up` runs the nodes with."""

    java: str
    classpath: str
    transaction_max_timeout_ms: int
    kafka_version: str
    secured: BrokerSecrets | None


def default_state_dir() -> Path:
    return eos_home() / "devstack"


class LocalKafka:
    """Start, stop, describe and fault the local broker(s) whose files live in ``state_dir``.

    :param state_dir: folder for config, data and logs; one devstack per folder.
    :param heap: JVM heap of each node (modest: the brokers share the machine with Spark and Airflow).
    :param security: ``plaintext`` (no authentication), or ``sasl_plaintext`` / ``sasl_ssl``:
        SCRAM-SHA-512 users and the StandardAuthorizer, over TLS for ``sasl_ssl``
        (:mod:`airflow_provider_eos.devstack.security`); the admin's settings go to ``client.config``.
    """

    def __init__(self, state_dir: Path | str | None = None, *, heap: str = "512m",
                 security: Security | str = "plaintext") -> None:
        # Absolute at once: the JVMs get paths on their command lines (a relative one resolves against
        # their own working folder) and Airflow's SQLite URL refuses a relative path.
        self.state_dir = Path(state_dir).resolve() if state_dir else default_state_dir()
        self.heap = heap
        self.security = check_security(security)

    @property
    def _state_file(self) -> Path:
        return self.state_dir / _STATE_FILE

    def _recorded(self) -> BrokerInfo | None:
        if not self._state_file.exists():
            return None
        try:
            return BrokerInfo.from_json(self._state_file.read_text())
        except (ValueError, TypeError) as exc:
            raise DevstackError(
                f"{self._state_file} is not a devstack state file ({exc}).",
                fix=f"run `eos devstack down` (or remove {self.state_dir}) and start again.",
            ) from exc

    def status(self) -> BrokerInfo | None:
        """The running broker (cluster), or None. Stale state (every node gone) reads as None."""
        info = self._recorded()
        return info if info is not None and info.alive() else None

    def up(
        self,
        *,
        transaction_max_timeout_ms: int = KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
        timeout_s: float = 120,
        stop_with_pid: int | None = None,
        brokers: int = 1,
        kafka_version: str = KAFKA_VERSION,
    ) -> BrokerInfo:
        """Format KRaft storage, start the node(s), and wait until transactions work on every one.

        Idempotent: a devstack already running from this folder with the same settings is returned.

        :param stop_with_pid: stop the brokers (and remove their data) when this process dies, even
            if it dies without running its cleanup (SIGKILL, a CI timeout). Tests and the demo pass
            their own pid; ``eos devstack up`` leaves the brokers running on purpose.
        :param brokers: 1, or 3 or more (a quorum of two survives no failure).
        :param kafka_version: the brokers' Kafka version, resolved from Maven Central on first use
            (:data:`~airflow_provider_eos.devstack.jars.KAFKA_VERSIONS` are the tested ones).
        """
        if transaction_max_timeout_ms <= 0:
            raise DevstackError(
                f"--transaction-max-timeout-ms must be positive, got {transaction_max_timeout_ms}.",
                fix=f"pass a value in milliseconds, e.g. {KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS} (Kafka's default).",
            )
        if brokers < 1 or brokers == 2:
            raise DevstackError(f"--brokers must be 1 or at least 3, got {brokers}.",
                                fix="pass 1 (a single node) or 3 (a cluster that survives one broker fault)")
        running = self.status()
        if running is not None:
            running.refuse_other_settings(self.security, transaction_max_timeout_ms, brokers, kafka_version)
            return running
        folder = StateFolder(self.state_dir)
        folder.claim()
        if self._state_file.exists():
            log.warning("Removing stale devstack state in %s (its broker is not running).", self.state_dir)
        folder.clear(*BROKER_ENTRIES)
        java, classpath = require_java(), kafka_classpath(check_kafka_version(kafka_version))
        if self.security != "plaintext":
            # The metadata log holds the SCRAM verifiers, enough to log in as a user: owner only.
            self.state_dir.chmod(0o700)
        secured = BrokerSecrets(self.state_dir, self.security) if self.security != "plaintext" else None
        settings = _StartSettings(java, classpath, transaction_max_timeout_ms, kafka_version, secured)
        return self._start(brokers, settings, timeout_s, stop_with_pid)

    def _start(self, brokers: int, settings: _StartSettings, timeout_s: float, stop_with_pid: int | None) -> BrokerInfo:
        """Format and start the nodes on free ports; choose new ones when a node lost its port (:data:`START_ATTEMPTS`).

        A port is free when chosen and bound by the node's JVM seconds later: another program (a test
        on a shared machine) can take it in between, and the node then exits. Its files are removed,
        the state file and the TLS files kept (the reaper watches the one, the CA stays the same).
        """
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        deadline = time.monotonic() + timeout_s
        tried: list[str] = []
        for attempt in range(1, START_ATTEMPTS + 1):
            layouts = choose_layouts(self.state_dir, brokers)
            info, processes = self._start_nodes(layouts, cluster_id, settings)
            if stop_with_pid is not None and attempt == 1:
                start_reaper(__name__, stop_with_pid, self.state_dir)
            try:
                wait_transactional(info, processes, max(1.0, deadline - time.monotonic()))
                return info
            except DevstackError:
                if not any(process.poll() is not None and bind_failed(node)
                           for node, process in zip(layouts, processes, strict=True)):
                    self.down()
                    raise
            except BaseException:
                self.down()
                raise
            self._stop_nodes(processes)
            tried.append(", ".join(f"{n.port}/{n.controller_port}" + "".join(f" ({p} taken)" for p in taken_ports(n))
                                   for n in layouts))
            if attempt < START_ATTEMPTS:
                log.warning("A broker lost its port to another program (ports %s); choosing again.", tried[-1])
                StateFolder(self.state_dir).clear(*_NODE_ENTRIES)
        # The files stay: the error names the last attempt's log, and `down` (or the next `up`) removes them.
        raise DevstackError(
            f"The broker(s) could not bind free ports in {START_ATTEMPTS} attempts: another program took a port "
            f"between its choice and the broker's bind each time (ports tried, broker/controller: "
            f"{'; '.join(tried)}).\n{log_tail(info.nodes[0].layout)}",
            fix=f"read {info.log_file}; then run `eos devstack up` again (`eos devstack down --state-dir "
            f"{self.state_dir}` removes what the failed start left).",
        )

    def _start_nodes(self, layouts: list[NodeLayout], cluster_id: str,
                     settings: _StartSettings) -> tuple[BrokerInfo, list[subprocess.Popen]]:
        """Format each node's storage, start the nodes, record them in the state file."""
        for node in layouts:
            self._format(settings.java, settings.classpath, node, layouts, cluster_id,
                         settings.transaction_max_timeout_ms, settings.secured)
        processes = [start_node(jvm_command(settings.java, self.heap, settings.classpath, node.log_dir), node)
                     for node in layouts]
        nodes = tuple(NodeInfo(n.node_id, p.pid, n.port, n.controller_port, n.folder)
                      for n, p in zip(layouts, processes, strict=True))
        client_config = None if settings.secured is None else str(settings.secured.write_client_config(
            ",".join(f"127.0.0.1:{n.port}" for n in nodes)))
        info = BrokerInfo(nodes[0].pid, nodes[0].port, nodes[0].controller_port, str(self.state_dir),
                          settings.transaction_max_timeout_ms, self.security, client_config, nodes,
                          settings.kafka_version)
        self._state_file.write_text(info.to_json())
        return info, processes

    @staticmethod
    def _stop_nodes(processes: list[subprocess.Popen]) -> None:
        """Stop the nodes of a failed attempt that still run; reap those that exited."""
        for process in processes:
            if process.poll() is None:
                terminate(process.pid, 30)

    def _format(  # noqa: PLR0913  # dev-stack helper with one call site
        self, java: str, classpath: str, node: NodeLayout, layouts: list[NodeLayout], cluster_id: str,
        transaction_max_timeout_ms: int, secured: BrokerSecrets | None,
    ) -> None:
        node.log_dir.mkdir(parents=True, exist_ok=True)
        if secured is None:
            node.config_file.write_text(server_properties(node, layouts, transaction_max_timeout_ms))
        else:  # it holds the broker's password
            write_private(node.config_file, server_properties(node, layouts, transaction_max_timeout_ms,
                                                              secured.server_properties(node.port,
                                                                                        node.controller_port)))
        jvm = jvm_command(java, self.heap, classpath, node.log_dir)
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
                fix=f"run `eos devstack down --state-dir {self.state_dir}` and retry; check that Java 17+ runs"
                    + (f" and takes {JVM_OPTIONS_ENV}={extra!r}." if extra else "."),
            )

    # -- faults of one node ------------------------------------------------------------------

    def fault(self, action: NodeFault, node_id: int, *, timeout_s: float = 120) -> NodeInfo:
        """Kill (SIGKILL), pause (SIGSTOP), resume (SIGCONT), stop (SIGTERM) or restart one node.

        ``restart`` stops the node if it runs (gracefully), starts it again on its own data and
        returns once it is back in the cluster's metadata.

        :returns: the node as recorded afterwards (``restart``: its new pid).
        :raises DevstackError: no devstack runs here, no such node, or the restart did not rejoin.
        """
        if action not in NODE_FAULTS:
            raise DevstackError(f"unknown broker action {action!r}", fix=f"use one of {', '.join(NODE_FAULTS)}")
        info = self._recorded()
        if info is None or not info.nodes:
            raise DevstackError(f"no devstack runs from {self.state_dir}",
                                fix="start one: eos devstack up --brokers 3 --state-dir DIR")
        node = info.node(node_id)
        if action != "restart" and node.pid_reused():
            raise DevstackError(f"broker {node_id} (pid {node.pid}) is not running: that pid now runs another "
                                "program, which is left alone.",
                                fix=f"start the broker again: eos devstack broker restart {node_id} --state-dir "
                                f"{self.state_dir}")
        if action == "kill":
            terminate(node.pid, 0.1, sig=signal.SIGKILL)
        elif action == "pause":
            send(node.pid, signal.SIGSTOP)
        elif action == "resume":
            send(node.pid, signal.SIGCONT)
        elif action == "stop":
            terminate(node.pid, 30)
        else:
            return self._restart(info, node, timeout_s)
        return node

    def _restart(self, info: BrokerInfo, node: NodeInfo, timeout_s: float) -> NodeInfo:
        if node.running():
            terminate(node.pid, 30)
        process = start_node(jvm_command(require_java(), self.heap, kafka_classpath(info.kafka_version),
                                         node.layout.log_dir),
                             node.layout)
        restarted = replace(node, pid=process.pid)
        nodes = tuple(restarted if n.node_id == node.node_id else n for n in info.nodes)
        updated = replace(info, nodes=nodes, pid=nodes[0].pid)
        self._state_file.write_text(updated.to_json())

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

    # -- stop everything ---------------------------------------------------------------------

    def down(self, *, timeout_s: float = 30) -> BrokerDown:
        """Stop every node (SIGTERM, then SIGKILL) and remove the broker's files; the folder too once empty.

        A recorded pid that runs another program now (the node died, the pid was reused) is left alone.

        :raises DevstackError: a node outlived SIGKILL (the others are stopped all the same; the files
            are kept, so a later ``down`` finds it), or the state folder is not the devstack's (refused
            before anything is stopped or removed).
        """
        folder = StateFolder(self.state_dir)
        folder.check()
        info = None
        with contextlib.suppress(DevstackError):
            info = self._recorded()
        stopped: list[int] = []
        left_alone: list[NodeInfo] = []
        survivors: list[DevstackError] = []
        for node in info.every_node if info is not None else ():
            if node.running():
                stopped.append(node.pid)
                try:
                    terminate(node.pid, timeout_s)
                except DevstackError as exc:  # one stuck node must not leave the others running
                    survivors.append(exc)
            elif node.pid_reused():
                left_alone.append(node)
                log.warning("Broker %d (pid %d) was not running: that pid now runs another program, left alone.",
                            node.node_id, node.pid)
        if survivors:
            # Before anything is removed: the state file names the survivor for the next `down` to stop.
            raise survivors[0]
        folder.clear(*BROKER_ENTRIES)
        kept = folder.release()
        return BrokerDown(tuple(stopped), tuple(left_alone), kept)


def reap(owner_pid: int, state_dir: str) -> None:
    """Stop the brokers ``state_dir`` records, and remove their files, once ``owner_pid`` dies (the body of
    the reaper process, :func:`~airflow_provider_eos.devstack.process_groups.start_reaper`).

    The state file is read when the owner is gone: a node restarted under a new pid is stopped too.
    The reaper ends by itself once the state file is gone (``down`` ran). It stops them under the
    state folder's lock, waiting while a command changes the folder.
    """
    kafka = LocalKafka(state_dir)
    while pid_alive(owner_pid) and kafka._state_file.exists():
        time.sleep(2)
    with hold_state_folder_to_reap(kafka.state_dir, "broker") as there:
        if there and kafka._state_file.exists():
            kafka.down()
