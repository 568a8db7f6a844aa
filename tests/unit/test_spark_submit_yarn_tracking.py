"""On YARN in cluster deploy mode EosSparkSubmitOperator follows and kills the application through the RM REST API."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def operator_on(monkeypatch: pytest.MonkeyPatch, extra: dict[str, str], master: str = "yarn"):
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps({"conn_type": "spark", "host": master, "extra": extra}))
    return EosSparkSubmitOperator(task_id="submit", spec_path="/x.yaml", conn_id="eos_spark")


def yarn_site(folder: Path, address: str) -> Path:
    (folder / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.webapp.address</name>"
        f"<value>{address}</value></property></configuration>")
    return folder


def test_the_resourcemanager_address_comes_from_hadoop_conf_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", str(yarn_site(tmp_path, "127.0.0.1:8088")))
    operator = operator_on(monkeypatch, {"deploy-mode": "cluster"})
    operator._track_through_resourcemanager()
    hook = operator._get_hook()
    assert operator._yarn_track_via_rm_api and hook._should_track_yarn_application_via_rm_api()
    assert hook._get_yarn_rm_base_url() == "http://127.0.0.1:8088"
    # The kill the provider sends on on_kill goes to that address.
    sent: list[tuple[str, dict]] = []
    monkeypatch.setattr("requests.put", lambda url, json, **_: sent.append((url, json)) or type("R", (), {
        "status_code": 202})())
    hook._yarn_application_id = "application_1_0001"
    operator._hook = hook
    operator.on_kill()
    assert sent == [("http://127.0.0.1:8088/ws/v1/cluster/apps/application_1_0001/state", {"state": "KILLED"})]


def test_the_connection_extra_wins_and_other_masters_are_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", str(yarn_site(tmp_path, "127.0.0.1:8088")))
    operator = operator_on(monkeypatch, {"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": "rm:8088"})
    operator._track_through_resourcemanager()
    assert operator._get_hook()._get_yarn_rm_base_url() == "http://rm:8088"
    client = operator_on(monkeypatch, {"deploy-mode": "client"})
    client._track_through_resourcemanager()
    assert not client._yarn_track_via_rm_api


def test_yarn_conf_dir_and_resourcemanager_ha_name_the_address(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    (tmp_path / "yarn-site.xml").write_text(
        "<configuration>"
        "<property><name>yarn.resourcemanager.ha.rm-ids</name><value>rm1,rm2</value></property>"
        "<property><name>yarn.resourcemanager.webapp.address.rm1</name><value>rm-a:8088</value></property>"
        "<property><name>yarn.resourcemanager.webapp.address.rm2</name><value>rm-b:8088</value></property>"
        "</configuration>")
    monkeypatch.setenv("YARN_CONF_DIR", str(tmp_path))
    operator = operator_on(monkeypatch, {"deploy-mode": "cluster"})
    operator._track_through_resourcemanager()
    assert operator._yarn_track_via_rm_api and operator._get_hook()._get_yarn_rm_base_url() == "http://rm-a:8088"


def test_without_an_address_the_submit_is_refused_naming_the_extra_and_the_folders(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from airflow_provider_eos.core.errors import SubmissionError

    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    operator = operator_on(monkeypatch, {"deploy-mode": "cluster"})
    with pytest.raises(SubmissionError) as refused:
        operator._track_through_resourcemanager()
    assert "yarn_resourcemanager_webapp_address" in refused.value.message
    assert "HADOOP_CONF_DIR or YARN_CONF_DIR" in refused.value.message
    assert "eos_spark" in refused.value.fix and "HADOOP_CONF_DIR" in refused.value.fix
    assert not operator._yarn_track_via_rm_api


def test_the_hook_starts_spark_submit_with_env_vars_in_its_environment_not_on_its_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The provider's ``submit`` starts a stand-in spark-submit; the env vars stay for ``yarn application -kill``."""
    import sys

    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_provider_eos.operators.spark_submit_launch import launch_spark_submit

    secret, seen = "aws-secret-5d2a7e", tmp_path / "seen.json"
    stand_in = tmp_path / "spark-submit"
    stand_in.write_text(f"#!{sys.executable}\nimport json, os, sys\njson.dump({{'argv': sys.argv, "
                        f"'secret': os.environ.get('AWS_SECRET_ACCESS_KEY')}}, open({str(seen)!r}, 'w'))\n")
    stand_in.chmod(0o755)
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps(
        {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "client"}}))
    env_vars = {"AWS_SECRET_ACCESS_KEY": secret}
    hook = SparkSubmitHook(conn_id="eos_spark", env_vars=env_vars, spark_binary=str(stand_in))
    launch_spark_submit(hook, own_session=False)
    hook.submit("job.py")

    started = json.loads(seen.read_text())
    assert started["secret"] == secret, "the client-mode driver's environment lacks the env var"
    assert not any(secret in arg or "appMasterEnv" in arg for arg in started["argv"]), started["argv"]
    assert hook._env == env_vars, "the provider's yarn application -kill runs with the env vars"
