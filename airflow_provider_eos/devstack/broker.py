"""A real single-node Apache Kafka broker (KRaft, combined broker+controller) on 127.0.0.1.

Used by ``eos devstack``, by the test fixtures and by the demo: one code path, so the tests
exercise exactly what users start. Configured for transactions on one node. PLAINTEXT by
default; SASL/SCRAM with ACLs (and TLS) on request, see :mod:`airflow_provider_eos.devstack.security`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.jars import eos_home, kafka_classpath, require_java
from airflow_provider_eos.devstack.security import (
    BrokerSecrets,
    Security,
    check_security,
    read_client_config,
    write_private,
)

log = logging.getLogger(__name__)

DEFAULT_TRANSACTION_MAX_TIMEOUT_MS = 900_000
_STATE_FILE = "devstack.json"
_LOG4J = Path(__file__).with_name("log4j2.xml")

# The waits of :meth:`LocalKafka.up` and :meth:`LocalKafka.down`, each bounded by the caller's timeout.
BROKER_ACCEPTS_TRANSACTIONS = RetryPolicy(
    waiting_for="the broker to accept transactions", timeout_s=120, first_delay_s=0.2, max_delay_s=0.5
)
BROKER_EXITS = RetryPolicy(waiting_for="the broker to exit", timeout_s=30, first_delay_s=0.2, max_delay_s=0.2)


_REAPER = """
import os, shutil, signal, sys, time
owner, broker, state_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
while alive(owner) and alive(broker):
    time.sleep(2)
if alive(broker):
    try:
        os.killpg(broker, signal.SIGTERM)
        for _ in range(100):
            if not alive(broker):
                break
            time.sleep(0.2)
        os.killpg(broker, signal.SIGKILL)
    except ProcessLookupError:
        pass
    shutil.rmtree(state_dir, ignore_errors=True)
"""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def default_state_dir() -> Path:
    return eos_home() / "devstack"


@dataclass(frozen=True)
class BrokerInfo:
    """Where a running devstack broker is and how to reach it."""

    pid: int
    port: int
    controller_port: int
    state_dir: str
    transaction_max_timeout_ms: int
    #: ``plaintext``, ``sasl_plaintext`` or ``sasl_ssl`` (:data:`~airflow_provider_eos.devstack.security.Security`).
    security: str = "plaintext"
    #: The admin's librdkafka settings (JSON, mode 0600) of a secured broker; None for plaintext.
    client_config: str | None = None

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def client_settings(self) -> dict[str, Any]:
        """librdkafka settings that reach this broker: the admin's ``client.config`` when secured. Holds secrets."""
        if self.client_config is None:
            return {"bootstrap.servers": self.bootstrap_servers}
        return read_client_config(self.client_config)

    @property
    def log_file(self) -> Path:
        return Path(self.state_dir) / "logs" / "server.log"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still answers kill(0); its /proc stat says 'Z'.
    with contextlib.suppress(OSError):
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] != "Z"
    return True


def _server_properties(state_dir: Path, port: int, controller_port: int, txn_max_timeout_ms: int,
                       security: Mapping[str, str] | None = None) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(state_dir / "data"),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        # One node: every internal topic must fit on it.
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "10",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "transaction.max.timeout.ms": str(txn_max_timeout_ms),
        # Timed-out transactions are aborted within a second instead of ten, so tests of
        # transaction timeouts and lingering transactions run fast.
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
        "log.segment.bytes": str(64 * 1024 * 1024),
    }
    settings.update(security or {})
    return "".join(f"{k}={v}\n" for k, v in settings.items())


