"""A relative ``--state-dir`` or ``$EOS_HOME`` is made absolute where the devstack takes it.

The JVMs get the state folder's paths on their command lines and resolve a relative one against
their own working folder (YARN's ``java.io.tmpdir`` then pointed twice into the folder), and
Airflow refuses a relative SQLite URL; the printed paths must work from any folder too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo, airflow_environment
from airflow_provider_eos.devstack.broker import LocalKafka
from airflow_provider_eos.devstack.jars import eos_home
from airflow_provider_eos.devstack.spark_cluster import SparkCluster
from airflow_provider_eos.devstack.yarn import YarnMiniCluster
from airflow_provider_eos.devstack.yarn_state import YarnClusterInfo, YarnPorts


@pytest.fixture
def in_tmp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


@pytest.mark.parametrize("part", [LocalKafka, SparkCluster, YarnMiniCluster, LocalAirflow])
def test_a_relative_state_folder_becomes_absolute(part: type, in_tmp: Path) -> None:
    assert part("st").state_dir == in_tmp / "st"


def test_a_relative_eos_home_becomes_absolute(monkeypatch: pytest.MonkeyPatch, in_tmp: Path) -> None:
    for name in ("EOS_HOME", "AIRFLOW__EOS__HOME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EOS_HOME", "rel-home")
    assert eos_home() == in_tmp / "rel-home"
    assert LocalKafka().state_dir == in_tmp / "rel-home" / "devstack"
    assert LocalAirflow().state_dir == in_tmp / "rel-home" / "devstack"


def test_the_yarn_command_line_and_airflow_database_get_absolute_paths(in_tmp: Path) -> None:
    yarn = YarnMiniCluster("st")
    info = YarnClusterInfo(pid=0, hadoop_version="3.4.1", state_dir=str(yarn.state_dir), ports=YarnPorts.choose(),
                           node_memory_mb=1024, node_vcores=1)
    assert info.yarn_dir.is_absolute() and info.yarn_dir == in_tmp / "st" / "yarn"
    home = LocalAirflow("st").work_dir
    info = AirflowDeploymentInfo(port=4321, airflow_home=str(home), dags_folder="/repo/dags",
                                 specs_dir=str(in_tmp / "p"), password_file=str(home / "pw.json"), daemons=[])
    assert airflow_environment(info, jwt_secret="j", fernet_key="f")["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] == (
        f"sqlite:///{in_tmp / 'st' / 'airflow' / 'airflow.db'}")
