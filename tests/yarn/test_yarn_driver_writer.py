"""A stateful pipeline (the driver writer) on YARN in cluster deploy mode, its checkpoint and spill on HDFS.

``fraud_alerts`` (a watermarked window count: a stateful operator, so `auto` picks the driver
writer) runs as test_yarn_pipeline's ``json_enrich`` does: submitted by EosSparkSubmitOperator
through a ``spark`` connection (host ``yarn``, deploy mode ``cluster``), the checkpoint
``hdfs://``. The driver writer's tasks spill each batch under the checkpoint over WebHDFS, at the
address and as the user the driver reads it with (design note 39). The first application is
killed through the task's ``on_kill`` once a batch is committed; recovery runs against the HDFS
checkpoint; a second application drains the input. Every alert and every dead letter is in the
output exactly once, the group agrees with the checkpoint, and no spill is left on HDFS.
"""

from __future__ import annotations

import html
import json
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fsspec.implementations.webhdfs import WebHDFS

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver import Liveness
from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.hadoop_conf import HADOOP_CONF_DIR_ENV, read_hadoop_conf
from airflow_provider_eos.core.presentation import result_text
from airflow_provider_eos.core.spec import Writers
from airflow_provider_eos.core.writers_choice import read_writers_choice
from airflow_provider_eos.devstack.yarn import YarnClusterInfo
from airflow_provider_eos.spark.jvm_spill import JvmSpillTasks
from airflow_provider_eos.spark.output_spill import SPILL_FOLDER, OutputSpill, PythonSpillTasks
from airflow_provider_eos.spark.record_producer import DLQ_REASON_COLUMN
from airflow_provider_eos.spark.sink_points import TaskObserver
from airflow_provider_eos.usecases.abort import abort
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.driver_liveness import wait_until_driver_gone
from airflow_provider_eos.usecases.verify import verify
from tests.integration.test_exactly_once_job import _fraud_events
from tests.support.pipeline import PipelineHarness
from tests.support.yarn_cluster import FINAL_STATES, application, container_log, wait_for_state
from tests.support.yarn_submit import RunningSubmit, TaskInstance, submit_operator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

FRAUD = "spark_jobs.transforms.fraud_alerts:transform"


