"""The submit task's links in Airflow: the link classes, their registration, and the operator pushing their XComs.

The operator runs with the Spark provider's real hook and a stand-in spark-submit that prints what a
driver and YARN's client print; the links' ``get_link`` reads XCom through the Task SDK, replaced here.
"""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path

import pytest
import yaml

from airflow_provider_eos.core.application_links import SPARK_APPLICATION_XCOM_KEY, SPARK_UI_XCOM_KEY, app_line
from tests.unit.test_spark_submit_operator import RecordingTaskInstance

pytestmark = [pytest.mark.airflow, pytest.mark.usefixtures("airflow_home", "run_input_not_read")]

SPEC = {
    "name": "orders",
    "kafka": {"bootstrap.servers": "spec-broker:9092"},
    "input_topics": ["orders-in"],
    "output_topic": "orders-out",
    "group_id": "orders-sink",
    "transactional_id_prefix": "orders-eos",
    "checkpoint_location": "/tmp/checkpoints/orders-links",
    "connector": {"jars": ["https://repo.example.com/jars/spark-sql-kafka-0-10_2.13-4.2.0.jar"]},
}
# The discard port: nothing answers, so the operator's look for an earlier driver finds no evidence at once.
MASTER_UI = "http://127.0.0.1:9"


def fake_spark_submit(folder: Path, lines: list[str]) -> Path:
    """A stand-in spark-submit that prints ``lines`` (to stderr, as the driver's logging does) and exits 0."""
    script = folder / "spark-submit"
    script.write_text(f"#!{sys.executable}\nimport sys\nfor line in {lines!r}:\n    print(line, file=sys.stderr)\n")
    script.chmod(0o755)
    return script


def submit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, connection: dict, lines: list[str]):
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    spec_path = tmp_path / "orders.yaml"
    spec_path.write_text(yaml.safe_dump(SPEC))
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps(connection))
    operator = EosSparkSubmitOperator(task_id="submit", spec_path=str(spec_path), conn_id="eos_spark",
                                      spark_binary=str(fake_spark_submit(tmp_path, lines)), previous_driver_wait_s=1)
    ti = RecordingTaskInstance()
    operator.execute({"ti": ti, "run_id": f"manual__{uuid.uuid4().hex}"})
    return operator, ti


def test_the_operator_pushes_the_links_from_the_drivers_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    lines = ["INFO SparkContext: Running Spark version 4.0.1",
             f"2026-11-28 09:00:00,123 INFO airflow_provider_eos.job "
             f"{app_line('app-20261128090000-0003', 'http://worker.example.com:4041')}",
             "INFO airflow_provider_eos.job EOS-QUERY started id=1 run_id=2"]
    operator, ti = submit(tmp_path, monkeypatch, {"conn_type": "spark", "host": "spark://127.0.0.1:7077",
                                                  "extra": {"spark_master_webui_url": MASTER_UI}}, lines)

    assert ti.xcom[SPARK_UI_XCOM_KEY] == "http://worker.example.com:4041"
    assert ti.xcom[SPARK_APPLICATION_XCOM_KEY] == f"{MASTER_UI}/app/?appId=app-20261128090000-0003"
    logged = capsys.readouterr().out  # the Task SDK's logging
    assert "Spark UI: http://worker.example.com:4041" in logged
    # The hook still read every line as it always does (its log of spark-submit's output).
    assert "EOS-QUERY started id=1" in logged
    assert [link.xcom_key for link in operator.operator_extra_links] == [SPARK_UI_XCOM_KEY, SPARK_APPLICATION_XCOM_KEY]


def test_a_run_that_names_no_application_pushes_no_links(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, ti = submit(tmp_path, monkeypatch, {"conn_type": "spark", "host": "local[2]"}, ["ERROR something failed"])
    assert SPARK_UI_XCOM_KEY not in ti.xcom and SPARK_APPLICATION_XCOM_KEY not in ti.xcom


def test_a_failure_to_push_the_links_is_logged_not_the_tasks(caplog: pytest.LogCaptureFixture) -> None:
    import logging

    from airflow_provider_eos.core.application_links import LinkScanner
    from airflow_provider_eos.operators.application_links import LinkPublisher

    class Refusing:
        def xcom_push(self, key: str, value: object) -> None:
            raise RuntimeError("the API server is away")

    publisher = LinkPublisher(Refusing(), LinkScanner("local[2]", "client", None), logging.getLogger("test"))
    publisher.line(app_line("local-1", "http://h:4040"))
    assert "Could not record the Spark application's links" in caplog.text
    assert "the API server is away" in caplog.text


@pytest.mark.parametrize(("link_class", "key"), [("SparkUiLink", SPARK_UI_XCOM_KEY),
                                                 ("SparkApplicationLink", SPARK_APPLICATION_XCOM_KEY)])
def test_get_link_reads_the_xcom_the_operator_pushed(monkeypatch: pytest.MonkeyPatch, link_class: str,
                                                     key: str) -> None:
    from airflow.sdk.execution_time.xcom import XCom

    from airflow_provider_eos.operators import application_links

    stored = {("eos_orders", "submit", "manual__1", key): "http://somewhere:4040"}
    asked: list[str] = []

    def get_value(*, ti_key, key: str):
        asked.append(key)
        return stored.get((ti_key.dag_id, ti_key.task_id, ti_key.run_id, key))

    monkeypatch.setattr(XCom, "get_value", staticmethod(get_value))
    link = getattr(application_links, link_class)()
    found = type("Key", (), {"dag_id": "eos_orders", "task_id": "submit", "run_id": "manual__1", "map_index": -1,
                             "try_number": 1})()
    assert link.get_link(None, ti_key=found) == "http://somewhere:4040"
    missing = type("Key", (), {"dag_id": "eos_orders", "task_id": "submit", "run_id": "manual__2", "map_index": -1,
                               "try_number": 1})()
    assert link.get_link(None, ti_key=missing) == ""  # nothing pushed: an unavailable link
    assert asked == [key, key]
    # The api-server reads the same XCom (the link's xcom_key): the link shows while the task runs.
    assert link.xcom_key == key


def test_the_links_are_serialized_under_the_operators_xcoms() -> None:
    from airflow.serialization import serialized_objects

    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    operator = EosSparkSubmitOperator(task_id="submit", spec_path="/x.yaml")
    # What the DAG processor stores and the api-server reads; SerializedBaseOperator on older Airflows.
    serializer = getattr(serialized_objects, "OperatorSerialization", None) or serialized_objects.SerializedBaseOperator
    serialized = serializer.serialize_operator(operator)
    assert serialized["_operator_extra_links"] == {"Spark UI": SPARK_UI_XCOM_KEY,
                                                   "Spark application": SPARK_APPLICATION_XCOM_KEY}