class LocalKafka:
    """Start, stop and describe one local broker whose files live in ``state_dir``.

    :param state_dir: folder for config, data and logs; one broker per folder.
    :param heap: JVM heap (modest: the broker shares the machine with Spark and Airflow).
    :param security: ``plaintext`` (no authentication), or ``sasl_plaintext`` / ``sasl_ssl``:
        SCRAM-SHA-512 users and the StandardAuthorizer, over TLS for ``sasl_ssl``
        (:mod:`airflow_provider_eos.devstack.security`); the admin's settings go to ``client.config``.
    """

    def __init__(self, state_dir: Path | str | None = None, *, heap: str = "512m",
                 security: Security | str = "plaintext") -> None:
        self.state_dir = Path(state_dir) if state_dir else default_state_dir()
        self.heap = heap
        self.security = check_security(security)

    @property
    def _state_file(self) -> Path:
        return self.state_dir / _STATE_FILE

    def status(self) -> BrokerInfo | None:
        """The running broker, or None. Stale state (process gone) reads as None."""
        if not self._state_file.exists():
            return None
        try:
            info = BrokerInfo(**json.loads(self._state_file.read_text()))
        except (ValueError, TypeError) as exc:
            raise DevstackError(
                f"{self._state_file} is not a devstack state file ({exc}).",
                fix=f"run `eos devstack down` (or remove {self.state_dir}) and start again.",
            ) from exc
        return info if _pid_alive(info.pid) else None

    def up(
        self,
        *,
        transaction_max_timeout_ms: int = DEFAULT_TRANSACTION_MAX_TIMEOUT_MS,
        timeout_s: float = 120,
        stop_with_pid: int | None = None,
    ) -> BrokerInfo:
        """Format KRaft storage, start the broker, and wait until transactions work.

        Idempotent: a broker already running from this folder with the same settings is returned.

        :param stop_with_pid: stop the broker (and remove its data) when this process dies, even
            if it dies without running its cleanup (SIGKILL, a CI timeout). Tests and the demo pass
            their own pid; ``eos devstack up`` leaves the broker running on purpose.
        """
        if transaction_max_timeout_ms <= 0:
            raise DevstackError(
                f"--transaction-max-timeout-ms must be positive, got {transaction_max_timeout_ms}.",
                fix="pass a value in milliseconds, e.g. 900000 (Kafka's default).",
            )
        running = self.status()
        if running is not None:
            if running.transaction_max_timeout_ms != transaction_max_timeout_ms:
                raise DevstackError(
                    f"A devstack broker already runs at {running.bootstrap_servers} with "
                    f"transaction.max.timeout.ms={running.transaction_max_timeout_ms}, "
                    f"not {transaction_max_timeout_ms}.",
                    fix="run `eos devstack down` first, then `eos devstack up` with the new value.",
                )
            if running.security != self.security:
                raise DevstackError(
                    f"A devstack broker already runs at {running.bootstrap_servers} with security "
                    f"{running.security}, not {self.security}.",
                    fix=f"run `eos devstack down` first, then `eos devstack up --security {self.security}`.",
                )
            return running
        if self._state_file.exists():
            log.warning("Removing stale devstack state in %s (its broker is not running).", self.state_dir)
        if self.state_dir.exists():
            shutil.rmtree(self.state_dir)
        java = require_java()
        classpath = kafka_classpath()
        (self.state_dir / "logs").mkdir(parents=True)
        if self.security != "plaintext":
            # The metadata log holds the SCRAM verifiers, enough to log in as a user: owner only.
            self.state_dir.chmod(0o700)
        port, controller_port = free_port(), free_port()
        while controller_port == port:
            controller_port = free_port()
        config = self.state_dir / "server.properties"
        secured = BrokerSecrets(self.state_dir, self.security) if self.security != "plaintext" else None
        if secured is None:
            config.write_text(_server_properties(self.state_dir, port, controller_port, transaction_max_timeout_ms))
        else:  # it holds the broker's password
            write_private(config, _server_properties(self.state_dir, port, controller_port, transaction_max_timeout_ms,
                                                     secured.server_properties(port, controller_port)))
        jvm = [
            java, f"-Xmx{self.heap}", f"-Xms{self.heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
            f"-Dkafka.logs.dir={self.state_dir / 'logs'}", f"-Dlog4j2.configurationFile={_LOG4J}",
            "-cp", classpath,
        ]
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        fmt_command = ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(config)]
        if secured is None:
            fmt = subprocess.run([*jvm, *fmt_command], capture_output=True, text=True, check=False)
        else:
            argfile = secured.format_argfile(fmt_command)  # the SCRAM passwords, off the command line
            try:
                fmt = subprocess.run([*jvm, f"@{argfile}"], capture_output=True, text=True, check=False)
            finally:
                argfile.unlink()
        if fmt.returncode != 0:
            raise DevstackError(
                f"Formatting KRaft storage in {self.state_dir} failed: {fmt.stderr or fmt.stdout}",
                fix=f"remove {self.state_dir} and retry; check that Java 17+ runs.",
            )
        with (self.state_dir / "logs" / "kafka.out").open("w") as out:
            process = subprocess.Popen(
                [*jvm, "kafka.Kafka", str(config)], stdout=out, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )
        client_config = None if secured is None else str(secured.write_client_config(f"127.0.0.1:{port}"))
        info = BrokerInfo(process.pid, port, controller_port, str(self.state_dir), transaction_max_timeout_ms,
                          self.security, client_config)
        self._state_file.write_text(json.dumps(asdict(info)))
        if stop_with_pid is not None:
            self._start_reaper(stop_with_pid, process.pid)
        try:
            self._wait_transactional(info, process, timeout_s)
        except BaseException:
            self.down()
            raise
        return info

    def _wait_transactional(self, info: BrokerInfo, process: subprocess.Popen, timeout_s: float) -> None:
        from confluent_kafka import KafkaException, Producer

        from airflow_provider_eos.kafka.settings import with_client_logger

        errors: list[KafkaException] = []

        def accepts_transactions() -> bool:
            if process.poll() is not None:
                raise DevstackError(
                    f"The Kafka broker exited with code {process.returncode} while starting.\n"
                    f"{self._log_tail(info)}",
                    fix=f"read {info.log_file}; a port taken between selection and bind is fixed by retrying.",
                )
            if not self._listening(info.port):
                return False  # no client before the port listens: librdkafka would log every refusal
            producer = Producer(with_client_logger(
                "probe-producer",
                {**info.client_settings(), "transactional.id": "eos-devstack-probe",
                 # The probe's own timeout must fit under a deliberately low broker maximum.
                 "transaction.timeout.ms": min(60_000, info.transaction_max_timeout_ms)},
            ))
            try:
                producer.init_transactions(10)
                producer.begin_transaction()
                producer.abort_transaction(10)
                return self._group_coordinator_ready(info)
            except KafkaException as exc:
                errors.append(exc)
                return False
            finally:
                producer.flush(0)

        started = BROKER_ACCEPTS_TRANSACTIONS.bounded(timeout_s=timeout_s).poll(
            accepts_transactions, until=bool, what=f"start of the broker at {info.bootstrap_servers}"
        )
        if not started.settled:
            raise DevstackError(
                f"The broker at {info.bootstrap_servers} did not accept transactions within {timeout_s:.0f}s "
                f"(last error: {errors[-1] if errors else None}).\n{self._log_tail(info)}",
                fix=f"read {info.log_file}.",
            )

    def _start_reaper(self, owner_pid: int, broker_pid: int) -> None:
        # A detached watcher, not a thread: it must outlive an owner that is SIGKILLed.
        subprocess.Popen(
            [sys.executable, "-c", _REAPER, str(owner_pid), str(broker_pid), str(self.state_dir)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )

    @staticmethod
    def _listening(port: int) -> bool:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.settimeout(0.5)
            return sock.connect_ex(("127.0.0.1", port)) == 0

    @staticmethod
    def _group_coordinator_ready(info: BrokerInfo) -> bool:
        """True once a group offset fetch answers without a coordinator error.

        The first FindCoordinator creates ``__consumer_offsets``; until its partitions are loaded,
        offset commits fail per partition with NOT_COORDINATOR. Tests and the demo commit group
        offsets right after start, so the broker is not "up" before this works.
        """
        from confluent_kafka import KafkaException
        from confluent_kafka.admin import AdminClient

        from airflow_provider_eos.kafka.settings import with_client_logger

        # describe_consumer_groups, not list_consumer_group_offsets: confluent-kafka 2.16.1 crashes
        # (SIGSEGV in librdkafka) when an offset fetch meets a coordinator that is still loading.
        admin = AdminClient(with_client_logger("probe-admin", info.client_settings()))
        try:
            admin.describe_consumer_groups(["eos-devstack-probe"])["eos-devstack-probe"].result(10)
        except KafkaException:
            return False
        return True

    @staticmethod
    def _log_tail(info: BrokerInfo, lines: int = 20) -> str:
        for candidate in (info.log_file, Path(info.state_dir) / "logs" / "kafka.out"):
            if candidate.exists() and candidate.stat().st_size:
                return "\n".join(candidate.read_text(errors="replace").splitlines()[-lines:])
        return "(no broker log)"

    def down(self, *, timeout_s: float = 30) -> bool:
        """Stop the broker (SIGTERM, then SIGKILL) and remove its data. True if one was running."""
        was_running = False
        if self._state_file.exists():
            with contextlib.suppress(ValueError, TypeError):
                pid = json.loads(self._state_file.read_text())["pid"]
                if _pid_alive(pid):
                    was_running = True
                    self._terminate(pid, timeout_s)
        if self.state_dir.exists():
            shutil.rmtree(self.state_dir, ignore_errors=True)
        return was_running

    @staticmethod
    def _terminate(pid: int, timeout_s: float) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGTERM)

        def exited() -> bool:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)  # our own child stays a zombie until it is reaped
            return not _pid_alive(pid)

        stopped = BROKER_EXITS.bounded(timeout_s=timeout_s).poll(exited, until=bool, what=f"stop of broker pid {pid}")
        if stopped.settled:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
