"""The recovery operators inside ``dag.test()``, against the real broker and a checkpoint in Spark's format.

Each test runs one DAG with ``dag.test()`` in a child Python process (this module run as
``python -m tests.dags.test_recovery_operators <dag> <args> <result file>``; see
:mod:`tests.support.built_dags` for how, and why a child process): the child builds the DAG
with one of the ``build_*`` functions below, registers it in the temporary metadata DB, runs
it, and writes task states, tries, XComs and rendered fields as JSON.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path

import pytest
from confluent_kafka import KafkaException, Producer

from airflow_provider_eos.core.markers import BatchMarker
from tests.support.built_dags import child_main, new_dag, run_in_airflow, task_log
from tests.support.checkpointed_pipeline import LAST_COMMITTED, PARTITIONS, CheckpointedPipeline, checkpointed_pipeline
from tests.support.checkpoints import tree
from tests.support.kafka import consume_all, end_offsets

pytestmark = [pytest.mark.airflow, pytest.mark.integration]


@pytest.fixture
def pipeline(tmp_path: Path, bootstrap: str, topic_factory) -> CheckpointedPipeline:
    return checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="eos")


def commit_group(pipeline: CheckpointedPipeline, batch: int) -> None:
    """Commit ``offsets/batch`` with marker ``batch`` as the sink does, and read it back."""
    committed = pipeline.commit_group(batch)
    assert pipeline.group() == committed


# -- the DAGs, built in the child process ---------------------------------------------------------


def build_verify_with_connection(spec_path: str, conn_id: str):
    from airflow.sdk import task

    from airflow_provider_eos.hooks.kafka_admin import EosKafkaHook
    from airflow_provider_eos.operators.recovery import VerifyCommittedOffsetsOperator

    @task
    def masked_in_the_task() -> str:
        # dag.test() prints task logs without the masking processor a worker's log pipeline
        # applies, so the masker's state is checked inside the task: once the hook has read the
        # connection, anything logged with the config shows *** instead of the secrets.
        from airflow.sdk._shared.secrets_masker import redact

        return redact(f"kafka config: {EosKafkaHook(conn_id).get_config()}")

    with new_dag("eos_recovery") as dag:
        VerifyCommittedOffsetsOperator(task_id="verify", spec_path=spec_path, kafka_conn_id=conn_id)
        masked_in_the_task()
    return dag


def build_verify_then_rewind_plan(spec_path: str):
    from airflow_provider_eos.operators.recovery import RewindCheckpointOperator, VerifyCommittedOffsetsOperator

    with new_dag("eos_recovery") as dag:
        verify = VerifyCommittedOffsetsOperator(
            task_id="verify",
            spec_path=spec_path,
            # A retry cannot repair the checkpoint: the task must fail at once, not retry.
            retries=3,
            retry_delay=dt.timedelta(seconds=0),
        )
        plan = RewindCheckpointOperator(
            task_id="rewind_plan",
            spec_path=spec_path,
            to_batch="{{ ti.xcom_pull(task_ids='verify')['rewind_to_batch'] }}",
            trigger_rule="all_failed",
        )
        verify >> plan
        VerifyCommittedOffsetsOperator(task_id="missing_spec", spec_path=spec_path + ".missing.json")
    return dag


def build_rewind_then_verify(spec_path: str):
    from airflow_provider_eos.operators.recovery import RewindCheckpointOperator, VerifyCommittedOffsetsOperator

    with new_dag("eos_recovery", params={"dry_run": False, "spec_path": spec_path}) as dag:
        rewind = RewindCheckpointOperator(
            task_id="rewind",
            spec_path="{{ params.spec_path }}",
            # No to_batch: the operator verifies and rewinds to the batch the verdict names.
            dry_run="{{ params.dry_run }}",
        )
        verify = VerifyCommittedOffsetsOperator(task_id="verify", spec_path=spec_path)
        rewind >> verify
    return dag


def build_align(spec_path: str):
    from airflow_provider_eos.operators.recovery import AlignGroupOffsetsOperator, VerifyCommittedOffsetsOperator

    with new_dag("eos_recovery") as dag:
        plan = AlignGroupOffsetsOperator(task_id="align_plan", spec_path=spec_path)
        align = AlignGroupOffsetsOperator(task_id="align", spec_path=spec_path, dry_run=False)
        verify = VerifyCommittedOffsetsOperator(task_id="verify", spec_path=spec_path)
        plan >> align >> verify
    return dag


def build_abort(spec_path: str):
    from airflow_provider_eos.operators.recovery import AbortOpenTransactionsOperator

    with new_dag("eos_recovery", params={"force": True}) as dag:
        refused = AbortOpenTransactionsOperator(task_id="abort_refused", spec_path=spec_path, dry_run=False)
        forced = AbortOpenTransactionsOperator(
            task_id="abort", spec_path=spec_path, dry_run=False, force="{{ params.force }}", trigger_rule="all_done"
        )
        refused >> forced
    return dag


# -- the tests ------------------------------------------------------------------------------------


def test_verify_in_sync_passes_pushes_the_report_and_leaks_no_kafka_secret(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    password = f"sasl-pw-{uuid.uuid4().hex[:12]}"
    oauth = f"principal=eos clientSecret=oauth-{uuid.uuid4().hex[:12]}"
    # The spec points at a broker that does not exist: the task can only pass through the connection.
    spec = json.loads(pipeline.spec_path.read_text())
    pipeline.spec_path.write_text(json.dumps({**spec, "kafka": {"bootstrap.servers": "localhost:1"}}))
    conn_id = f"eos_kafka_{uuid.uuid4().hex[:8]}"
    connection = {
        "conn_type": "kafka",
        "extra": {
            "bootstrap.servers": pipeline.bootstrap,
            "security.protocol": "PLAINTEXT",
            "sasl.username": "eos",
            "sasl.password": password,
            "sasl.oauthbearer.config": oauth,
        },
    }
    commit_group(pipeline, LAST_COMMITTED)

    run = run_in_airflow(
        __name__,
        "verify_with_connection",
        tmp_path,
        env={f"AIRFLOW_CONN_{conn_id.upper()}": json.dumps(connection)},
        spec_path=str(pipeline.spec_path),
        conn_id=conn_id,
    )

    assert run.states == {"verify": "success", "masked_in_the_task": "success"}, run.log[-5000:]
    report = run.xcoms["verify"]
    assert report["overall"] == "IN_SYNC"
    assert report["last_committed"] == LAST_COMMITTED
    assert {(r["topic"], r["partition"], r["verdict"], r["group_offset"]) for r in report["rows"]} == {
        (pipeline.input_topic, tp.partition, "IN_SYNC", offset)
        for tp, offset in pipeline.end_offsets(LAST_COMMITTED).items()
    }
    assert pipeline.bootstrap in run.xcoms["masked_in_the_task"]
    assert "'sasl.password': '***'" in run.xcoms["masked_in_the_task"]
    assert "'sasl.oauthbearer.config': '***'" in run.xcoms["masked_in_the_task"]
    verify_log = task_log(run, "verify")
    assert "Verification: IN_SYNC" in verify_log
    assert f"connection {conn_id!r}" in verify_log
    everything = run.log + json.dumps(run.xcoms) + json.dumps(run.rendered, default=str)
    assert password not in everything
    assert oauth not in everything


def test_verify_kafka_behind_fails_with_table_and_next_step_and_a_rewind_dry_run_changes_nothing(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    commit_group(pipeline, 1)  # the output of batches 2 and 3 never reached Kafka
    before = tree(pipeline.checkpoint)

    run = run_in_airflow(__name__, "verify_then_rewind_plan", tmp_path, spec_path=str(pipeline.spec_path))

    assert run.states == {"verify": "failed", "rewind_plan": "success", "missing_spec": "failed"}, run.log[-5000:]
    assert run.tries["verify"] == 1
    report = run.xcoms["verify"]
    assert report["overall"] == "KAFKA_BEHIND" and report["rewind_to_batch"] == 1
    verify_log = task_log(run, "verify")
    assert "Verification: KAFKA_BEHIND" in verify_log
    assert "partition" in verify_log and "verdict" in verify_log
    for tp in pipeline.end_offsets(1):
        assert str(tp) in verify_log
    assert "Next step: Rewind the checkpoint to batch 1" in verify_log
    assert "AirflowFailException" in verify_log and "RewindCheckpointOperator(to_batch=1)" in verify_log

    result = run.xcoms["rewind_plan"]
    assert result["to_batch"] == 1 and result["executed"] is False
    assert {m["path"] for m in result["moves"] if not m["path"].endswith(".crc")} == {
        "offsets/2",
        "offsets/3",
        "commits/2",
        "commits/3",
    }
    assert "Dry run: nothing moved" in task_log(run, "rewind_plan")
    assert tree(pipeline.checkpoint) == before
    assert not list(pipeline.checkpoint.parent.glob("*.eos-backup-*"))

    assert "does not exist" in task_log(run, "missing_spec")
    assert "missing_spec" not in run.xcoms


def test_rewind_execute_moves_later_batches_into_a_backup_and_verify_then_passes(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    commit_group(pipeline, 1)
    pipeline.age_commits()  # the query stopped long ago: the liveness check lets the rewind execute
    before = tree(pipeline.checkpoint)

    run = run_in_airflow(__name__, "rewind_then_verify", tmp_path, spec_path=str(pipeline.spec_path))

    assert run.states == {"rewind": "success", "verify": "success"}, run.log[-5000:]
    assert run.rendered["rewind"]["dry_run"] == "False"
    result = run.xcoms["rewind"]
    assert result["executed"] is True and result["to_batch"] == 1
    backup = Path(result["backup_dir"])
    assert backup.parent == pipeline.checkpoint.parent and backup.name.startswith(f"{pipeline.checkpoint.name}.eos")
    after = tree(pipeline.checkpoint)
    moved = tree(backup)
    assert {name for name in after if not name.startswith(".") and "/." not in name} == {
        "metadata",
        "sources/0/0",
        "offsets/0",
        "offsets/1",
        "commits/0",
        "commits/1",
    }
    # Nothing lost: every file is either still in place or in the backup, byte for byte.
    assert {**after, **{k: v for k, v in moved.items() if k != "EOS-REWIND.json"}} == before
    assert "Rewound checkpoint" in task_log(run, "rewind")
    assert run.xcoms["verify"]["overall"] == "IN_SYNC" and run.xcoms["verify"]["last_committed"] == 1


def test_align_dry_run_commits_nothing_and_execute_writes_offsets_with_markers(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    assert set(pipeline.group().values()) == {None}  # NO_MARKER: the group holds nothing
    pipeline.age_commits()  # the query stopped long ago: the liveness check lets the align commit

    run = run_in_airflow(__name__, "align", tmp_path, spec_path=str(pipeline.spec_path))

    assert run.states == {"align_plan": "success", "align": "success", "verify": "success"}, run.log[-5000:]
    planned = run.xcoms["align_plan"]
    assert planned["verdict"] == "NO_MARKER" and planned["executed"] is False and planned["changes"] == PARTITIONS
    executed = run.xcoms["align"]
    # The executing task planned the same changes, so the dry run before it committed nothing.
    assert executed["changes"] == PARTITIONS
    assert executed["executed"] is True and executed["verdict_after"] == "IN_SYNC"
    marker = BatchMarker(pipeline.query_id, LAST_COMMITTED).encode()
    assert pipeline.group() == {tp: (offset, marker) for tp, offset in pipeline.end_offsets(LAST_COMMITTED).items()}
    plan_log = task_log(run, "align_plan")
    assert "before offset" in plan_log and "after metadata" in plan_log and marker in plan_log
    assert "Dry run: nothing committed" in plan_log
    assert "Committed. Verification afterwards" in task_log(run, "align")
    assert run.xcoms["verify"]["overall"] == "IN_SYNC"


@pytest.mark.compat
def test_abort_refuses_while_the_job_looks_alive_and_fences_the_open_transaction_when_forced(
    pipeline: CheckpointedPipeline, airflow_home: Path, tmp_path: Path
) -> None:
    txn_id = f"{pipeline.prefix}-0"
    # Open for 10 minutes: the broker's default (1 minute) could abort it while a loaded machine runs the DAG.
    zombie = Producer({"bootstrap.servers": pipeline.bootstrap, "transactional.id": txn_id,
                       "transaction.timeout.ms": 600_000})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    for i in range(10):
        zombie.produce(pipeline.output_topic, key=f"k{i}".encode(), value=b"never committed")
    assert zombie.flush(30) == 0
    pinned = end_offsets(pipeline.bootstrap, pipeline.output_topic, PARTITIONS, committed=True)
    hwm = end_offsets(pipeline.bootstrap, pipeline.output_topic, PARTITIONS, committed=False)
    assert pinned != hwm  # the open transaction really pins the last stable offset

    run = run_in_airflow(__name__, "abort", tmp_path, spec_path=str(pipeline.spec_path))

    assert run.states == {"abort_refused": "failed", "abort": "success"}, run.log[-5000:]
    refused_log = task_log(run, "abort_refused")
    assert "refusing to abort transactions" in refused_log and "force" in refused_log
    report = run.xcoms["abort"]
    assert report["ok"] is True and report["executed"] is True and report["safety"]["forced"] is True
    assert any(row["transactional_id"] == txn_id and row["outcome"] == "aborted" for row in report["rows"]), report
    assert txn_id in task_log(run, "abort")

    assert end_offsets(pipeline.bootstrap, pipeline.output_topic, PARTITIONS, committed=True) == end_offsets(
        pipeline.bootstrap, pipeline.output_topic, PARTITIONS, committed=False
    )
    assert consume_all(pipeline.bootstrap, pipeline.output_topic, idle_s=1) == []
    with pytest.raises(KafkaException):
        zombie.commit_transaction(30)  # fenced: the old producer can no longer commit


if __name__ == "__main__":
    child_main(globals())