def alert_counts(values: list[bytes], base: datetime) -> Counter:
    """Alerts by (user, minute after ``base``), each counted once per record that carries it."""
    found: Counter = Counter()
    for value in values:
        alert = json.loads(value)
        start = datetime.fromisoformat(alert["window_start"]).astimezone(UTC)
        found[(alert["user"], int((start - base).total_seconds() // 60))] += 1
    return found


def driver_batches(app: dict) -> list[dict]:
    """The driver's EOS-BATCH lines, from its container's log page (served HTML-escaped)."""
    log = html.unescape(container_log(app, "stdout"))
    return [json.loads(line.split("EOS-BATCH ", 1)[1]) for line in log.splitlines() if "EOS-BATCH " in line]


@pytest.mark.parametrize("executor_writer", ["python", "jvm"])
def test_spark_tasks_spill_to_hdfs_with_the_drivers_webhdfs_address_alone(
    yarn_cluster: YarnClusterInfo, spark, monkeypatch: pytest.MonkeyPatch, executor_writer: str
) -> None:
    """The new path without YARN's minute per application: local Spark tasks, no Hadoop configuration, real HDFS.

    The Python workers' tasks write over WebHDFS with the driver's address; the JVM's through Hadoop's HDFS client,
    at the folder the driver qualified with its configuration, which ships with them."""
    monkeypatch.delenv(HADOOP_CONF_DIR_ENV, raising=False)  # the Python workers get nothing but the task
    location = f"{yarn_cluster.namenode_url}/eos/spill-{uuid.uuid4().hex[:8]}/checkpoint"
    driver = CheckpointReader(location, hadoop_conf=read_hadoop_conf(yarn_cluster.hadoop_conf_dir))
    with pytest.raises(CheckpointError, match="no WebHDFS address"):
        CheckpointReader(location, hadoop_conf={})  # what each task would hit without the driver's options
    rows = [(f"k{i}", f"v{i}", None if i % 9 else "bad") for i in range(2000)]
    output = spark.createDataFrame(rows, f"key string, value string, {DLQ_REASON_COLUMN} string").repartition(
        4).sortWithinPartitions("value")
    expected = [(r.key.encode(), r.value.encode(), r[DLQ_REASON_COLUMN]) for r in output.collect()]
    spill = OutputSpill(driver, JvmSpillTasks() if executor_writer == "jvm" else PythonSpillTasks())

    parts = spill.write(output, 3, TaskObserver())

    assert [p.spark_partition for p in parts] == [0, 1, 2, 3] and sum(p.rows for p in parts) == 2000
    assert all(p.file and driver.fs.isfile(p.file) and driver.fs.size(p.file) == p.bytes for p in parts)
    assert all(p.file.startswith(driver.path(*SPILL_FOLDER, "3") + "/") for p in parts)
    read = [(k, v, r) for b in spill.read(parts) for k, v, r in zip(*b.to_pydict().values(), strict=True)]
    assert read == expected
    spill.remove(3)
    driver.fs.invalidate_cache(spill.root)
    assert not driver.fs.exists(spill.batch_folder(3))


# 130-166 s (two YARN applications); CI runs test_spark_tasks_spill_to_hdfs_with_the_drivers_webhdfs_address_alone.
@pytest.mark.long
def test_fraud_alerts_on_yarn_cluster_mode_is_exactly_once_across_a_kill_with_the_spill_on_hdfs(
    on_yarn: YarnClusterInfo, bootstrap: str, tmp_path: Path
) -> None:
    harness = PipelineHarness(bootstrap, tmp_path, transform=FRAUD, writers="auto", max_offsets_per_trigger=10,
                              trigger="5 seconds")
    harness.with_overrides(checkpoint_location=f"{on_yarn.namenode_url}/eos/{harness.name}/checkpoint",
                           driver_lease_ttl_s=6)
    base = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    records, expected_alerts, malformed = _fraud_events(base)
    harness.produce_input(records, aborted_every=1, chunk=10)
    started = time.monotonic()

    # The first application: killed through the task once a batch is committed.
    operator = submit_operator(harness, on_yarn)
    task = RunningSubmit(operator, "manual__yarn_fraud_kill", on_yarn)
    checkpoint = CheckpointReader(harness.spec.checkpoint_location)
    killed_id = task.application_id()
    committed = task.first_commit(checkpoint, killed_id)
    operator.on_kill()
    killed = wait_for_state(on_yarn, killed_id, FINAL_STATES)
    assert (killed["state"], killed["finalStatus"]) == ("KILLED", "KILLED"), killed["diagnostics"]
    task.join_killed()
    first_log = container_log(killed, "stdout")
    assert "EOS-WRITERS driver reason=" in first_log and "stateful" in first_log, first_log[-3000:]
    spill_root = checkpoint.path(*SPILL_FOLDER)
    checkpoint.fs.invalidate_cache(spill_root)
    left = checkpoint.fs.find(spill_root) if checkpoint.fs.exists(spill_root) else []
    print(f"\nYARN fraud_alerts: first application killed after batch {committed} "
          f"({time.monotonic() - started:.1f}s), {len(left)} spill file(s) left on HDFS: {left}")

    # Recovery, as the DAG's recovery branch runs it, then a second application drains the input.
    gone = wait_until_driver_gone(operator._driver, checkpoint, 90)
    assert gone.liveness is Liveness.GONE, gone.evidence
    clients = PipelineClients(harness.spec)
    aborted = abort(clients, execute=True, driver_gone=gone.evidence)
    assert aborted.ok, result_text(aborted)
    before = alert_counts(harness.output_values(), base)
    assert not before or max(before.values()) == 1, "the killed run's committed output has duplicates"
    harness.with_overrides(trigger="available_now")
    drain = submit_operator(harness, on_yarn)
    drain.execute({"ti": TaskInstance(), "run_id": "manual__yarn_fraud_drain"})
    drained = application(on_yarn, drain._hook._yarn_application_id)
    assert (drained["state"], drained["finalStatus"]) == ("FINISHED", "SUCCEEDED"), drained["diagnostics"]
    print(f"YARN fraud_alerts: killed, recovered and drained in {time.monotonic() - started:.1f}s")
    # Both drivers produced from the spill their tasks wrote on HDFS (the first run's early batches may have none).
    produced = [b for app in (killed, drained) for b in driver_batches(app) if b["action"] == "produce"]
    assert produced and all(b["extra"]["writers"] == "driver" for b in produced), produced
    spilled = [b for b in produced if b["extra"]["spill_files"]]
    assert spilled and all(b["extra"]["spill_bytes"] > 0 for b in spilled), produced
    print("YARN fraud_alerts spill per batch (files, bytes, spill job ms): "
          f"{[(b['extra']['spill_files'], b['extra']['spill_bytes'], b['collect_ms']) for b in spilled]}")

    # Exactly once: every alert (a window closed by the watermark) and every dead letter once.
    assert alert_counts(harness.output_values(), base) == Counter(dict.fromkeys(expected_alerts, 1))
    assert Counter(m.value() for m in harness.dlq_records()) == Counter(malformed)
    checkpoint = harness.checkpoint()
    assert isinstance(checkpoint.fs, WebHDFS)
    choice = read_writers_choice(checkpoint)
    assert choice is not None and choice.writers is Writers.DRIVER and choice.operator, choice
    verified = verify(PipelineClients(harness.spec))
    assert verified.ok and verified.report.overall.value == "IN_SYNC", result_text(verified)
    # Every batch's spill folder is removed after it; the killed run's leftovers by the restart.
    checkpoint.fs.invalidate_cache(spill_root)
    assert not checkpoint.fs.exists(spill_root) or checkpoint.fs.ls(spill_root) == []
