"""`eos devstack` as a user runs it, and the reaper that stops a test's broker when its owner dies.

Also what a shared machine does to it: two commands on one state folder at once (its lock), and
a port taken by another program between its choice and the broker's bind (a new choice).
"""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.devstack import broker_config
from airflow_provider_eos.devstack.broker import START_ATTEMPTS, LocalKafka
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.broker_ready import listening
from airflow_provider_eos.devstack.state_folder import LOCK

pytestmark = pytest.mark.integration


def eos(*args: str, timeout: float = 180, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "airflow_provider_eos.cli", *args], capture_output=True,
                          text=True, timeout=timeout, check=False, env=env)


def test_devstack_up_status_down(tmp_path):
    state = str(tmp_path / "devstack")
    try:
        up = eos("devstack", "up", "--state-dir", state, "--transaction-max-timeout-ms", "120000")
        assert up.returncode == 0, up.stderr
        last = up.stdout.strip().splitlines()[-1]
        assert last.startswith("bootstrap.servers=127.0.0.1:")
        # Every broker error names this log: it must hold the broker's own lines (SLF4J 2 sees log4j's provider).
        server_log = (tmp_path / "devstack" / "logs" / "server.log").read_text()
        assert "Kafka Server started" in server_log, server_log[-2000:]
        again = eos("devstack", "up", "--state-dir", state, "--transaction-max-timeout-ms", "120000")
        assert again.stdout.strip().splitlines()[-1] == last, "up is idempotent"
        conflict = eos("devstack", "up", "--state-dir", state, "--transaction-max-timeout-ms", "60000")
        assert conflict.returncode == 2 and "eos devstack down" in conflict.stderr
        status = eos("devstack", "status", "--state-dir", state)
        assert status.returncode == 0 and status.stdout.strip().splitlines()[-1] == last
    finally:
        down = eos("devstack", "down", "--state-dir", state)
    assert down.returncode == 0 and "stopped" in down.stdout
    assert eos("devstack", "status", "--state-dir", state).returncode == 1
    assert not (tmp_path / "devstack").exists()


def test_bad_transaction_max_timeout_is_a_clear_error(tmp_path):
    result = eos("devstack", "up", "--state-dir", str(tmp_path / "x"), "--transaction-max-timeout-ms", "0")
    assert result.returncode == 2 and "--transaction-max-timeout-ms must be positive, got 0" in result.stderr


def test_the_nodes_run_with_the_jvm_options_of_eos_devstack_kafka_opts_and_a_bad_one_is_named(tmp_path):
    state = str(tmp_path / "devstack")
    options = "-XX:TieredStopAtLevel=1 '-Deos.devstack.note=two words'"
    try:
        up = eos("devstack", "up", "--state-dir", state, env={**os.environ, "EOS_DEVSTACK_KAFKA_OPTS": options})
        assert up.returncode == 0, up.stderr
        pid = LocalKafka(state).status().pid
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        assert b"-XX:TieredStopAtLevel=1" in argv and b"-Deos.devstack.note=two words" in argv, argv
        assert argv.index(b"-XX:TieredStopAtLevel=1") < argv.index(b"kafka.Kafka")
    finally:
        assert eos("devstack", "down", "--state-dir", state).returncode == 0
    bad = eos("devstack", "up", "--state-dir", state,
              env={**os.environ, "EOS_DEVSTACK_KAFKA_OPTS": "-XX:+NoSuchOption"})
    assert bad.returncode == 2, bad.stderr
    assert "Unrecognized VM option 'NoSuchOption'" in bad.stderr
    assert "takes EOS_DEVSTACK_KAFKA_OPTS='-XX:+NoSuchOption'" in bad.stderr
    eos("devstack", "down", "--state-dir", state)


