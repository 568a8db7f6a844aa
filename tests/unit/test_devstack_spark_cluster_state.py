"""The devstack's Spark cluster as data: the state file, the master's /json/, and settings checks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from pydantic import ValidationError

from airflow_provider_eos.core.errors import DevstackError, SparkClusterError
from airflow_provider_eos.devstack.process_groups import process_state
from airflow_provider_eos.devstack.spark_cluster import SparkCluster
from airflow_provider_eos.devstack.spark_cluster_state import (
    STATE_FILE,
    SparkClusterInfo,
    SparkClusterStatus,
    SparkDaemon,
    check_worker_settings,
    parse_master_json,
)
from airflow_provider_eos.devstack.state_folder import StateFolder


def worker_json(host: str, port: int, state: str = "ALIVE") -> dict:
    # As Spark 4.2's master writes it, trimmed of fields the devstack ignores.
    return {"id": f"worker-20261123193639-{host}-{port}", "host": host, "port": port,
            "webuiaddress": f"http://{host}:41405", "cores": 1, "coresused": 0, "memory": 1024,
            "resources": {}, "state": state, "lastheartbeat": 1795462602171}


def master_json(url: str = "spark://127.0.0.1:17077", status: str = "ALIVE", workers: list | None = None) -> str:
    return json.dumps({"url": url, "workers": workers or [], "aliveworkers": 0, "cores": 0, "activeapps": [],
                       "completedapps": [], "status": status})


def cluster_info(tmp_path, workers: int = 2) -> SparkClusterInfo:
    daemons = [SparkDaemon(role="master", pid=101, host="127.0.0.1", log_file=str(tmp_path / "spark/master.log"))]
    daemons += [SparkDaemon(role="worker", pid=200 + i, host=("127.0.0.1", "localhost")[i % 2],
                            log_file=str(tmp_path / f"spark/worker-{i}.log")) for i in range(workers)]
    return SparkClusterInfo(master_port=17077, webui_port=18080, workers=workers, worker_cores=1, worker_memory="1g",
                            state_dir=str(tmp_path), daemons=daemons)


def test_master_json_counts_only_alive_workers():
    view = parse_master_json(master_json(workers=[
        worker_json("127.0.0.1", 37615), worker_json("localhost", 37616), worker_json("localhost", 37617, "DEAD"),
    ]))
    assert view.alive_workers == 2
    assert [w.host for w in view.workers] == ["127.0.0.1", "localhost", "localhost"]


def test_master_json_without_workers_counts_none():
    assert parse_master_json(master_json()).alive_workers == 0


def test_the_master_serves_a_cluster_only_at_its_url_and_once_elected(tmp_path):
    info = cluster_info(tmp_path)
    assert parse_master_json(master_json()).serves(info)
    assert not parse_master_json(master_json(url="spark://127.0.0.1:17078")).serves(info), "another stack's master"
    assert not parse_master_json(master_json(status="STANDBY")).serves(info)


@pytest.mark.parametrize("text", ["<html>not found</html>", '{"workers": []}', '{"url": "x", "status": 3}'])
def test_a_page_that_is_not_the_master_json_is_a_typed_error(text):
    with pytest.raises(SparkClusterError, match="not the document expected") as raised:
        parse_master_json(text)
    assert isinstance(raised.value, DevstackError) and raised.value.fix


def test_state_round_trips_through_json(tmp_path):
    info = cluster_info(tmp_path)
    again = SparkClusterInfo.model_validate_json(info.model_dump_json())
    assert again == info
    assert again.master_url == "spark://127.0.0.1:17077" and again.webui_url == "http://127.0.0.1:18080"
    assert again.master_log == tmp_path / "spark" / "master.log" and again.log_dir == tmp_path / "spark"
    assert again.pids() == [101, 200, 201] and again.pids("worker") == [200, 201] and again.pids("master") == [101]
    assert [d.main_class for d in again.daemons] == [
        "org.apache.spark.deploy.master.Master", *["org.apache.spark.deploy.worker.Worker"] * 2]


def test_state_refuses_unknown_fields_and_roles(tmp_path):
    record = json.loads(cluster_info(tmp_path).model_dump_json())
    with pytest.raises(ValidationError):
        SparkClusterInfo.model_validate({**record, "surprise": 1})
    record["daemons"][0]["role"] = "driver"
    with pytest.raises(ValidationError):
        SparkClusterInfo.model_validate(record)


@pytest.mark.parametrize(
    ("master_running", "running", "registered", "alive", "healthy"),
    [
        (True, 2, 2, 2, True),
        (True, 1, 2, 1, False),  # a killed worker stays ALIVE at the master until its heartbeat times out
        (True, 2, 1, 1, False),  # a started worker not registered yet
        (False, 2, 2, 0, False),  # no master, no cluster
    ],
)
def test_a_worker_is_alive_when_it_runs_and_the_master_lists_it(tmp_path, master_running, running, registered,
                                                                  alive, healthy):
    status = SparkClusterStatus(cluster_info(tmp_path), master_running, running, registered)
    assert (status.workers_alive, status.healthy) == (alive, healthy)


@pytest.mark.parametrize("memory", ["1g", "512m", "2G", "1048576k", "1073741824"])
def test_worker_memory_in_jvm_sizes_is_accepted(memory):
    check_worker_settings(2, 1, memory)


@pytest.mark.parametrize(
    ("workers", "cores", "memory", "message"),
    [(0, 1, "1g", "at least one worker"), (1, 0, "1g", "at least one core"), (1, 1, "1 g", "not a JVM memory size"),
     (1, 1, "0g", "not a JVM memory size"), (1, 1, "lots", "'lots' is not a JVM memory size")],
)
def test_unusable_worker_settings_are_refused(workers, cores, memory, message):
    with pytest.raises(SparkClusterError, match=message):
        check_worker_settings(workers, cores, memory)


def test_proc_stat_is_read_after_the_last_parenthesis():
    assert process_state("4242 (java) S 1 4242 4242 0 -1 4194560") == ("S", 4242)
    assert process_state("77 (we(ird) (name)) Z 5 70 70 0") == ("Z", 70)


def test_nothing_recorded_reads_as_none_and_down_is_a_no_op(tmp_path):
    cluster = SparkCluster(tmp_path)
    assert cluster.recorded() is None and cluster.status() is None
    assert cluster.down() is False


def test_an_unreadable_state_file_is_a_typed_error_and_down_removes_it(tmp_path):
    StateFolder(tmp_path).claim()  # a folder the devstack made: down removes what the cluster wrote there
    (tmp_path / STATE_FILE).write_text("{not json")
    cluster = SparkCluster(tmp_path)
    with pytest.raises(SparkClusterError, match="is not a Spark cluster state file"):
        cluster.status()
    assert cluster.down() is False
    assert not (tmp_path / STATE_FILE).exists()


def test_a_recorded_cluster_whose_processes_are_gone_reads_as_not_running(tmp_path):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)
    pid = int(gone.stdout)
    info = cluster_info(tmp_path, workers=1).model_copy(update={"daemons": [
        SparkDaemon(role="master", pid=pid, host="127.0.0.1", log_file="m.log"),
        SparkDaemon(role="worker", pid=pid, host="127.0.0.1", log_file="w.log"),
    ]})
    (tmp_path / STATE_FILE).write_text(info.model_dump_json())
    status = SparkCluster(tmp_path).status()
    assert status is not None and status.info == info
    assert (status.master_running, status.workers_running, status.workers_alive, status.healthy) == (False, 0, 0, False)
