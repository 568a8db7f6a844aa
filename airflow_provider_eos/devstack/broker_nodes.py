"""The devstack brokers' JVM processes: start one node, signal it, wait for it to go.

Each node runs in its own session (its pid is its process group), so a signal reaches the JVM
and nothing else.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
from pathlib import Path

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.broker_config import NodeLayout

__all__ = ["BROKER_EXITS", "JVM_OPTIONS_ENV", "jvm_command", "jvm_options", "pid_alive", "send", "start_node",
           "terminate"]

BROKER_EXITS = RetryPolicy(waiting_for="the broker to exit", timeout_s=30, first_delay_s=0.2, max_delay_s=0.2)
LOG4J = Path(__file__).with_name("log4j2.xml")


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
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


#: More JVM options for every node and the storage formatter, split as a shell splits them, after the
#: devstack's own (so ``-Xmx`` here wins). Kafka's scripts read ``KAFKA_OPTS``; the devstack does not, so
#: options meant for another cluster's tools (a metrics agent on a fixed port, a JAAS file) stay there.
JVM_OPTIONS_ENV = "EOS_DEVSTACK_KAFKA_OPTS"


def jvm_options() -> list[str]:
    """The options of :data:`JVM_OPTIONS_ENV` (none when it is unset or empty).

    :raises DevstackError: the value does not split (an unclosed quote).
    """
    value = os.environ.get(JVM_OPTIONS_ENV, "")
    try:
        return shlex.split(value)
    except ValueError as error:
        raise DevstackError(f"{JVM_OPTIONS_ENV}={value!r} is not a list of JVM options: {error}.",
                            fix=f"quote it as a shell would: {JVM_OPTIONS_ENV}='-XX:TieredStopAtLevel=1 -Dx=\"a b\"'",
                            ) from error


def jvm_command(java: str, heap: str, classpath: str, log_dir: Path) -> list[str]:
    """The JVM options every node (and the storage formatter) runs with."""
    return [
        java, f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseG1GC", "-Djava.awt.headless=true",
        f"-Dkafka.logs.dir={log_dir}", f"-Dlog4j2.configurationFile={LOG4J}", *jvm_options(), "-cp", classpath,
    ]


def start_node(jvm: list[str], node: NodeLayout) -> subprocess.Popen:
    """Start ``node``'s broker in its own session, its output appended to ``logs/kafka.out``."""
    node.log_dir.mkdir(parents=True, exist_ok=True)
    with (node.log_dir / "kafka.out").open("a") as out:
        return subprocess.Popen([*jvm, "kafka.Kafka", str(node.config_file)], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)


def send(pid: int, sig: signal.Signals) -> None:
    """Signal the node's process group (nothing if it is gone)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, sig)


def _exited(pid: int) -> bool:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # our own child stays a zombie until it is reaped
    return not pid_alive(pid)


def terminate(pid: int, timeout_s: float, *, sig: signal.Signals = signal.SIGTERM) -> None:
    """Stop the node: ``sig`` (a paused node is continued first), then SIGKILL after ``timeout_s``;
    returns once the process is gone.

    :raises DevstackError: the process outlived SIGKILL by :data:`BROKER_EXITS`' timeout.
    """
    send(pid, signal.SIGCONT)
    send(pid, sig)
    stopped = BROKER_EXITS.bounded(timeout_s=timeout_s).poll(lambda: _exited(pid), until=bool,
                                                             what=f"stop of broker pid {pid}")
    if stopped.settled:
        return
    send(pid, signal.SIGKILL)
    # SIGKILL cannot be refused, but a JVM takes a moment to exit on a busy machine: a caller that
    # checks the node right after a kill must find it gone (in CI one was still there 0.1 s later).
    if not BROKER_EXITS.poll(lambda: _exited(pid), until=bool, what=f"exit of broker pid {pid}").settled:
        raise DevstackError(f"broker pid {pid} is still there {BROKER_EXITS.timeout_s:.0f}s after SIGKILL",
                            fix=f"look at its state in /proc/{pid}/status (a process in D state waits on I/O)")