def test_broker_is_stopped_when_its_owner_dies_without_cleanup(tmp_path):
    owner = subprocess.run(
        [sys.executable, "-c",
         "import os, sys; from airflow_provider_eos.devstack.broker import LocalKafka; "
         f"info = LocalKafka({str(tmp_path / 'owned')!r}).up(stop_with_pid=os.getpid()); "
         "print(info.pid, flush=True); os._exit(0)"],
        capture_output=True, text=True, timeout=180, check=True,
    )
    broker_pid = int(owner.stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 60
    while (pid_alive(broker_pid) or (tmp_path / "owned").exists()) and time.monotonic() < deadline:
        time.sleep(0.5)
    try:
        assert not pid_alive(broker_pid), "the reaper did not stop the orphaned broker"
        assert not (tmp_path / "owned").exists()
    finally:
        LocalKafka(tmp_path / "owned").down()


def test_the_reaper_waits_for_a_command_changing_the_folder_before_it_stops_the_broker(tmp_path):
    """A reaper whose owner died while a command holds the folder (an `up` reusing the broker, a
    `down`) stops nothing until that command is done, then stops what the folder records."""
    state = tmp_path / "owned"
    owner = subprocess.Popen(
        [sys.executable, "-c",
         "import os, sys; from airflow_provider_eos.devstack.broker import LocalKafka; "
         f"info = LocalKafka({str(state)!r}).up(stop_with_pid=os.getpid()); "
         "print(info.pid, flush=True); sys.stdin.readline(); os._exit(0)"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    holder = None
    try:
        broker_pid = int(owner.stdout.readline().strip())
        holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(state)], stdout=subprocess.PIPE, text=True)
        assert holder.stdout.readline().strip() == "held"
        owner.communicate("\n", timeout=30)  # the owner dies; its reaper looks every 2 s
        time.sleep(8)
        assert pid_alive(broker_pid), "the reaper stopped the broker while a command held the state folder"
        assert (state / "devstack.json").exists()
        os.kill(holder.pid, signal.SIGKILL)  # the command ends (killed: the kernel lets its lock go)
        holder.wait()
        deadline = time.monotonic() + 60
        while (pid_alive(broker_pid) or state.exists()) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not pid_alive(broker_pid), "the reaper did not stop the broker once the command was done"
        assert not state.exists()
    finally:
        for process in (owner, holder):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
        LocalKafka(state).down()


def test_up_and_down_refuse_a_folder_the_devstack_did_not_make(tmp_path):
    folder = tmp_path / "home"  # `--state-dir ~` by a slip
    folder.mkdir()
    (folder / "thesis.tex").write_text("the user's")
    try:
        up = eos("devstack", "up", "--state-dir", str(folder))
        assert up.returncode == 2, up.stdout + up.stderr
        assert f"{folder} was not made by the devstack" in up.stderr and "new or empty folder" in up.stderr
        down = eos("devstack", "down", "--state-dir", str(folder))
        assert down.returncode == 2, down.stdout + down.stderr
        assert f"{folder} was not made by the devstack" in down.stderr
        assert [p.name for p in folder.iterdir()] == ["thesis.tex"]
        assert (folder / "thesis.tex").read_text() == "the user's"
    finally:
        if (folder / "devstack.json").exists():  # a devstack that did not refuse started a broker there
            LocalKafka(folder).down()


def test_down_removes_the_brokers_files_and_keeps_what_the_user_put_in_its_folder(tmp_path):
    folder = tmp_path / "devstack"
    try:
        up = eos("devstack", "up", "--state-dir", str(folder))
        assert up.returncode == 0, up.stderr
        (folder / "notes.txt").write_text("the user's")
    finally:
        down = eos("devstack", "down", "--state-dir", str(folder))
    assert down.returncode == 0, down.stdout + down.stderr
    assert "stopped and removed" in down.stdout and f"kept {folder}: it holds notes.txt" in down.stdout
    assert sorted(p.name for p in folder.iterdir()) == [".eos-devstack", "notes.txt"]
    assert (folder / "notes.txt").read_text() == "the user's"


#: Holds the lock of argv[1] as `eos devstack up` would, says so, and waits to be killed.
LOCK_HOLDER = ("import sys, time; from pathlib import Path\n"
               "from airflow_provider_eos.devstack.state_lock import hold_state_folder\n"
               "with hold_state_folder(Path(sys.argv[1]), 'eos devstack up'):\n"
               "    print('held', flush=True); time.sleep(600)\n")


def test_two_ups_on_one_state_folder_start_one_broker_and_the_other_is_refused_at_once(tmp_path):
    state = tmp_path / "devstack"
    # First a command killed while it held the folder: its lock file (and text) stays, its lock does not.
    killed = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(state)], stdout=subprocess.PIPE, text=True)
    assert killed.stdout.readline().strip() == "held"
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    assert json.loads((state / LOCK).read_text())["pid"] == killed.pid
    command = [sys.executable, "-m", "airflow_provider_eos.cli", "devstack", "up", "--state-dir", str(state)]
    ups = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        deadline = time.monotonic() + 120
        while all(up.poll() is None for up in ups) and time.monotonic() < deadline:
            time.sleep(0.05)
        refused = next(up for up in ups if up.poll() is not None)
        winner = next(up for up in ups if up is not refused)
        assert winner.poll() is None, "the refused up returned only once the other was done: it waited"
        _, err = refused.communicate()
        assert refused.returncode == 2, err
        assert f"another devstack command is changing the state folder {state}: " in err, err
        # The winner holds the lock from its start and writes who it is a moment later: a refusal in between
        # says so, and names no pid (CI met it once).
        assert f"pid {winner.pid} (eos devstack up, since " in err or "a command that is just starting" in err, err
        assert "another --state-dir" in err
        down = eos("devstack", "down", "--state-dir", str(state))  # refused too, the broker starting untouched
        assert down.returncode == 2 and f"pid {winner.pid} (eos devstack up" in down.stderr, down.stderr
        status = eos("devstack", "status", "--state-dir", str(state), timeout=30)  # reads without the lock
        assert status.returncode in (0, 1), status.stderr
        assert winner.poll() is None, "the refusals were not checked while the first up ran"
        out, err = winner.communicate(timeout=240)
        assert winner.returncode == 0, err
        bootstrap = out.strip().splitlines()[-1]
        status = eos("devstack", "status", "--state-dir", str(state))
        assert status.returncode == 0 and status.stdout.strip().splitlines()[-1] == bootstrap
        _commit_one_transaction(bootstrap.removeprefix("bootstrap.servers="))
    finally:
        for up in ups:
            if up.poll() is None:
                up.kill()
                up.wait()
        assert eos("devstack", "down", "--state-dir", str(state)).returncode == 0
    assert not state.exists()


