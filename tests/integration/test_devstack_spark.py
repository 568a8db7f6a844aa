"""`eos devstack up --spark-workers N` as a user runs it: two devstacks side by side, stopped from other processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from airflow_provider_eos.core.errors import SparkClusterError
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.broker_nodes import pid_alive
from airflow_provider_eos.devstack.process_groups import group_members
from airflow_provider_eos.devstack.spark_cluster import SparkCluster, SparkClusterInfo

pytestmark = [pytest.mark.integration, pytest.mark.spark]

EOS = Path(sys.executable).with_name("eos")


def eos(*args: str | Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([str(EOS), *map(str, args)], capture_output=True, text=True, timeout=timeout, check=False)


def eos_in_background(*args: str | Path) -> subprocess.Popen:
    return subprocess.Popen([str(EOS), *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen, timeout: float = 180) -> subprocess.CompletedProcess:
    stdout, stderr = process.communicate(timeout=timeout)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def master_json(info: SparkClusterInfo) -> dict:
    with urllib.request.urlopen(f"{info.webui_url}/json/", timeout=5) as response:
        return json.load(response)


def assert_nothing_runs(info: SparkClusterInfo) -> None:
    for pid in info.pids():
        assert not pid_alive(pid), f"Spark daemon pid {pid} still runs"
        assert not group_members(pid), f"processes {group_members(pid)} of daemon {pid}'s group still run"


@pytest.mark.long  # CI: the suite's own brokers and clusters run side by side
def test_two_devstacks_with_spark_clusters_side_by_side(tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    recorded: list[SparkClusterInfo] = []
    # Started at the same time: the two choose their ports concurrently, the likeliest time to collide.
    starting = [
        eos_in_background("devstack", "up", "--state-dir", first, "--spark-workers", "2"),
        eos_in_background("devstack", "up", "--state-dir", second, "--spark-workers", "1",
                          "--spark-worker-memory", "512m"),
    ]
    try:
        up, beside = (finish(process) for process in starting)
        recorded += [info for info in (SparkCluster(first).recorded(), SparkCluster(second).recorded()) if info]
        assert up.returncode == 0, up.stderr
        assert beside.returncode == 0, beside.stderr
        info, other = recorded
        lines = up.stdout.strip().splitlines()
        assert lines[-1].startswith("bootstrap.servers=127.0.0.1:")
        assert re.fullmatch(r"spark\.master=spark://127\.0\.0\.1:\d+", lines[-2]), lines
        assert lines[-2] == f"spark.master={info.master_url}"
        assert (info.workers, info.worker_cores, info.worker_memory) == (2, 1, "1g")
        master = master_json(info)
        assert master["url"] == info.master_url
        alive = [w for w in master["workers"] if w["state"] == "ALIVE"]
        assert len(alive) == 2 and {w["cores"] for w in alive} == {1} and {w["memory"] for w in alive} == {1024}
        assert {w["host"] for w in alive} == {"127.0.0.1", "localhost"}, "two loopback 'hosts' for speculation"
        assert info.master_log.exists() and all(Path(d.log_file).exists() for d in info.daemons)

        status = eos("devstack", "status", "--state-dir", first)
        assert status.returncode == 0, status.stdout + status.stderr
        status_lines = status.stdout.strip().splitlines()
        assert status_lines[-2:] == lines[-2:]
        assert f"ui={info.webui_url}" in status.stdout and "workers=2/2 alive" in status.stdout

        again = eos("devstack", "up", "--state-dir", first, "--spark-workers", "2")
        assert again.returncode == 0 and again.stdout.strip().splitlines()[-2:] == lines[-2:], "up is idempotent"
        other_size = eos("devstack", "up", "--state-dir", first, "--spark-workers", "1")
        assert other_size.returncode == 2 and "eos devstack down" in other_size.stderr

        assert beside.stdout.strip().splitlines()[-2] == f"spark.master={other.master_url}"
        assert beside.stdout.strip().splitlines()[-1] != lines[-1], "each devstack has its own broker"
        assert {other.master_port, other.webui_port}.isdisjoint({info.master_port, info.webui_port})
        assert not set(other.pids()) & set(info.pids())
        other_master = master_json(other)
        assert [w["memory"] for w in other_master["workers"] if w["state"] == "ALIVE"] == [512]
        assert len([w for w in master_json(info)["workers"] if w["state"] == "ALIVE"]) == 2, "no worker moved"
    finally:
        for process in starting:
            if process.poll() is None:
                process.kill()  # a hung start; the downs below stop what it recorded
        downs = [eos("devstack", "down", "--state-dir", folder) for folder in (first, second)]
    assert [d.returncode for d in downs] == [0, 0], [d.stderr for d in downs]
    assert all("spark cluster stopped" in d.stdout and "stopped and removed" in d.stdout for d in downs)
    assert len(recorded) == 2
    for info in recorded:
        assert_nothing_runs(info)
    assert eos("devstack", "status", "--state-dir", first).returncode == 1
    assert not first.exists() and not second.exists()


def test_a_cluster_that_does_not_come_up_in_time_is_stopped_and_names_its_log(tmp_path):
    cluster = SparkCluster(tmp_path)
    with pytest.raises(SparkClusterError) as raised:
        cluster.up(workers=1, timeout_s=1)
    log_file = tmp_path / "spark" / "master.log"
    assert str(log_file) in raised.value.fix and "within 1s" in raised.value.message
    assert log_file.exists(), "the log the error names is kept"
    assert cluster.recorded() is None, "nothing is recorded as running"
    # Its daemons' environment names the folder (SPARK_CONF_DIR); their command lines do not.
    leftovers = [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and str(tmp_path).encode() in _environ(p)]
    assert not leftovers, f"processes of the failed cluster still run: {leftovers}"


def test_bad_worker_settings_are_refused_before_anything_starts(tmp_path):
    state = tmp_path / "x"
    result = eos("devstack", "up", "--state-dir", state, "--spark-workers", "1", "--spark-worker-memory", "lots")
    assert result.returncode == 2 and "'lots' is not a JVM memory size" in result.stderr
    assert not state.exists()
    assert LocalKafka(state).status() is None


def _environ(proc: Path) -> bytes:
    try:
        return (proc / "environ").read_bytes()  # empty for a zombie
    except OSError:
        return b""
