"""The pipeline on YARN in cluster deploy mode, its checkpoint on HDFS, read back over WebHDFS.

EosSparkSubmitOperator submits through a ``spark`` connection (host ``yarn``, deploy mode
``cluster``) with the MiniCluster's ``HADOOP_CONF_DIR`` in spark-submit's environment; the Spark
provider follows the application through the ResourceManager's REST API (whose address the
operator takes from that folder's ``yarn-site.xml``). The driver runs in the application
master's container with this machine's interpreter (the NodeManager is on this machine). The
checkpoint is ``hdfs://`` as Spark writes it; this process reads it (verification, abort's
liveness check, repairs) through fsspec's ``webhdfs``, with no native libhdfs. Two YARN
applications in all: one drains the input, one is killed through the task's ``on_kill``; the
executed rewind needs no application (a checkpoint in Spark's format, put on HDFS).
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from fsspec.implementations.webhdfs import WebHDFS

from airflow_provider_eos.core.application_links import SPARK_APPLICATION_XCOM_KEY, SPARK_UI_XCOM_KEY, parse_app_line
from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver import EvidenceSource, Liveness
from airflow_provider_eos.core.presentation import result_text
from airflow_provider_eos.core.spec import Writers
from airflow_provider_eos.core.writers_choice import read_writers_choice
from airflow_provider_eos.devstack.yarn import YarnClusterInfo
from airflow_provider_eos.usecases.abort import abort
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.driver_liveness import (
    manager_evidence,
    observe_driver_anywhere,
    wait_until_driver_gone,
)
from airflow_provider_eos.usecases.rewind import rewind
from airflow_provider_eos.usecases.verify import verify
from tests.support.checkpoints import write_checkpoint
from tests.support.observers import another_worker
from tests.support.pipeline import assert_exactly_once, json_events, output_ids, wait_for
from tests.support.yarn_cluster import FINAL_STATES, application, container_log, wait_for_state
from tests.support.yarn_submit import RunningSubmit, TaskInstance, hdfs_harness, submit_operator

pytestmark = [pytest.mark.integration, pytest.mark.spark]

def test_pipeline_on_yarn_cluster_mode_is_exact_and_its_hdfs_checkpoint_verifies_over_webhdfs(
    on_yarn: YarnClusterInfo, bootstrap: str, tmp_path: Path
) -> None:
    harness = hdfs_harness(bootstrap, tmp_path, on_yarn)
    records, valid, malformed = json_events(1200, malformed_every=50)
    harness.produce_input(records, aborted_every=2)
    operator = submit_operator(harness, on_yarn)

    started = time.monotonic()
    ti = TaskInstance()
    operator.execute({"ti": ti, "run_id": "manual__yarn"})
    app_id = operator._hook._yarn_application_id
    print(f"\nYARN pipeline submit-to-finished {time.monotonic() - started:.1f}s ({app_id})")

    # The task's links, from YARN's client's lines: the ResourceManager's page of this application, and its proxy.
    # (Only their form: the MiniYARNCluster answered 404 for /cluster/app/<id>; its REST API knows the id, below.)
    assert ti.xcom[SPARK_APPLICATION_XCOM_KEY] == f"{on_yarn.resourcemanager_url}/cluster/app/{app_id}"
    assert re.fullmatch(rf"http://[^/]+/proxy/{app_id}/", str(ti.xcom[SPARK_UI_XCOM_KEY])), ti.xcom

    # The provider followed the application through the ResourceManager to its success.
    app = application(on_yarn, app_id)
    assert operator._yarn_track_via_rm_api and (app["state"], app["finalStatus"]) == ("FINISHED", "SUCCEEDED")
    assert app["name"] == f"eos-{harness.name}"
    driver_log = container_log(app, "stdout")  # the driver's Python logging, in its container
    assert "EOS-WRITERS executors" in driver_log, driver_log[-3000:]
    # The driver's own EOS-APP line names the same application (in its container's log, not spark-submit's output).
    # (The NodeManager serves the log as an HTML page: its quotes are escaped.)
    announced = [parse_app_line(html.unescape(line)) for line in driver_log.splitlines() if "EOS-APP " in line]
    assert [app.app_id for app in announced if app] == [app_id], announced

    # Output exact; the checkpoint (read over WebHDFS with HADOOP_CONF_DIR's address) agrees with the group.
    assert_exactly_once(harness, valid, malformed)
    checkpoint = harness.checkpoint()
    assert isinstance(checkpoint.fs, WebHDFS)
    assert checkpoint.display(checkpoint.path("commits", "0")) == f"{harness.spec.checkpoint_location}/commits/0"
    choice = read_writers_choice(checkpoint)
    assert choice is not None and choice.writers is Writers.EXECUTORS
    assert checkpoint.latest_committed_batch() == checkpoint.latest_planned_batch() >= 3  # 300 per trigger
    # The same checkpoint through storage options alone (a checkpoint connection's extras), no Hadoop configuration.
    port = int(on_yarn.webhdfs_url.rsplit(":", 1)[1])
    by_options = CheckpointReader(harness.spec.checkpoint_location, {"port": port}, hadoop_conf={})
    assert by_options.query_id() == checkpoint.query_id()

    result = verify(PipelineClients(harness.spec))
    assert result.ok and result.report.overall.value == "IN_SYNC", result_text(result)
    cli = subprocess.run([str(Path(sys.executable).with_name("eos")), "verify", "--spec", str(harness.spec_file)],
                         capture_output=True, text=True, timeout=120, check=False)
    assert cli.returncode == 0 and "IN_SYNC" in cli.stdout, cli.stdout + cli.stderr


def test_killing_the_task_kills_the_yarn_application_then_recovery_runs_on_the_hdfs_checkpoint(
    on_yarn: YarnClusterInfo, bootstrap: str, tmp_path: Path
) -> None:
    harness = hdfs_harness(bootstrap, tmp_path, on_yarn, trigger="5 seconds", max_offsets_per_trigger=100)
    harness.with_overrides(driver_lease_ttl_s=6)
    records, _, _ = json_events(3000, prefix=f"k{uuid.uuid4().hex[:4]}-")
    harness.produce_input(records)
    operator = submit_operator(harness, on_yarn)
    task = RunningSubmit(operator, "manual__yarn_kill", on_yarn)
    checkpoint = CheckpointReader(harness.spec.checkpoint_location)
    app_id = task.application_id()
    task.first_commit(checkpoint, app_id)
    assert application(on_yarn, app_id)["state"] == "RUNNING"
    # Another worker's view (design note 35): the application found by its tag, the cluster-mode driver's lease on HDFS.
    handle, elsewhere = operator._driver, another_worker()
    assert handle.manager_url == on_yarn.resourcemanager_url.rstrip("/")
    running = observe_driver_anywhere(handle, checkpoint, here=elsewhere)
    assert running.liveness is Liveness.ALIVE, running.evidence
    assert {each.source: each.says for each in running.sources}[EvidenceSource.YARN_RESOURCEMANAGER] is Liveness.ALIVE
    assert {each.source: each.says for each in running.sources}[EvidenceSource.LEASE] is Liveness.ALIVE

    operator.on_kill()  # what Airflow calls when the task is killed

    app = wait_for_state(on_yarn, app_id, FINAL_STATES)
    assert (app["state"], app["finalStatus"]) == ("KILLED", "KILLED"), app["diagnostics"]
    task.join_killed()
    killed_at = time.monotonic()
    gone = wait_until_driver_gone(handle, checkpoint, 90, here=elsewhere)
    print(f"\nYARN cluster-mode driver GONE {time.monotonic() - killed_at:.1f}s after KILLED: {gone.evidence}")
    assert gone.liveness is Liveness.GONE, gone.evidence
    assert {each.source: each.says for each in gone.sources}[EvidenceSource.PROCESS_TABLE] is Liveness.UNKNOWN
    # The ResourceManager's word alone, once its record of the end has settled (the lease may have expired first).
    assert wait_for(lambda: manager_evidence(handle).says is Liveness.GONE, 40, interval_s=1), \
        manager_evidence(handle).detail
    print(f"YARN ResourceManager's record GONE {time.monotonic() - killed_at:.1f}s after KILLED")

    # Recovery, as the DAG's recovery branch runs it, against the hdfs:// checkpoint.
    clients = PipelineClients(harness.spec)
    aborted = abort(clients, execute=True, driver_gone=gone.evidence)
    assert aborted.ok, result_text(aborted)
    verified = verify(clients)
    assert verified.report.overall.value in ("IN_SYNC", "KAFKA_AHEAD_SAFE"), result_text(verified)
    last = clients.checkpoint.latest_committed_batch()
    assert last is not None and last >= 0
    planned = rewind(clients, to_batch=last - 1, execute=False)  # lists the logs over WebHDFS
    assert "would move" in planned.summary and f"offsets/{last}" in result_text(planned), result_text(planned)
    # The plan names the checkpoint as Spark knows it, not as the webhdfs path it is read through.
    assert f"into {harness.spec.checkpoint_location.rstrip('/')}.eos-backup-" in result_text(planned), \
        result_text(planned)
    produced = output_ids(harness.output_values())
    assert produced and max(produced.values()) == 1, "the killed run's committed output has duplicates"


def test_rewind_moves_an_hdfs_checkpoint_over_webhdfs_and_keeps_the_files(
    on_yarn: YarnClusterInfo, tmp_path: Path
) -> None:
    from airflow_provider_eos.core.repair import rewind as rewind_checkpoint

    local = write_checkpoint(tmp_path / "checkpoint", topic="orders", partitions=2, query_id=str(uuid.uuid4()),
                             offsets=range(4), commits=range(4))
    reader = CheckpointReader(f"{on_yarn.namenode_url}/eos/rewind-{uuid.uuid4().hex[:8]}/checkpoint")
    reader.fs.put(str(local), reader.root, recursive=True)
    assert reader.latest_committed_batch() == 3

    result = rewind_checkpoint(reader, 1, execute=True)

    assert result.executed and reader.latest_committed_batch() == reader.latest_planned_batch() == 1
    assert {"offsets/2", "offsets/3", "commits/2", "commits/3"} <= set(result.moved)
    for relative in result.moved:
        assert reader.fs.isfile(f"{result.backup_dir}/{relative}"), relative
