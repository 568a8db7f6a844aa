"""The submit task records its run's input before spark-submit starts, read from the real broker.

a pipeline DAG's ``supervise`` compares the sink group with it once ``submit`` succeeded
(tests/dags/test_health_sensor.py runs that part in ``dag.test()``). The operator runs for real;
only the Spark provider hook's ``submit`` is replaced by a recorder of the XComs pushed by then.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from airflow_provider_eos.core.health import RUN_INPUT_XCOM_KEY, RunInput
from airflow_provider_eos.core.topic_partition import TopicPartition
from tests.support.kafka import produce
from tests.unit.test_spark_submit_operator import RecordingTaskInstance, unique_run_id

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.usefixtures("airflow_home")]


def submit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: dict) -> list[dict]:
    """Run the operator on ``spec``; what the XComs held when spark-submit would have started."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    ti = RecordingTaskInstance()
    seen: list[dict] = []
    monkeypatch.setattr(SparkSubmitHook, "submit", lambda hook, application="", **kwargs: seen.append(dict(ti.xcom)))
    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps({"conn_type": "spark", "host": "local[2]"}))
    spec_path = tmp_path / "orders.yaml"
    spec_path.write_text(yaml.safe_dump(spec))
    EosSparkSubmitOperator(task_id="submit", spec_path=str(spec_path), conn_id="eos_spark").execute(
        {"ti": ti, "run_id": unique_run_id()})
    return seen


def spec_of(kafka: dict, topic: str, tmp_path: Path, **fields: object) -> dict:
    return {"name": "orders", "kafka": kafka, "input_topics": [topic], "output_topic": f"{topic}-out",
            "group_id": f"{topic}-sink", "transactional_id_prefix": f"{topic}-eos",
            "checkpoint_location": str(tmp_path / "checkpoint"), **fields}


def test_an_available_now_submit_records_the_inputs_ends_before_the_job_starts(
    bootstrap: str, topic_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    topic = topic_factory("in", partitions=2)
    produce(bootstrap, topic, [(f"k{n}".encode(), b"v") for n in range(7)])
    ends = {}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "ends", "isolation.level": "read_committed"})
    try:
        for partition in (0, 1):
            ends[TopicPartition(topic, partition)] = consumer.get_watermark_offsets(
                KafkaTopicPartition(topic, partition), timeout=10)[1]
    finally:
        consumer.close()
    assert sum(ends.values()) == 7

    (at_submit,) = submit(tmp_path, monkeypatch, spec_of({"bootstrap.servers": bootstrap}, topic, tmp_path))
    recorded = RunInput.model_validate(at_submit[RUN_INPUT_XCOM_KEY])
    assert {row.tp: row.end for row in recorded.ends} == ends

    # A processing-time run is watched while it runs: nothing to record.
    (at_submit,) = submit(tmp_path, monkeypatch, spec_of({"bootstrap.servers": bootstrap}, topic, tmp_path,
                                                         trigger="10 seconds"))
    assert RUN_INPUT_XCOM_KEY not in at_submit


def test_a_submit_that_cannot_read_the_input_still_starts_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The job reads Kafka wherever it runs; this worker not reaching the brokers must not keep it from starting.
    (at_submit,) = submit(tmp_path, monkeypatch, spec_of({"bootstrap.servers": "127.0.0.1:1"}, "in", tmp_path))
    assert RUN_INPUT_XCOM_KEY not in at_submit
    logged = "".join(capsys.readouterr())
    assert "Could not read the input's end offsets before the run" in logged
    assert "judges by the live lag instead" in logged
