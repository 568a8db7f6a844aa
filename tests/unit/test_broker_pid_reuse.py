"""A devstack broker's recorded pid is signalled only while it still runs that broker.

Once a broker is gone its pid can be reused by any program; the state file still names it. The
stranger here is a ``sleep`` leading its own session (as a broker node does, so a signal to its
process group would reach it); no JVM starts.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_eos.cli.main import main
from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.broker_state import BrokerInfo, NodeInfo
from airflow_provider_eos.devstack.state_folder import StateFolder


@pytest.fixture
def stranger() -> Iterator[subprocess.Popen]:
    process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    yield process
    process.kill()
    process.wait()


def recorded_as_broker(tmp_path: Path, pid: int) -> Path:
    """A devstack folder whose state file names ``pid`` as its one broker node."""
    folder = StateFolder(tmp_path / "devstack").claim()
    node = NodeInfo(1, pid, 1, 2, str(folder))
    (folder / "devstack.json").write_text(BrokerInfo(pid, 1, 2, str(folder), 1000, nodes=(node,)).to_json())
    (folder / "server.properties").write_text("the devstack's")
    return folder


def test_a_reused_pid_is_not_a_running_broker(tmp_path: Path, stranger: subprocess.Popen) -> None:
    assert LocalKafka(recorded_as_broker(tmp_path, stranger.pid)).status() is None


def test_down_leaves_a_reused_pid_alone_and_says_so(tmp_path: Path, stranger: subprocess.Popen, capsys) -> None:
    folder = recorded_as_broker(tmp_path, stranger.pid)
    assert main(["devstack", "down", "--state-dir", str(folder)]) == 0
    out = capsys.readouterr().out
    assert stranger.poll() is None and pid_alive(stranger.pid), "down killed a process that is not its broker"
    assert f"broker 1 (pid {stranger.pid}) was not running: that pid now runs another program, left alone" in out
    assert "no devstack broker was running" in out
    assert not folder.exists(), "the stale state is removed all the same"


def test_down_reports_the_pid_it_left_alone(tmp_path: Path, stranger: subprocess.Popen) -> None:
    done = LocalKafka(recorded_as_broker(tmp_path, stranger.pid)).down(timeout_s=1)
    assert not done and done.stopped == () and [node.pid for node in done.left_alone] == [stranger.pid]
    assert stranger.poll() is None


@pytest.mark.parametrize("action", ["kill", "pause", "stop", "restart"])
def test_a_fault_is_not_sent_to_a_reused_pid(tmp_path: Path, stranger: subprocess.Popen, action: str,
                                             monkeypatch) -> None:
    from airflow_provider_eos.devstack import broker

    def no_start(*args: object) -> None:
        raise AssertionError("restart went on to start a node")

    monkeypatch.setattr(broker, "require_java", no_start)
    folder = recorded_as_broker(tmp_path, stranger.pid)
    with pytest.raises((DevstackError, AssertionError)) as raised:
        LocalKafka(folder).fault(action, 1, timeout_s=1)
    assert stranger.poll() is None, f"{action} reached a process that is not the broker"
    if action != "restart":
        assert isinstance(raised.value, DevstackError) and "now runs another program" in raised.value.message
    with open(f"/proc/{stranger.pid}/stat") as stat:
        assert stat.read().rsplit(")", 1)[1].split()[0] != "T", "the stranger was paused"