def _commit_one_transaction(bootstrap_servers: str) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})  # kept: a dropped client fails its futures
    admin.create_topics([NewTopic("lock-test", 1, 1)])["lock-test"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap_servers, "transactional.id": "lock-test"})
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce("lock-test", b"one")
    producer.commit_transaction(30)


class PortTaker:
    """Stands in for another program on the machine: takes (listens on) ports the devstack just chose."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, takes: int) -> None:
        self.taken: list[int] = []
        self.sockets: list[socket.socket] = []
        choose = broker_config.free_port

        def chosen_then_taken() -> int:
            port = choose()
            if len(self.taken) < takes:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sock.bind(("127.0.0.1", port))
                sock.listen()
                self.sockets.append(sock)
                self.taken.append(port)
            return port

        monkeypatch.setattr(broker_config, "free_port", chosen_then_taken)

    def close(self) -> None:
        for sock in self.sockets:
            sock.close()


def test_a_broker_whose_port_is_taken_before_it_binds_it_starts_on_ports_chosen_anew(tmp_path, monkeypatch, caplog):
    taker = PortTaker(monkeypatch, takes=1)  # the first port chosen: the broker's listener
    kafka = LocalKafka(tmp_path / "devstack")
    try:
        with caplog.at_level(logging.WARNING, logger="airflow_provider_eos.devstack.broker"):
            info = kafka.up(stop_with_pid=os.getpid())
        assert info.port not in taker.taken and info.controller_port not in taker.taken
        assert listening(info.port) and kafka.status() == info
        assert f"lost its port to another program (ports {taker.taken[0]}/" in caplog.text
        assert f"({taker.taken[0]} taken)" in caplog.text
        _commit_one_transaction(info.bootstrap_servers)
    finally:
        taker.close()
        kafka.down()


def test_a_broker_that_loses_its_port_every_time_fails_naming_the_ports_tried_and_its_log(tmp_path, monkeypatch):
    taker = PortTaker(monkeypatch, takes=1000)
    kafka = LocalKafka(tmp_path / "devstack")
    try:
        with pytest.raises(DevstackError) as raised:
            kafka.up(stop_with_pid=os.getpid())
        message = raised.value.message
        assert f"could not bind free ports in {START_ATTEMPTS} attempts" in message
        assert len(taker.taken) == 2 * START_ATTEMPTS
        for broker_port, controller_port in zip(taker.taken[::2], taker.taken[1::2], strict=True):
            assert f"{broker_port}/{controller_port} ({broker_port} taken) ({controller_port} taken)" in message
        log_file = tmp_path / "devstack" / "logs" / "server.log"
        assert f"read {log_file}" in raised.value.fix and log_file.is_file()
        assert kafka.status() is None, "a node of a failed attempt still runs"
    finally:
        taker.close()
        kafka.down()
