"""The driver's processes on this host: find them by their driver token, stop them, confirm they are gone.

Reads ``/proc/<pid>/environ`` (Linux; readable for processes of the same user, which is how an
Airflow worker runs spark-submit). The judgement of what was seen is the core's
(:func:`airflow_provider_eos.core.driver.observe_driver`); this module only looks and signals.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import signal
import socket
from pathlib import Path

from airflow_provider_eos.core.driver import (
    DRIVER_TOKEN_ENV,
    DriverHandle,
    DriverObservation,
    DriverProcess,
    Liveness,
    observe_driver,
)
from airflow_provider_eos.core.retry import RetryPolicy

log = logging.getLogger(__name__)

_PROC = Path("/proc")


def this_host() -> str:
    """The name this host reports; a submission records it, an observation compares with it."""
    return socket.gethostname()


def processes_with_token(token: str, proc: Path = _PROC) -> list[DriverProcess] | None:
    """Every process of this host whose environment holds ``EOS_DRIVER_TOKEN=<token>``.

    :return: the processes, or ``None`` when the process table cannot be read at all.
    """
    if not proc.is_dir():
        return None
    needle = f"{DRIVER_TOKEN_ENV}={token}".encode()
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            if needle not in environ.split(b"\0"):
                continue
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue  # gone between listing and reading, or another user's: not ours either way
        if state == "Z":
            continue  # a zombie has exited; only its parent's wait() is missing
        found.append(DriverProcess(pid=int(entry.name), command=command))
    return found


def observe(handle: DriverHandle) -> DriverObservation:
    """Look at this host's processes now and judge whether the driver of ``handle`` is gone."""
    return observe_driver(
        handle, this_host=this_host(), processes=processes_with_token(handle.token),
        observed_at=dt.datetime.now(dt.UTC),
    )


def wait_until_gone(handle: DriverHandle, timeout_s: float, poll_s: float = 0.5) -> DriverObservation:
    """Observe until the driver is gone, the host cannot be observed, or ``timeout_s`` passes."""
    policy = RetryPolicy("the driver's processes to exit", timeout_s=timeout_s, first_delay_s=poll_s,
                         max_delay_s=poll_s)
    return policy.poll(lambda: observe(handle), until=lambda seen: seen.liveness is not Liveness.ALIVE,
                       what=f"stop of driver {handle.token}").value


def _signal(processes: tuple[DriverProcess, ...], sig: signal.Signals) -> None:
    for process in processes:
        try:
            os.kill(process.pid, sig)
            log.info("sent %s to pid %d: %s", sig.name, process.pid, process.command[:200])
        except ProcessLookupError:
            pass


def request_stop(handle: DriverHandle) -> DriverObservation:
    """SIGTERM the Python driver (it stops its query after the running batch) and return at once.

    For callers that may not wait: an Airflow task being killed has seconds before its own SIGKILL.
    Without a Python driver among the processes (it already exited), they all get SIGTERM.
    Returns what was seen before the signal.
    """
    seen = observe(handle)
    if seen.processes:
        drivers = tuple(p for p in seen.processes if p.is_python_driver)
        _signal(drivers or seen.processes, signal.SIGTERM)
    return seen


def stop_driver(handle: DriverHandle, *, grace_s: float, kill_wait_s: float = 30) -> DriverObservation:
    """Stop the driver deliberately and return once it is gone (or say why it is not).

    SIGTERM goes to the Python driver, which stops its query after the running batch (a clean
    end: the batch commits or was never begun). Whatever is left after ``grace_s`` (a driver
    stuck in a batch, the spark-submit JVM, workers) gets SIGKILL, which is safe for exactly-once:
    an open transaction is aborted by recovery and the batch replays once.
    """
    seen = request_stop(handle)
    if not seen.processes:
        return seen
    seen = wait_until_gone(handle, grace_s)
    if seen.processes:
        log.warning("the driver did not stop within %.0fs of SIGTERM; killing what is left", grace_s)
        _signal(seen.processes, signal.SIGKILL)
        seen = wait_until_gone(handle, kill_wait_s)
    return seen
