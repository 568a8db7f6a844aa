"""The pipeline's lineage from a real run in dag.test(): the asset events of its output topics and OpenLineage's events.

The openlineage provider's listener writes to its file transport; the submit task's events name the
input topic and the output and dead-letter topics in the ``kafka://<server>`` namespace, and the
run's asset events are this pipeline's output topics, attached to the outputs alias.

The same run proves the submit task's operator extra links: the driver runs with its Spark UI on a
port the test chose, and the link the api-server serves is that UI's address (a local master has no
cluster manager: no application link).
"""

from __future__ import annotations

import json
import re

import pytest

from airflow_provider_eos.core.application_links import SPARK_APPLICATION_XCOM_KEY, SPARK_UI_XCOM_KEY
from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from airflow_provider_eos.devstack.broker_config import free_port
from tests.support.dag_runner import run_dag
from tests.support.pipeline import PipelineHarness, json_events

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.spark]

SPARK_LOCAL = {"AIRFLOW_CONN_SPARK_DEFAULT": json.dumps({"conn_type": "spark", "host": "local[2]"})}


@pytest.mark.long  # CI: the secured pipeline's run asserts the same asset events and OpenLineage's facets
def test_a_run_announces_its_own_output_topics_and_openlineage_sees_topic_to_pipeline_to_topic(
    airflow_home, bootstrap, tmp_path,
) -> None:
    (tmp_path / "pipeline").mkdir()
    harness = PipelineHarness(bootstrap, tmp_path / "pipeline")
    ui_port = free_port()
    harness.with_overrides(spark_conf={**harness.spec.spark_conf, "spark.ui.enabled": "true",
                                       "spark.ui.port": str(ui_port)})
    records, _, _ = json_events(300)
    harness.produce_input(records)
    lineage_file = tmp_path / "openlineage.jsonl"
    env = {"EOS_SPECS_DIR": str(harness.spec_file.parent), **SPARK_LOCAL,
           "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": str(lineage_file),
                                                           "append": True}),
           "AIRFLOW__OPENLINEAGE__NAMESPACE": "eos-tests"}

    # The steps around the submit are other tests' (dag.test() marks them done): the submit runs the real job.
    run = run_dag(pipeline_dag_id(harness.spec.name), {}, tmp_path / "run.json", env=env,
                  mark_success="preflight|abort_lingering|verify|supervise")

    assert run.state == "success", run.states
    namespace = f"kafka://{bootstrap.split(',')[0]}"
    written = [harness.output_topic, harness.dlq_topic]
    assert sorted((e["task_id"], e["uri"]) for e in run.asset_events) == sorted(
        ("submit", f"{namespace}/{topic}") for topic in written), run.asset_events
    assert {e["extra"]["pipeline"] for e in run.asset_events} == {harness.spec.name}
    events = [json.loads(line) for line in lineage_file.read_text().splitlines()]
    submits = {e["eventType"]: e for e in events if e["job"]["name"] == f"{pipeline_dag_id(harness.spec.name)}.submit"}
    assert set(submits) == {"START", "COMPLETE"}, [(e["eventType"], e["job"]["name"]) for e in events]
    for event in submits.values():
        assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [(namespace, harness.input_topic)]
        assert [(d["namespace"], d["name"]) for d in event["outputs"]] == [(namespace, t) for t in written]

    # The submit task's links: the real driver's Spark UI (the port it was given), as the api-server serves them.
    spark_ui = run.xcoms[f"submit.{SPARK_UI_XCOM_KEY}"]
    assert re.fullmatch(rf"http://[^/:]+:{ui_port}", spark_ui), spark_ui
    assert f"Spark UI: {spark_ui}" in run.task_log("submit")
    assert run.xcoms[f"submit.{SPARK_APPLICATION_XCOM_KEY}"] == ""
    assert run.extra_links["submit"] == {"Spark UI": spark_ui, "Spark application": ""}, run.extra_links
    assert "Failed to push an xcom for task operator extra link" not in run.log  # get_link ran at the task's end
