"""What a failed or partial devstack leaves, and what it reports.

No broker, JVM or Airflow is started: the parts' processes are stood in for, their failures simulated.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import airflow_provider_eos.devstack.yarn as yarn_module
from airflow_provider_eos.core.errors import YarnClusterError
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
