"""Stopping one broker node: ``terminate`` returns only once the process is gone, and says so when it is not.

A stand-in node is a small Python process in a session of its own (as a broker JVM is started);
no JVM starts here.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator

import pytest

from airflow_provider_eos.core.errors import DevstackError
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack import broker_nodes
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.broker_nodes import pid_alive, terminate
from airflow_provider_eos.devstack.broker_state import BrokerInfo, NodeInfo
from airflow_provider_eos.devstack.state_folder import StateFolder

STUBBORN = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('up', flush=True); "
            "time.sleep(120)")


@pytest.fixture
def node() -> Iterator[subprocess.Popen]:
    process = subprocess.Popen([sys.executable, "-c", STUBBORN], stdout=subprocess.PIPE, start_new_session=True)
    assert process.stdout is not None and process.stdout.readline() == b"up\n"  # SIGTERM is ignored from here
    yield process
    if process.poll() is None:
        process.kill()
        process.wait()


def test_a_sigkill_returns_once_the_node_is_gone(node: subprocess.Popen) -> None:
    terminate(node.pid, 0.1, sig=signal.SIGKILL)
    assert not pid_alive(node.pid)


def test_a_node_that_ignores_sigterm_is_killed_after_the_grace_and_is_gone_on_return(node: subprocess.Popen) -> None:
    terminate(node.pid, 0.5)
    assert not pid_alive(node.pid)


def test_a_node_that_outlives_sigkill_is_an_error_naming_its_pid(node: subprocess.Popen, monkeypatch) -> None:
    # A process in uninterruptible sleep (D state) outlives SIGKILL until its I/O returns; stand it in
    # by a check that never sees the exit.
    monkeypatch.setattr(broker_nodes, "_exited", lambda pid: False)
    quick = RetryPolicy(waiting_for="the broker to exit", timeout_s=0.5, first_delay_s=0.1, max_delay_s=0.1)
    monkeypatch.setattr(broker_nodes, "BROKER_EXITS", quick)
    with pytest.raises(DevstackError, match=rf"broker pid {node.pid} is still there") as raised:
        terminate(node.pid, 0.2)
    assert f"/proc/{node.pid}/status" in raised.value.fix


def test_down_stops_every_node_when_one_outlives_sigkill(tmp_path, monkeypatch) -> None:
    # Each stand-in's command line names its node's config file, as a broker's does: down stops only those.
    nodes = [subprocess.Popen([sys.executable, "-c", STUBBORN, str(tmp_path / f"node-{i + 1}" / "server.properties")],
                              stdout=subprocess.PIPE, start_new_session=True) for i in range(3)]
    try:
        for process in nodes:
            assert process.stdout is not None and process.stdout.readline() == b"up\n"
        stuck = nodes[0].pid
        info = BrokerInfo(pid=stuck, port=1, controller_port=2, state_dir=str(tmp_path), transaction_max_timeout_ms=1,
                          nodes=tuple(NodeInfo(i + 1, p.pid, 10 + i, 20 + i, str(tmp_path / f"node-{i + 1}"))
                                      for i, p in enumerate(nodes)))
        StateFolder(tmp_path).claim()  # a folder the devstack made: down removes what it wrote there
        (tmp_path / "devstack.json").write_text(info.to_json())
        real_exited = broker_nodes._exited
        monkeypatch.setattr(broker_nodes, "_exited", lambda pid: pid != stuck and real_exited(pid))
        quick = RetryPolicy(waiting_for="the broker to exit", timeout_s=0.5, first_delay_s=0.1, max_delay_s=0.1)
        monkeypatch.setattr(broker_nodes, "BROKER_EXITS", quick)
        with pytest.raises(DevstackError, match=rf"broker pid {stuck} is still there"):
            LocalKafka(tmp_path).down(timeout_s=0.2)
        assert not any(pid_alive(p.pid) for p in nodes[1:]), "the nodes after the stuck one were left running"
        # The state is kept: it names the stuck node, for the `down` the error asks for.
        assert (tmp_path / "devstack.json").read_text() == info.to_json()
    finally:
        for process in nodes:
            process.kill()
            process.wait()
