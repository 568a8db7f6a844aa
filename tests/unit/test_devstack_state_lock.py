"""The state folder's lock: one state-changing devstack command at a time, none blocked by a dead one.

Real locks (``fcntl.flock``) and real processes; no broker or JVM starts here
(tests/integration/test_devstack_lock.py runs two real ``eos devstack up``).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_eos.cli.main import main
from airflow_provider_eos.core.errors import DevstackError, StateFolderBusyError
from airflow_provider_eos.devstack import state_lock
from airflow_provider_eos.devstack.state_folder import LOCK, MARKER, StateFolder
from airflow_provider_eos.devstack.state_lock import hold_state_folder

#: A process that holds the lock of argv[1] as `eos devstack up` and says so, then waits to be killed.
HOLDER = (
    "import sys, time; from pathlib import Path\n"
    "from airflow_provider_eos.devstack.state_lock import hold_state_folder\n"
    "with hold_state_folder(Path(sys.argv[1]), 'eos devstack up'):\n"
    "    print('held', flush=True); time.sleep(600)\n"
)


def hold_briefly(state: Path, command: str = "eos devstack up") -> None:
    with hold_state_folder(state, command):
        pass


def start_holder(state: Path) -> subprocess.Popen:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(state)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_a_second_holder_is_refused_at_once_naming_the_folder_the_holder_and_the_fix(tmp_path: Path) -> None:
    state = tmp_path / "devstack"
    with hold_state_folder(state, "eos devstack up") as holder, pytest.raises(StateFolderBusyError) as refused:
        hold_briefly(state, "eos devstack down")
    message = refused.value.message
    assert f"changing the state folder {state}: pid {os.getpid()} (eos devstack up, since {holder.since})" in message
    assert refused.value.fix is not None and "another --state-dir" in refused.value.fix and "wait" in refused.value.fix


def test_the_lock_of_a_sigkilled_holder_does_not_block(tmp_path: Path) -> None:
    state = tmp_path / "devstack"
    holder = start_holder(state)
    try:
        with pytest.raises(StateFolderBusyError, match=f"pid {holder.pid} \\(eos devstack up, since "):
            hold_briefly(state)
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert json.loads((state / LOCK).read_text())["pid"] == holder.pid  # its text outlives it; its lock does not
    with hold_state_folder(state, "eos devstack up") as mine:
        assert json.loads((state / LOCK).read_text())["pid"] == mine.pid == os.getpid()


def test_a_killed_holders_text_is_not_taken_for_the_holder(tmp_path: Path) -> None:
    state = tmp_path / "devstack"
    holder = start_holder(state)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    fd = os.open(state / LOCK, os.O_RDWR)  # a new command that locked the file and has not written its text yet
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        with pytest.raises(StateFolderBusyError, match="a command that is just starting"):
            hold_briefly(state)
    finally:
        os.close(fd)


def test_a_command_that_writes_nothing_leaves_no_folder_and_no_lock_file(tmp_path: Path) -> None:
    missing, empty = tmp_path / "missing", tmp_path / "empty"
    empty.mkdir()
    for folder in (missing, empty):
        with hold_state_folder(folder, "eos devstack down"):
            assert (folder / LOCK).is_file()
    assert not missing.exists()
    assert empty.is_dir() and not any(empty.iterdir())  # the user's empty folder stays, as it was


def test_the_folder_is_claimed_and_released_around_the_lock_file(tmp_path: Path) -> None:
    state = tmp_path / "devstack"
    with hold_state_folder(state, "eos devstack up"):
        StateFolder(state).claim()  # the lock file is the devstack's: the folder is adopted, not refused
        (state / "devstack.json").write_text("{}")
    assert sorted(p.name for p in state.iterdir()) == [MARKER, "devstack.json"], "the lock file stays behind"
    with hold_state_folder(state, "eos devstack down"):
        StateFolder(state).clear("devstack.json")
        assert StateFolder(state).release() == ()
        assert not state.exists()
    assert not state.exists()


def test_a_folder_the_devstack_did_not_make_is_refused_before_a_lock_file_is_written(tmp_path: Path) -> None:
    (tmp_path / "thesis.tex").write_text("the user's")
    with pytest.raises(DevstackError, match="was not made by the devstack"):
        hold_briefly(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["thesis.tex"]


def test_a_lock_file_removed_by_its_holder_as_it_is_locked_is_locked_again(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path) -> None:
    state = tmp_path / "devstack"
    state.mkdir()
    (state / MARKER).write_text("")
    real_flock = state_lock.fcntl.flock
    calls = []

    def holder_finishes_first(fd: int, operation: int) -> None:
        # The holder (`down`) removed the lock file and let go between this command's open and its lock.
        if not calls:
            (state / LOCK).unlink()
        calls.append(fd)
        real_flock(fd, operation)

    monkeypatch.setattr(state_lock.fcntl, "flock", holder_finishes_first)
    with hold_state_folder(state, "eos devstack up"):
        monkeypatch.setattr(state_lock.fcntl, "flock", real_flock)
        assert len(calls) == 2, "the removed file was locked and kept"
        with pytest.raises(StateFolderBusyError):  # the file at the path is the one held
            hold_briefly(state, "eos devstack down")


@pytest.mark.parametrize("command", [["devstack", "up"], ["devstack", "down"], ["devstack", "broker", "kill", "1"],
                                     ["airflow", "up"], ["airflow", "down"]])
def test_every_command_that_changes_the_folder_is_refused_while_another_holds_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    state = tmp_path / "devstack"
    holder = start_holder(state)
    try:
        assert main([*command, "--state-dir", str(state), "--json"]) == 2
        error = json.loads(capsys.readouterr().out)
        assert error["error"] == "StateFolderBusyError", error
        assert f"{state}: pid {holder.pid} (eos devstack up, since" in error["message"]
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()


def test_status_does_not_wait_on_the_lock(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "devstack"
    holder = start_holder(state)
    try:
        assert main(["devstack", "status", "--state-dir", str(state)]) == 1  # nothing runs: a finding, no refusal
        assert main(["airflow", "status", "--state-dir", str(state)]) == 1
        assert "not running" in capsys.readouterr().out
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()


def test_a_relative_state_dir_locks_the_folder_the_parts_use(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    holder = start_holder(tmp_path / "rel")
    try:
        assert main(["devstack", "down", "--state-dir", "rel"]) == 2
        assert f"{tmp_path / 'rel'}: pid {holder.pid}" in capsys.readouterr().err
    finally:
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
