"""Stopping daemons that lead their own process groups, from any process, without killing strangers.

A devstack daemon is started with ``start_new_session=True``: its pid is also its process group,
and the processes it launches (Spark executors, their Python workers) stay in that group. Stopping
the group stops them all. Pids are read back from a state file, possibly after the daemon died and
its pid was reused, so a group is signalled only when it still belongs to the recorded program.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.broker_nodes import pid_alive

__all__ = ["GROUPS_EXIT", "Marker", "group_members", "process_state", "runs", "start_reaper", "stop_groups"]

GROUPS_EXIT = RetryPolicy(waiting_for="the process groups to exit", timeout_s=20, first_delay_s=0.1, max_delay_s=0.3)
_PROC = Path("/proc")


def process_state(stat: str) -> tuple[str, int]:
    """The state letter and process group of a ``/proc/<pid>/stat`` line (the name in it may hold ``)``)."""
    fields = stat.rsplit(")", 1)[1].split()
    return fields[0], int(fields[2])


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes in process group ``pgid``; without /proc, the leader if it lives."""
    if not (_PROC / "self" / "stat").exists():
        return [pgid] if pid_alive(pgid) else []
    members = []
    for entry in _PROC.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                state, group = process_state((entry / "stat").read_text())
                if group == pgid and state != "Z":
                    members.append(int(entry.name))
    return members


#: What a daemon's command line holds: one string, or alternatives (a process that retitles itself).
Marker = str | tuple[str, ...]


def runs(pid: int, marker: Marker) -> bool:
    """Whether live ``pid``'s command line holds ``marker`` (e.g. a JVM main class; a tuple: any of them);
    without /proc, whether it lives."""
    markers = (marker,) if isinstance(marker, str) else marker
    try:
        cmdline = (_PROC / str(pid) / "cmdline").read_bytes()
        return any(m.encode() in cmdline for m in markers)
    except OSError:
        return pid_alive(pid)


def _ours(pgid: int, marker: Marker) -> bool:
    members = group_members(pgid)
    # A live leader running another program means the pid was reused: not ours. A dead leader's
    # group can only hold its own orphans (Linux reuses no pid as long as its group has members).
    return bool(members) and (pgid not in members or runs(pgid, marker))


def stop_groups(leaders: dict[int, Marker], timeout_s: float, *, crash: bool = False) -> tuple[bool, list[int]]:
    """SIGTERM the groups of ``leaders`` (pid -> command-line marker), SIGKILL what is left after ``timeout_s``.

    Descendants that left the group are stopped too: PySpark's daemon puts itself and its Python
    workers in a group of their own, YARN's NodeManager starts every container in its own session.

    :param crash: SIGKILL at once, as a crashed host (a fault of the tests and the soak), no SIGTERM.
    :returns: whether any group was running, and the pids still alive after SIGKILL (normally none).
    """
    import psutil  # Airflow's own dependency

    groups = [pgid for pgid, marker in leaders.items() if _ours(pgid, marker)]
    if not groups:
        return False, []
    descendants = _descendants(groups)

    def send(sig: signal.Signals) -> None:
        for pgid in groups:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, sig)
        for process in descendants:
            with contextlib.suppress(psutil.Error):
                process.send_signal(sig)

    def all_exited() -> bool:
        for pgid in groups:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pgid, os.WNOHANG)  # our own child stays a zombie until it is reaped
        return not any(group_members(pgid) for pgid in groups) and not _running(descendants)

    if not crash:
        send(signal.SIGTERM)
        if GROUPS_EXIT.bounded(timeout_s=timeout_s).poll(all_exited, until=bool, what="SIGTERM of the groups").settled:
            return True, []
    send(signal.SIGKILL)
    GROUPS_EXIT.poll(all_exited, until=bool, what="SIGKILL of the groups")
    return True, sorted({pid for pgid in groups for pid in group_members(pgid)} | set(_running(descendants)))


def _descendants(leaders: list[int]) -> list:
    import psutil

    found = []
    for leader in leaders:
        with contextlib.suppress(psutil.Error):
            found.extend(psutil.Process(leader).children(recursive=True))
    return found


def _running(processes: list) -> list[int]:
    import psutil

    alive = []
    for process in processes:
        with contextlib.suppress(psutil.Error):
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                alive.append(process.pid)
    return alive


def start_reaper(module: str, owner_pid: int, state_dir: Path | str) -> None:
    """Start ``module.reap(owner_pid, state_dir)`` in a detached process: it stops what the state
    folder records once the owner dies. A process, not a thread: it must outlive an owner that is SIGKILLed."""
    code = f"import sys\nfrom {module} import reap\nreap(int(sys.argv[1]), sys.argv[2])"
    subprocess.Popen(
        [sys.executable, "-c", code, str(owner_pid), str(state_dir)], stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
