"""Stopping recorded daemons' process groups: whole groups, SIGKILL after the grace, never a stranger's.

Stand-in daemons are small Python processes whose command line carries the marker a Spark
daemon's would (its main class); no JVM starts here.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.process_groups import group_members, runs, stop_groups
from airflow_provider_eos.devstack.spark_cluster import SparkCluster, reap
from airflow_provider_eos.devstack.spark_cluster_state import MASTER_CLASS, STATE_FILE, WORKER_CLASS, SparkClusterInfo
from airflow_provider_eos.devstack.state_folder import LOCK, StateFolder
from airflow_provider_eos.devstack.state_lock import hold_state_folder, hold_state_folder_to_reap

SLEEPER = "import time; time.sleep(120)"
# A daemon that starts a child in its group (as a worker starts executors) and ignores SIGTERM if asked.
PARENT = (
    "import signal, subprocess, sys, time\n"
    "if sys.argv[2] == 'stubborn': signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    f"subprocess.Popen([sys.executable, '-c', {SLEEPER!r}])\n"
    # A descendant in a session of its own, as YARN starts a container or PySpark its daemon.
    f"if sys.argv[2] == 'detaching': subprocess.Popen([sys.executable, '-c', {SLEEPER!r}], start_new_session=True)\n"
    "time.sleep(120)\n"
)


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen]]:
    processes: list[subprocess.Popen] = []
    yield processes
    for process in processes:  # whatever a failed test left behind
        stop_groups({process.pid: ""}, timeout_s=1)


def daemon(started: list[subprocess.Popen], marker: str, behaviour: str = "polite") -> int:
    process = subprocess.Popen([sys.executable, "-c", PARENT, marker, behaviour], start_new_session=True)
    started.append(process)
    deadline = time.monotonic() + 10
    while len(group_members(process.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(group_members(process.pid)) == 2, "the stand-in daemon did not start its child"
    return process.pid


def test_a_group_is_stopped_with_the_processes_it_started(started):
    pid = daemon(started, WORKER_CLASS)
    members = group_members(pid)
    assert runs(pid, WORKER_CLASS) and not runs(pid, MASTER_CLASS)
    assert stop_groups({pid: WORKER_CLASS}, timeout_s=10) == (True, [])
    assert not any(pid_alive(member) for member in members)


def test_a_group_that_ignores_sigterm_is_killed_after_the_grace(started):
    pid = daemon(started, MASTER_CLASS, "stubborn")
    began = time.monotonic()
    assert stop_groups({pid: MASTER_CLASS}, timeout_s=0.5) == (True, [])
    assert not group_members(pid) and time.monotonic() - began < 10


def test_a_pid_now_running_another_program_is_left_alone(started):
    stranger = daemon(started, "some-other-program")
    assert stop_groups({stranger: WORKER_CLASS}, timeout_s=1) == (False, [])
    assert len(group_members(stranger)) == 2


def dead_owner() -> int:
    owner = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                           check=True)
    return int(owner.stdout)


def recorded_cluster(state: Path, started: list[subprocess.Popen]) -> list[int]:
    """A stand-in master and worker recorded in ``state`` as a Spark cluster's; returns their groups' pids."""
    master, worker = daemon(started, MASTER_CLASS), daemon(started, WORKER_CLASS)
    StateFolder(state).claim()  # a folder the devstack made: the reaper removes what the cluster wrote there
    (state / "spark").mkdir()
    info = SparkClusterInfo.model_validate({
        "master_port": 1, "webui_port": 2, "workers": 1, "worker_cores": 1, "worker_memory": "1g",
        "state_dir": str(state), "daemons": [
            {"role": "master", "pid": master, "host": "127.0.0.1", "log_file": "m.log"},
            {"role": "worker", "pid": worker, "host": "localhost", "log_file": "w.log"},
        ],
    })
    (state / STATE_FILE).write_text(info.model_dump_json())
    return group_members(master) + group_members(worker)


def test_the_reaper_stops_the_cluster_of_a_dead_owner_and_removes_its_files(tmp_path, started):
    members = recorded_cluster(tmp_path, started)
    reap(dead_owner(), str(tmp_path))
    assert not any(pid_alive(member) for member in members)
    assert not (tmp_path / STATE_FILE).exists() and not (tmp_path / "spark").exists()
    assert SparkCluster(tmp_path).status() is None


#: Holds the lock of argv[1] as `eos devstack up` would, says so, and lets go when its stdin closes.
HOLDER = (
    "import sys; from pathlib import Path\n"
    "from airflow_provider_eos.devstack.state_lock import hold_state_folder\n"
    "with hold_state_folder(Path(sys.argv[1]), 'eos devstack up'):\n"
    "    print('held', flush=True); sys.stdin.read()\n"
)


def test_the_reaper_waits_while_a_command_holds_the_state_folder_then_stops_the_cluster(tmp_path, started):
    members = recorded_cluster(tmp_path, started)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        reaper = threading.Thread(target=reap, args=(dead_owner(), str(tmp_path)), daemon=True)
        reaper.start()
        reaper.join(3)
        assert reaper.is_alive(), "the reaper did not wait for the command holding the folder"
        assert all(pid_alive(member) for member in members) and (tmp_path / STATE_FILE).exists()
    finally:
        holder.communicate("", timeout=30)  # the command is done: it lets the lock go
    reaper.join(30)
    assert not reaper.is_alive()
    assert not any(pid_alive(member) for member in members)
    assert not (tmp_path / STATE_FILE).exists() and not (tmp_path / LOCK).exists()


def test_a_process_holding_the_folder_that_reaps_in_itself_is_not_blocked_by_its_own_lock(tmp_path, started):
    members = recorded_cluster(tmp_path, started)
    with hold_state_folder(tmp_path, "eos devstack down"):
        reaper = threading.Thread(target=reap, args=(dead_owner(), str(tmp_path)), daemon=True)
        reaper.start()
        reaper.join(30)
        assert not reaper.is_alive(), "the reaper waited on the lock its own process holds"
    assert not any(pid_alive(member) for member in members)


def test_a_reaper_whose_folder_a_command_removed_makes_no_folder_and_stops_nothing(tmp_path):
    state = tmp_path / "devstack"
    with hold_state_folder_to_reap(state, "broker") as there:
        assert not there
    assert not state.exists()


@pytest.mark.parametrize("crash", [False, True])
def test_descendants_in_sessions_of_their_own_are_stopped_too(started, crash):
    import psutil

    pid = daemon(started, WORKER_CLASS, "detaching")
    deadline = time.monotonic() + 10
    while len(psutil.Process(pid).children(recursive=True)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    detached = [c.pid for c in psutil.Process(pid).children(recursive=True) if c.pid not in group_members(pid)]
    assert len(detached) == 1, "the stand-in daemon did not start its detached child"
    assert stop_groups({pid: WORKER_CLASS}, timeout_s=10, crash=crash) == (True, [])
    assert not pid_alive(detached[0]) or psutil.Process(detached[0]).status() == psutil.STATUS_ZOMBIE
