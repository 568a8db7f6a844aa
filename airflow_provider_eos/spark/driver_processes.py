"""The driver's processes on this host: find them by their driver token, stop them, confirm they are gone.

Reads ``/proc/<pid>/environ`` (Linux; readable for processes of the same user, which is how an
Airflow worker runs spark-submit). An entry that cannot be read is reported, never skipped: under
``run_as_user`` or a ``/proc`` mounted with ``hidepid`` it may be the driver. The judgement of
what was seen is the core's (:func:`airflow_provider_eos.core.driver.observe_driver`); this module
only looks and signals.
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
    HostIdentity,
    Liveness,
    ProcessTable,
    UnreadableProcess,
    observe_driver,
)
from airflow_provider_eos.core.retry import RetryPolicy

log = logging.getLogger(__name__)

_PROC = Path("/proc")


def this_host() -> str:
    """The name this host reports; a submission records it, an observation compares with it."""
    return socket.gethostname()


def this_host_identity(proc: Path | None = None) -> HostIdentity:
    """Who looks at the process table from here: host name, boot id, pid namespace, user.

    A part that cannot be read is ``None``, which no recorded value equals.
    """
    proc = proc or _PROC
    try:
        boot_id: str | None = (proc / "sys/kernel/random/boot_id").read_text().strip() or None
    except OSError:
        boot_id = None
    try:
        pid_namespace: int | None = os.stat(proc / "self/ns/pid").st_ino
    except OSError:
        pid_namespace = None
    return HostIdentity(host=this_host(), boot_id=boot_id, pid_namespace=pid_namespace, uid=os.getuid())


def processes_with_token(token: str, proc: Path | None = None) -> ProcessTable | None:
    """The processes of this host whose environment holds ``EOS_DRIVER_TOKEN=<token>``, and those not readable.

    :return: what was found, or ``None`` when the process table cannot be read at all.
    """
    proc = proc or _PROC
    needle = f"{DRIVER_TOKEN_ENV}={token}".encode()
    try:
        entries = [entry for entry in proc.iterdir() if entry.name.isdigit() and int(entry.name) != os.getpid()]
    except OSError:
        return None
    carrying, unreadable = [], []
    booted_at = _booted_at(proc)
    for entry in entries:
        pid = int(entry.name)
        try:
            environ = (entry / "environ").read_bytes()
        except (FileNotFoundError, ProcessLookupError):
            continue  # gone between listing and reading
        except OSError as err:
            # Another user's process, or one that made itself unreadable: the core decides whether it may be the driver.
            unreadable.append(UnreadableProcess(pid=pid, uids=_user_ids(entry), reason=type(err).__name__,
                                                started_at=_started_at(entry, booted_at)))
            continue
        if needle not in environ.split(b"\0"):
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            state, _, pgid = (entry / "stat").read_text().rsplit(")", 1)[1].split()[:3]
        except (FileNotFoundError, ProcessLookupError):
            continue
        except (OSError, ValueError, IndexError):
            command, state, pgid = "", "?", ""  # it carries the token: alive, whatever else cannot be read
        if state == "Z":
            continue  # a zombie has exited; only its parent's wait() is missing
        carrying.append(DriverProcess(pid=pid, command=command, pgid=int(pgid) if pgid.isdigit() else None))
    return ProcessTable(carrying=tuple(carrying), unreadable=tuple(unreadable))


def process_running(pid: int, proc: Path | None = None) -> tuple[bool, dt.datetime | None]:
    """Whether a process with ``pid`` runs on this host (a zombie has exited), and when it started (``None``: unknown).

    For the lease's holder (:func:`~airflow_provider_eos.core.driver_lease.holder_exited_here`): a
    process that cannot be looked at counts as running.
    """
    entry = (proc or _PROC) / str(pid)
    try:
        state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False, None
    except (OSError, ValueError, IndexError):
        return True, None
    if state == "Z":
        return False, None
    return True, _started_at(entry, _booted_at(proc or _PROC))


def _user_ids(entry: Path) -> tuple[int, ...]:
    """The real, effective, saved and filesystem uids of a process (``status`` is readable by all, unless hidepid)."""
    try:
        for line in (entry / "status").read_text().splitlines():
            if line.startswith("Uid:"):
                return tuple(int(uid) for uid in line.split()[1:])
    except (OSError, ValueError):
        pass
    return ()


def _booted_at(proc: Path) -> dt.datetime | None:
    """When this host booted (``btime``; the kernel keeps it in step with the clock), or ``None``."""
    try:
        for line in (proc / "stat").read_text().splitlines():
            if line.startswith("btime "):
                return dt.datetime.fromtimestamp(int(line.split()[1]), dt.UTC)
    except (OSError, ValueError):
        pass
    return None


def _started_at(entry: Path, booted_at: dt.datetime | None) -> dt.datetime | None:
    """When a process started (``stat`` field 22, clock ticks after boot; readable by all, unless hidepid)."""
    if booted_at is None:
        return None
    try:
        ticks = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return None
    return booted_at + dt.timedelta(seconds=ticks / os.sysconf("SC_CLK_TCK"))


def observe(handle: DriverHandle, *, group: int | None = None, here: HostIdentity | None = None) -> DriverObservation:
    """Look at this host's processes now and judge whether the driver of ``handle`` is gone.

    Only the process table: the other sources, which work from any host, are
    :mod:`airflow_provider_eos.usecases.driver_liveness`'s.

    :param group: only that process group's processes count (see :func:`observe_driver`).
    :param here: who looks (default: this process's identity); a test passes another to stand for another worker.
    """
    return observe_driver(
        handle, here=here or this_host_identity(), table=processes_with_token(handle.token),
        observed_at=dt.datetime.now(dt.UTC), group=group,
    )


def wait_until_gone(handle: DriverHandle, timeout_s: float, poll_s: float = 0.5, *,
                    group: int | None = None) -> DriverObservation:
    """Observe until the driver is gone, the host cannot be observed, or ``timeout_s`` passes."""
    policy = RetryPolicy("the driver's processes to exit", timeout_s=timeout_s, first_delay_s=poll_s,
                         max_delay_s=poll_s)
    return policy.poll(lambda: observe(handle, group=group), until=lambda seen: seen.liveness is not Liveness.ALIVE,
                       what=f"stop of driver {handle.token}").value


def _signal(processes: tuple[DriverProcess, ...], sig: signal.Signals) -> None:
    for process in processes:
        try:
            os.kill(process.pid, sig)
            log.info("sent %s to pid %d: %s", sig.name, process.pid, process.command[:200])
        except ProcessLookupError:
            pass


def _kill(processes: tuple[DriverProcess, ...], group: int | None) -> None:
    """SIGKILL the processes, and the process groups that are the driver's.

    A group is the driver's when the caller started it for the driver (``group``: spark-submit's
    session) or when its leader carries the token; its other members (a worker that cleared its
    environment, a child started since the last look) die with it. A process that merely shares a
    group (spark-submit under ``eos run`` is in the shell's) leaves that group alone. Its id cannot
    have been reused: a member carrying the token was just seen in it.
    """
    _signal(processes, signal.SIGKILL)
    for leader in sorted({p.pgid for p in processes if p.pgid is not None and p.pgid in (group, p.pid)}):
        try:
            os.killpg(leader, signal.SIGKILL)
            log.info("sent SIGKILL to process group %d", leader)
        except ProcessLookupError:
            pass


def request_stop(handle: DriverHandle, *, group: int | None = None) -> DriverObservation:
    """SIGTERM the Python driver (it stops its query after the running batch) and return at once.

    For callers that may not wait: an Airflow task being killed has seconds before its own SIGKILL.
    Without a Python driver among the processes (it already exited), they all get SIGTERM.
    Returns what was seen before the signal.

    :param group: only that process group's processes (one attempt's spark-submit session).
    """
    seen = observe(handle, group=group)
    if seen.processes:
        drivers = tuple(p for p in seen.processes if p.is_python_driver)
        _signal(drivers or seen.processes, signal.SIGTERM)
    return seen


def stop_driver(handle: DriverHandle, *, grace_s: float, kill_wait_s: float = 30,
                group: int | None = None) -> DriverObservation:
    """Stop the driver deliberately and return once it is gone (or say why it is not).

    SIGTERM goes to the Python driver, which stops its query after the running batch (a clean
    end: the batch commits or was never begun). Whatever is left after ``grace_s`` (a driver
    stuck in a batch, the spark-submit JVM, workers) gets SIGKILL, with the driver's process
    groups, which is safe for exactly-once: an open transaction is aborted by recovery and the
    batch replays once. The one stop of the recovery branch and of a killed submit task.

    :param group: only that process group (one attempt's spark-submit session), which is also killed.
    """
    seen = request_stop(handle, group=group)
    if not seen.processes:
        return seen
    seen = wait_until_gone(handle, grace_s, group=group)
    if seen.processes:
        log.warning("the driver did not stop within %.0fs of SIGTERM; killing what is left", grace_s)
        _kill(seen.processes, group)
        seen = wait_until_gone(handle, kill_wait_s, group=group)
    return seen
