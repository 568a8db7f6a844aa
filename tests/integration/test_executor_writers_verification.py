"""A crash in the middle of an executor-writers batch, verified against the real broker (no Spark).

The checkpoint is written by hand in Spark's format: batches 0..3 committed, batch 4 planned
(``offsets/4``) and not committed. The sink group's offsets are committed the way the executor
writers commit them: one real transaction per input partition, each under that partition's own
transactional id (``<prefix>-<t>_<p>``), producing its output and sending its partition's end
offset with the batch marker. Partition 0 committed batch 4 before the "crash", partition 1 is
still at batch 3.

``eos verify`` (the CLI, in a subprocess) must call that KAFKA_AHEAD_SAFE + IN_SYNC when the
checkpoint records the executor writers, and DIVERGED when it records the driver writer.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.presentation import preflight_text, result_text
from airflow_provider_eos.core.spec import Writers
from airflow_provider_eos.core.transactional_ids import belongs_to_prefix, partition_of_writer
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.health import health
from airflow_provider_eos.usecases.preflight import preflight
from tests.support.checkpointed_pipeline import (
    LAST_COMMITTED,
    CheckpointedPipeline,
    checkpointed_pipeline,
    leave_batch_half_written,
)
from tests.support.kafka import consume_all

pytestmark = pytest.mark.integration

EOS = Path(sys.executable).with_name("eos")
IN_FLIGHT = LAST_COMMITTED + 1


def eos_json(*args: str) -> tuple[int, dict[str, Any]]:
    assert EOS.exists(), f"the eos entry point is not installed next to {sys.executable}"
    result = subprocess.run([str(EOS), *args, "--json"], capture_output=True, text=True, timeout=300, check=False)
    try:
        return result.returncode, json.loads(result.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"eos {' '.join(args)} --json printed no JSON (exit {result.returncode}):\n"
                    f"{result.stdout}{result.stderr}")


@pytest.fixture
def mid_batch(tmp_path: Path, bootstrap: str, topic_factory) -> CheckpointedPipeline:
    """Batches 0..3 committed, batch 4 planned; partition 0 committed batch 4, partition 1 is at batch 3."""
    pipeline = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="xwriters")
    assert leave_batch_half_written(pipeline) == IN_FLIGHT
    ids = {pipeline.spec.partition_transactional_id(pipeline.input_topic, p) for p in (0, 1)}
    # The ids are the executor writers' own, under the prefix recovery scans.
    assert {partition_of_writer(pipeline.prefix, i) for i in ids} == {(0, 0), (0, 1)}
    assert all(belongs_to_prefix(pipeline.prefix, i) for i in ids)
    # What the two transactions left: the group as the checkpoint's executor writers would.
    assert pipeline.group() == {
        tp: (offset, BatchMarker(pipeline.query_id, batch).encode())
        for batch, partition in ((IN_FLIGHT, 0), (LAST_COMMITTED, 1))
        for tp, offset in pipeline.end_offsets(batch).items()
        if tp.partition == partition
    }
    output = consume_all(bootstrap, pipeline.output_topic)
    assert sorted((m.key(), m.value()) for m in output) == [(b"p0", b"batch 4"), (b"p1", b"batch 3")]
    return pipeline


def verdicts(data: dict[str, Any]) -> dict[int, str]:
    return {row["partition"]: row["verdict"] for row in data["rows"]}


def test_mid_batch_state_is_ahead_safe_and_in_sync_with_executor_writers_and_diverged_with_the_driver(
    mid_batch: CheckpointedPipeline,
) -> None:
    spec_file = str(mid_batch.spec_path)

    choice = mid_batch.record_writers(Writers.EXECUTORS)
    code, data = eos_json("verify", "--spec", spec_file)
    assert code == 0, data
    assert data["overall"] == "KAFKA_AHEAD_SAFE" and data["ok"] is True and data["outcome"] == "ok"
    assert verdicts(data) == {0: "KAFKA_AHEAD_SAFE", 1: "IN_SYNC"}
    assert data["issues"] == [] and data["partially_written_batch"] == IN_FLIGHT
    assert data["writers"]["writers"] == "executors" and data["writers"]["source"] == "recorded"
    assert data["writers"]["choice"]["query_id"] == choice.query_id
    assert data["next_step"].startswith("Nothing to do: the replay skips the committed partitions and writes the rest")

    # Aligning the group back to batch 3 would make the replay write partition 0's part of batch 4 twice.
    code, refused = eos_json("repair", "align", "--spec", spec_file)
    assert code == 2, refused
    assert "KAFKA_AHEAD_SAFE" in json.dumps(refused) and "on some partitions" in json.dumps(refused)

    mid_batch.record_writers(Writers.DRIVER)
    code, data = eos_json("verify", "--spec", spec_file)
    assert code == 1, data
    assert data["overall"] == "DIVERGED" and data["ok"] is False and data["outcome"] == "finding"
    assert verdicts(data) == {0: "KAFKA_AHEAD_SAFE", 1: "IN_SYNC"}
    assert data["writers"]["writers"] == "driver" and data["writers"]["source"] == "recorded"
    (issue,) = data["issues"]
    assert f"different batches ({LAST_COMMITTED}, {IN_FLIGHT})" in issue


def test_without_a_record_the_spec_decides_and_health_shows_the_writer(mid_batch: CheckpointedPipeline) -> None:
    # The spec as written says auto: nothing recorded, so the driver's rules apply.
    code, data = eos_json("verify", "--spec", str(mid_batch.spec_path))
    assert code == 1 and data["overall"] == "DIVERGED", data
    assert data["writers"]["source"] == "default" and "eos/writers.json is missing" in data["issues"][0]

    spec = json.loads(mid_batch.spec_path.read_text())
    mid_batch.spec_path.write_text(json.dumps({**spec, "writers": "executors"}))
    code, data = eos_json("verify", "--spec", str(mid_batch.spec_path))
    assert code == 0 and data["overall"] == "KAFKA_AHEAD_SAFE", data
    assert data["writers"] == {**data["writers"], "writers": "executors", "source": "spec", "requested": "executors"}

    result = health(PipelineClients.from_spec_file(mid_batch.spec_path))
    report = result.data()
    assert report["verification"]["verdict"] == "KAFKA_AHEAD_SAFE"
    assert report["writers"]["writers"] == "executors" and report["writers"]["source"] == "spec"
    assert "Writers: executors, from the spec" in result_text(result)


def test_preflight_tells_the_writers_rules_from_the_live_facts(mid_batch: CheckpointedPipeline) -> None:
    mid_batch.record_writers(Writers.DRIVER)
    spec = json.loads(mid_batch.spec_path.read_text())
    mid_batch.spec_path.write_text(json.dumps({
        **spec, "writers": "executors", "transform": "spark_jobs.transforms.fraud_alerts:transform",
    }))
    report = preflight(PipelineClients.from_spec_file(mid_batch.spec_path)).report
    status = {code: report.finding(code).status.value for code in ("EOS313", "EOS314", "EOS315", "EOS316")}
    assert status == {"EOS313": "pass", "EOS314": "fail", "EOS315": "pass", "EOS316": "fail"}, preflight_text(report)
    assert "fraud_alerts.py: @stateful_transform" in report.finding("EOS314").message
    # 2 input partitions x (2 output partitions + 1 offsets partition), read from the live topics.
    assert "= 6 transaction markers per batch" in report.finding("EOS315").message
    assert f"batch {IN_FLIGHT} is in flight" in report.finding("EOS316").message
    assert "EOS314" in [f.code for f in report.errors]
