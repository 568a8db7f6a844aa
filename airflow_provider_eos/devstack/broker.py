"""Real Apache Kafka brokers (KRaft) on 127.0.0.1: one node, or a three-node cluster whose nodes can be faulted.

Used by ``eos devstack``, by the test fixtures, the demo, the bench and the soak: one code path,
so the tests exercise exactly what users start. Configured for transactions. PLAINTEXT by
default; SASL/SCRAM with ACLs (and TLS) on request, see :mod:`airflow_provider_eos.devstack.security`.
With ``brokers=3`` every node is broker and controller (:mod:`.broker_config`), and one node at
a time can be killed, paused, resumed, stopped and restarted by its node id (:meth:`LocalKafka.fault`,
:mod:`.broker_faults`).
The state folder is a :class:`~airflow_provider_eos.devstack.state_folder.StateFolder`: ``up``
claims it, ``down`` removes only the broker's own files (:data:`BROKER_ENTRIES`) from it.

This module is the devstack's broker as a whole: its state file, ``up`` (ports chosen anew when a
node lost one; each attempt is :mod:`.broker_start`), ``status``, ``down`` and the reaper. The
nodes' processes are :mod:`.broker_nodes`, their config :mod:`.broker_config`, their readiness
:mod:`.broker_ready`, what is recorded of them :mod:`.broker_state`.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import time
import uuid
from pathlib import Path

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.core.kafka_defaults import KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
from airflow_provider_eos.devstack.broker_config import bind_failed, choose_layouts, taken_ports
from airflow_provider_eos.devstack.broker_faults import NodeFault, check_fault, fault_node
from airflow_provider_eos.devstack.broker_nodes import pid_alive, terminate
from airflow_provider_eos.devstack.broker_ready import log_tail, wait_transactional
from airflow_provider_eos.devstack.broker_start import StartSettings, start_nodes, stop_nodes
from airflow_provider_eos.devstack.broker_state import BrokerDown, BrokerInfo, NodeInfo
from airflow_provider_eos.devstack.jars import (
    KAFKA_VERSION,
    check_kafka_version,
    eos_home,
    kafka_classpath,
    require_java,
)
from airflow_provider_eos.devstack.process_groups import start_reaper
from airflow_provider_eos.devstack.security import (
    CLIENT_CONFIG,
    BrokerSecrets,
    Security,
    check_security,
)
from airflow_provider_eos.devstack.state_folder import StateFolder
from airflow_provider_eos.devstack.state_lock import hold_state_folder_to_reap

log = logging.getLogger(__name__)

__all__ = ["BROKER_ENTRIES", "LocalKafka", "default_state_dir", "reap"]

_STATE_FILE = "devstack.json"
#: A single node's config, data and logs, a cluster's node folders: what a start on new ports writes anew.
_NODE_ENTRIES = ("server.properties", "data", "logs", "node-[0-9]*")
#: What the brokers write in the state folder, and all ``down`` removes from it: the state file, the nodes'
#: files, a secured broker's TLS and client files.
BROKER_ENTRIES = (_STATE_FILE, *_NODE_ENTRIES, "ca.pem", "broker.keystore.pem", CLIENT_CONFIG, "format.args")
#: Starts on newly chosen ports when a node lost one to another program between choice and bind.
START_ATTEMPTS = 3


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
        settings = StartSettings(java, classpath, transaction_max_timeout_ms, kafka_version, self.state_dir,
                                 self.heap, self.security, secured)
        return self._start(brokers, settings, timeout_s, stop_with_pid)

    def _start(self, brokers: int, settings: StartSettings, timeout_s: float, stop_with_pid: int | None) -> BrokerInfo:
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
            info, processes = start_nodes(layouts, cluster_id, settings, self._state_file)
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
            stop_nodes(processes)
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

    # -- faults of one node ------------------------------------------------------------------

    def fault(self, action: NodeFault, node_id: int, *, timeout_s: float = 120) -> NodeInfo:
        """Kill (SIGKILL), pause (SIGSTOP), resume (SIGCONT), stop (SIGTERM) or restart one node.

        ``restart`` stops the node if it runs (gracefully), starts it again on its own data and
        returns once it is back in the cluster's metadata.

        :returns: the node as recorded afterwards (``restart``: its new pid).
        :raises DevstackError: no devstack runs here, no such node, or the restart did not rejoin.
        """
        check_fault(action)
        info = self._recorded()
        if info is None or not info.nodes:
            raise DevstackError(f"no devstack runs from {self.state_dir}",
                                fix="start one: eos devstack up --brokers 3 --state-dir DIR")
        return fault_node(info, action, node_id, heap=self.heap, state_file=self._state_file, timeout_s=timeout_s)

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
