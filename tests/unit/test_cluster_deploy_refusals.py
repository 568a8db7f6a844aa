"""Deploy targets the submit operator refuses before anything is submitted or recorded.

The real operator against real Airflow connections (``AIRFLOW_CONN_*``); only the Spark provider
hook's ``submit`` is replaced, by a recorder: a refusal must come before it, and before the
``driver`` XCom, which would send the recovery branch looking for a driver that never started.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_home", "run_input_not_read")]

SPEC = {
    "name": "orders", "kafka": {"bootstrap.servers": "spec-broker:9092"}, "input_topics": ["orders-in"],
    "output_topic": "orders-out", "group_id": "orders-sink", "transactional_id_prefix": "orders-eos",
    "checkpoint_location": "/tmp/checkpoints/orders",
    "connector": {"jars": ["https://repo.example.com/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar"]},
}


class RecordingTaskInstance:
    dag_id = "eos_pipeline__orders"
    stats_tags: dict[str, str] = {}

    def __init__(self) -> None:
        self.xcom: dict[str, object] = {}

    def xcom_push(self, key: str, value: object) -> None:
        self.xcom[key] = value


@pytest.fixture
def submitted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    seen: list[str] = []
    monkeypatch.setattr(SparkSubmitHook, "submit", lambda hook, application="", **kwargs: seen.append(application))
    return seen


def _execute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, connection: dict, ti: RecordingTaskInstance) -> None:
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps({"conn_type": "spark", **connection}))
    spec_path = tmp_path / "orders.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC))
    operator = EosSparkSubmitOperator(task_id="submit", spec_path=str(spec_path), conn_id="eos_spark")
    operator.execute({"ti": ti, "run_id": f"manual__{uuid.uuid4().hex}"})


def test_a_standalone_master_in_cluster_deploy_mode_is_refused_before_anything_is_submitted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, submitted: list[str]) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    ti = RecordingTaskInstance()
    with pytest.raises(AirflowFailException) as refused:
        _execute(tmp_path, monkeypatch, {"host": "spark://127.0.0.1", "port": 7077,
                                         "extra": {"deploy-mode": "cluster"}}, ti)
    message = str(refused.value)
    assert "Spark standalone runs no Python application in cluster deploy mode" in message, message
    assert "spark://127.0.0.1:7077" in message and "env_vars" not in message, message
    assert submitted == [] and ti.xcom == {}, "refused after the driver was recorded"


def test_yarn_cluster_mode_without_a_resourcemanager_address_is_refused_before_anything_is_submitted(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, submitted: list[str]) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    ti = RecordingTaskInstance()
    with pytest.raises(AirflowFailException) as refused:
        _execute(tmp_path, monkeypatch, {"host": "yarn", "extra": {"deploy-mode": "cluster"}}, ti)
    message = str(refused.value)
    assert "without the ResourceManager's web address" in message, message
    assert "yarn_resourcemanager_webapp_address" in message and "HADOOP_CONF_DIR" in message, message
    assert submitted == [] and ti.xcom == {}, "refused after the driver was recorded"


def test_yarn_cluster_mode_with_the_address_in_yarn_conf_dir_is_submitted_and_followed_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, submitted: list[str]) -> None:
    conf_dir = tmp_path / "yarn-conf"
    conf_dir.mkdir()
    (conf_dir / "yarn-site.xml").write_text(
        "<configuration><property><name>yarn.resourcemanager.hostname</name><value>rm.example.com</value>"
        "</property></configuration>")
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.setenv("YARN_CONF_DIR", str(conf_dir))
    ti = RecordingTaskInstance()
    # The provider follows the application it submitted (its id, from spark-submit's output; none here).
    with pytest.raises(RuntimeError, match="did not produce a YARN application ID"):
        _execute(tmp_path, monkeypatch, {"host": "yarn", "extra": {"deploy-mode": "cluster"}}, ti)
    assert submitted, "nothing was submitted"
    assert ti.xcom["driver"]["manager_url"] == "http://rm.example.com:8088", ti.xcom["driver"]
