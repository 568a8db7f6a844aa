"""What a failed or partial devstack leaves, and what it reports.

No broker, JVM or Airflow is started: the parts' processes are stood in for, their failures simulated.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import airflow_provider_eos.devstack.broker as broker_module
import airflow_provider_eos.devstack.yarn as yarn_module
from airflow_provider_eos.cli.main import main
from airflow_provider_eos.core.errors import AirflowDeploymentError, DevstackError, YarnClusterError
from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow, default_dags_folder
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.broker_state import BrokerInfo, NodeInfo
from airflow_provider_eos.devstack.state_folder import StateFolder
from airflow_provider_eos.devstack.yarn import YarnMiniCluster
from airflow_provider_eos.devstack.yarn_state import YarnClusterInfo


def _yarn_without_jvm(monkeypatch: pytest.MonkeyPatch, wait_ready) -> None:
    monkeypatch.setattr(yarn_module, "require_java", lambda: "java")
    monkeypatch.setattr(yarn_module, "pyspark_hadoop_version", lambda: "3.4.1")
    monkeypatch.setattr(yarn_module, "hadoop_minicluster_jars_dir", lambda version: Path("/nonexistent"))

    def spawn(self: YarnMiniCluster, java: str, jars: Path, info: YarnClusterInfo) -> int:
        info.log_file.write_text("java.net.BindException: simulated\n")
        return 0  # no process to stop

    monkeypatch.setattr(YarnMiniCluster, "_spawn", spawn)
    monkeypatch.setattr(YarnMiniCluster, "_wait_ready", wait_ready)


def test_a_failed_yarn_start_keeps_the_log_its_error_names(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def fail(self: YarnMiniCluster, info: YarnClusterInfo, timeout_s: float) -> bool:
        raise YarnClusterError("simulated: the MiniCluster exited", fix=f"read {info.log_file}")

    _yarn_without_jvm(monkeypatch, fail)
    yarn = YarnMiniCluster(tmp_path / "st")
    with pytest.raises(YarnClusterError):
        yarn.up(timeout_s=5)
    assert (tmp_path / "st" / "yarn" / "cluster.log").read_text() == "java.net.BindException: simulated\n"
    assert yarn.recorded() is None  # nothing runs: the state file is gone


def test_a_yarn_start_out_of_port_attempts_keeps_the_log(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _yarn_without_jvm(monkeypatch, lambda self, info, timeout_s: False)  # a port taken on every attempt
    with pytest.raises(YarnClusterError, match="could not bind free ports"):
        YarnMiniCluster(tmp_path / "st").up(timeout_s=5)
    assert (tmp_path / "st" / "yarn" / "cluster.log").exists()


def _three_brokers(state: Path) -> BrokerInfo:
    nodes = tuple(NodeInfo(i, 1000 + i, 9090 + i, 9190 + i, str(state / f"node-{i}")) for i in (1, 2, 3))
    return BrokerInfo(1001, 9091, 9191, str(state), 900000, nodes=nodes)


@pytest.mark.parametrize(("down", "code"), [(set(), 0), ({2}, 1)])
def test_status_is_a_finding_when_one_broker_node_is_down(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str], down: set[int],
                                                          code: int) -> None:
    monkeypatch.setattr(NodeInfo, "running", lambda self: self.node_id not in down)
    monkeypatch.setattr(LocalKafka, "status", lambda self: _three_brokers(tmp_path))
    assert main(["devstack", "status", "--state-dir", str(tmp_path)]) == code
    assert ("broker 2 not running" in capsys.readouterr().out) == bool(down)


def test_a_broker_that_survives_sigkill_keeps_the_state_that_names_it(monkeypatch: pytest.MonkeyPatch,
                                                                        tmp_path: Path) -> None:
    state = tmp_path / "st"
    StateFolder(state).claim()
    recorded = BrokerInfo(4242, 1, 2, str(state), 900000)
    (state / "devstack.json").write_text(recorded.to_json())
    monkeypatch.setattr(NodeInfo, "running", lambda self: True)

    def stuck(pid: int, timeout_s: float, **kwargs: object) -> None:
        raise DevstackError(f"broker pid {pid} is still there after SIGKILL", fix="look at /proc")

    monkeypatch.setattr(broker_module, "terminate", stuck)
    with pytest.raises(DevstackError, match="4242"):
        LocalKafka(state).down()
    assert (state / "devstack.json").read_text() == recorded.to_json()  # a second `down` finds the survivor
    stopped: list[int] = []
    monkeypatch.setattr(broker_module, "terminate", lambda pid, timeout_s, **kwargs: stopped.append(pid))
    assert LocalKafka(state).down().stopped == (4242,) and stopped == [4242] and not state.exists()


@pytest.mark.parametrize("as_json", [False, True])
def test_a_failed_later_stage_of_up_names_the_broker_still_running(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   as_json: bool) -> None:
    state = tmp_path / "st"
    monkeypatch.setattr(LocalKafka, "status", lambda self: None)
    monkeypatch.setattr(LocalKafka, "up", lambda self, **kwargs: BrokerInfo(4242, 9092, 9093, str(state), 900000))

    def fail(self: YarnMiniCluster, **kwargs: object) -> None:
        raise YarnClusterError("simulated: the Hadoop MiniCluster did not come up", fix="read the log")

    monkeypatch.setattr(YarnMiniCluster, "up", fail)
    assert main(["devstack", "up", "--state-dir", str(state), "--yarn", *(["--json"] if as_json else [])]) == 2
    out, err = capsys.readouterr()
    if as_json:
        error = json.loads(out)
        text = f"{error['message']}\nFix: {error['fix']}"
    else:
        text = err
    assert f"Still running in {state}: the broker (127.0.0.1:9092)." in text
    assert f"read the log; then stop them with `eos devstack down --state-dir {state}`" in text


def test_a_refused_airflow_option_leaves_no_state_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "st"
    assert main(["airflow", "up", "--state-dir", str(state), "--statsd", "nohost"]) == 2
    assert "--statsd 'nohost' is not HOST:PORT" in capsys.readouterr().err
    assert not state.exists()


def _running_airflow(monkeypatch: pytest.MonkeyPatch, state: Path) -> AirflowDeploymentInfo:
    home = state / "airflow"
    info = AirflowDeploymentInfo(port=1, airflow_home=str(home), dags_folder=str(default_dags_folder().resolve()),
                                 specs_dir=str(state / "pipelines"), password_file=str(home / "pw.json"),
                                 daemons=[], statsd="127.0.0.1:8125", spark_master="local[2]")
    monkeypatch.setattr(LocalAirflow, "running", lambda self: info)
    return info


@pytest.mark.parametrize(("option", "changed"), [
    ("--statsd", {"statsd": "127.0.0.1:9125"}), ("--statsd", {"statsd": None}),
    ("--dags-folder", {"dags_folder": "/elsewhere/dags"}), ("--specs-dir", {"specs_dir": "/elsewhere/pipelines"}),
    ("--spark-master", {"spark_master": "spark://127.0.0.1:7077"}),
    ("--spark-master", {"spark_master": "local[4]"}),
])
def test_a_running_airflow_refuses_other_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, option: str,
                                                 changed: dict[str, object]) -> None:
    _running_airflow(monkeypatch, tmp_path)
    asked = {"statsd": "127.0.0.1:8125", "spark_master": "local[2]", **changed}
    with pytest.raises(AirflowDeploymentError, match=f"{option} .* runs, .* asked for"):
        LocalAirflow(tmp_path).up(**asked)


def test_a_running_airflow_asked_for_the_same_options_is_returned(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    info = _running_airflow(monkeypatch, tmp_path)
    assert LocalAirflow(tmp_path).up(statsd="127.0.0.1:8125", spark_master="local[2]") is info


@pytest.mark.parametrize("spelled", ["local[2]", " local[2]", "LOCAL[2]\n"])
def test_a_running_airflow_asked_for_its_master_in_another_spelling_is_returned(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, spelled: str) -> None:
    info = _running_airflow(monkeypatch, tmp_path)
    assert LocalAirflow(tmp_path).up(statsd="127.0.0.1:8125", spark_master=spelled) is info


@pytest.mark.parametrize(("recorded", "spelled"), [
    ("spark://127.0.0.1:7077/", "spark://127.0.0.1:7077"),  # a state file from before the one spelling
    ("spark://127.0.0.1:7077", "SPARK://127.0.0.1:7077/ "),
])
def test_a_standalone_master_compares_by_its_one_spelling(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                         recorded: str, spelled: str) -> None:
    info = _running_airflow(monkeypatch, tmp_path).model_copy(update={"spark_master": recorded})
    monkeypatch.setattr(LocalAirflow, "running", lambda self: info)
    assert LocalAirflow(tmp_path).up(statsd="127.0.0.1:8125", spark_master=spelled) is info


def test_localhost_is_not_taken_for_127_0_0_1(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    info = _running_airflow(monkeypatch, tmp_path).model_copy(update={"spark_master": "spark://127.0.0.1:7077"})
    monkeypatch.setattr(LocalAirflow, "running", lambda self: info)
    with pytest.raises(AirflowDeploymentError, match=re.escape("--spark-master 'spark://127.0.0.1:7077' runs, "
                                                               "'spark://localhost:7077' asked for")):
        LocalAirflow(tmp_path).up(statsd="127.0.0.1:8125", spark_master="spark://localhost:7077")


def test_a_blank_spark_master_is_refused_before_the_folder_is_claimed(tmp_path: Path) -> None:
    with pytest.raises(AirflowDeploymentError, match="--spark-master ' ' is empty"):
        LocalAirflow(tmp_path / "st").up(spark_master=" ")
    assert not (tmp_path / "st").exists()
