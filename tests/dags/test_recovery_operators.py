"""The recovery operators inside ``dag.test()``, against the real broker and a checkpoint in Spark's format.

Each test runs one DAG with ``dag.test()`` in a child Python process (this module run as
``python -m tests.dags.test_recovery_operators <dag> <args> <result file>``): the child builds
the DAG with one of the ``build_*`` functions below, registers it in the temporary metadata DB
the way the DAG processor would (Airflow 3.1+ creates a DAG run only for a serialized DAG with a
DAG version; see ``run_dag``), runs it, and writes task states, tries, XComs and rendered
fields as JSON. Its merged stdout/stderr is the run's log. A child per run keeps Airflow out of
the pytest process: Airflow binds its log output to the streams present when it first
configures logging, which pytest replaces per test, so in-process runs after the first lose
their task logs; and the child reads the ``airflow_home`` fixture's environment on import.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets, write_committed_offsets
from tests.support.checkpoints import batch_end_offsets, tree, write_checkpoint
from tests.support.kafka import consume_all, end_offsets

pytestmark = [pytest.mark.airflow, pytest.mark.integration]

REPO = Path(__file__).resolve().parents[2]
PARTITIONS = 2
LAST_COMMITTED = 3
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


@dataclass
class Pipeline:
    """A pipeline spec file and a checkpoint whose batches 0..3 are planned and committed."""

    spec_path: Path
    checkpoint: Path
    bootstrap: str
    input_topic: str
    output_topic: str
    group_id: str
    prefix: str
    query_id: str

    def commit_group(self, batch: int) -> None:
        """Commit offsets/``batch`` with marker ``batch``, as the sink does in batch ``batch``'s transaction."""
        marker = BatchMarker(self.query_id, batch).encode()
        offsets = {tp: (offset, marker) for tp, offset in self.end_offsets(batch).items()}
        write_committed_offsets(AdminClient({"bootstrap.servers": self.bootstrap}), self.group_id, offsets)
        assert self.group() == offsets

    def group(self) -> dict[TopicPartition, tuple[int, str] | None]:
        partitions = [TopicPartition(self.input_topic, p) for p in range(PARTITIONS)]
        found = read_committed_offsets(AdminClient({"bootstrap.servers": self.bootstrap}), self.group_id, partitions)
        return {tp: None if c is None else (c.offset, c.metadata) for tp, c in found.items()}

    def end_offsets(self, batch: int) -> dict[TopicPartition, int]:
        return batch_end_offsets(self.input_topic, batch, PARTITIONS)


def wait_for_group_coordinator(bootstrap: str, topic: str, timeout_s: float = 60) -> None:
    """Wait until the broker's group coordinator serves offset commits and reads.

    A fresh broker creates and loads ``__consumer_offsets`` on first use and answers
    NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS meanwhile; the code under test (and
    ``write_committed_offsets``) would see those as failures, so tests start once it is ready.
    """
    group = f"warm-up-{uuid.uuid4().hex[:8]}"
    tp = KafkaTopicPartition(topic, 0, 0, "")
    deadline = time.monotonic() + timeout_s
    while True:
        # A fresh client per attempt: reusing one after a coordinator error crashed librdkafka here.
        admin = AdminClient({"bootstrap.servers": bootstrap})
        try:
            result = admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, [tp])])[group].result(30)
            if all(p.error is None for p in result.topic_partitions):
                read = ConsumerGroupTopicPartitions(group, [KafkaTopicPartition(topic, 0)])
                admin.list_consumer_group_offsets([read])[group].result(30)
                return
        except KafkaException:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"the group coordinator of {bootstrap} did not become ready in {timeout_s}s")
        time.sleep(0.5)


@pytest.fixture
def pipeline(tmp_path: Path, bootstrap: str, topic_factory) -> Pipeline:
    input_topic = topic_factory("eos-in", partitions=PARTITIONS)
    wait_for_group_coordinator(bootstrap, input_topic)
    output_topic = topic_factory("eos-out", partitions=PARTITIONS)
    name = f"p{uuid.uuid4().hex[:8]}"
    query_id = str(uuid.uuid4())
    checkpoint = write_checkpoint(
        tmp_path / "checkpoints" / name,
        topic=input_topic,
        partitions=PARTITIONS,
        query_id=query_id,
        offsets=range(LAST_COMMITTED + 1),
        commits=range(LAST_COMMITTED + 1),
    )
    spec = {
        "name": name,
        "kafka": {"bootstrap.servers": bootstrap},
        "input_topics": [input_topic],
        "output_topic": output_topic,
        "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos",
        "checkpoint_location": str(checkpoint),
        "transaction_timeout_ms": 60000,
    }
    spec_path = tmp_path / f"{name}.json"
    spec_path.write_text(json.dumps(spec))
    return Pipeline(
        spec_path=spec_path,
        checkpoint=checkpoint,
        bootstrap=bootstrap,
        input_topic=input_topic,
        output_topic=output_topic,
        group_id=spec["group_id"],
        prefix=spec["transactional_id_prefix"],
        query_id=query_id,
    )


@dataclass
class Run:
    """The outcome of one ``dag.test()`` run."""

    state: str
    states: dict[str, str]
    tries: dict[str, int]
    xcoms: dict[str, Any]
    rendered: dict[str, Any]
    log: str


def run_in_airflow(builder: str, tmp_path: Path, env: dict[str, str] | None = None, **kwargs: Any) -> Run:
    """Run the DAG of ``build_<builder>(**kwargs)`` with ``dag.test()`` in a child process."""
    result = tmp_path / f"run-{uuid.uuid4().hex[:8]}.json"
    proc = subprocess.run(
        [sys.executable, "-m", __name__, builder, json.dumps(kwargs), str(result)],
        cwd=REPO,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0 and result.exists(), f"dag.test() child: exit {proc.returncode}\n{proc.stdout[-8000:]}"
    return Run(**json.loads(result.read_text()), log=proc.stdout)


def task_log(run: Run, task_id: str) -> str:
    """The log lines between ``dag.test()``'s start and end markers of one task."""
    start = run.log.index(f"starting task_id={task_id} ")
    end = run.log.index(f"end task task_id={task_id} ", start)
    return run.log[start:end]


# -- the DAGs, built in the child process ---------------------------------------------------------


def new_dag(**kwargs: Any):
    from airflow.sdk import DAG

    return DAG(f"eos_recovery_{uuid.uuid4().hex[:10]}", schedule=None, start_date=START, catchup=False, **kwargs)


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

    with new_dag() as dag:
        VerifyCommittedOffsetsOperator(task_id="verify", spec_path=spec_path, kafka_conn_id=conn_id)
        masked_in_the_task()
    return dag


def build_verify_then_rewind_plan(spec_path: str):
    from airflow_provider_eos.operators.recovery import RewindCheckpointOperator, VerifyCommittedOffsetsOperator

    with new_dag() as dag:
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

    with new_dag(params={"dry_run": False, "spec_path": spec_path}) as dag:
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

    with new_dag() as dag:
        plan = AlignGroupOffsetsOperator(task_id="align_plan", spec_path=spec_path)
        align = AlignGroupOffsetsOperator(task_id="align", spec_path=spec_path, dry_run=False)
        verify = VerifyCommittedOffsetsOperator(task_id="verify", spec_path=spec_path)
        plan >> align >> verify
    return dag


def build_abort(spec_path: str):
    from airflow_provider_eos.operators.recovery import AbortOpenTransactionsOperator

    with new_dag(params={"force": True}) as dag:
        refused = AbortOpenTransactionsOperator(task_id="abort_refused", spec_path=spec_path)
        forced = AbortOpenTransactionsOperator(
            task_id="abort", spec_path=spec_path, force="{{ params.force }}", trigger_rule="all_done"
        )
        refused >> forced
    return dag


def run_dag(dag) -> dict[str, Any]:
    """Register ``dag`` in the metadata DB, run it with ``dag.test()``, and collect what it left."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import DagBag, sync_bag_to_db
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    # dag.test() only runs DAGs it finds serialized with a version; it syncs the configured
    # bundles (the repo's dags/ folder), which do not hold a DAG built here, so it is written
    # to the DB the way the DAG processor writes a parsed file.
    DagBundlesManager().sync_bundles_to_db()
    bag = DagBag(collect_dags=False)
    bag.bag_dag(dag)
    sync_bag_to_db(bag, "dags-folder", None)

    dag_run = dag.test()

    with create_session() as session:
        tis = dag_run.get_task_instances(session=session)
        xcoms = session.query(XComModel).filter(
            XComModel.dag_id == dag.dag_id, XComModel.run_id == dag_run.run_id, XComModel.key == "return_value"
        )
        rendered = session.query(RenderedTaskInstanceFields).filter(
            RenderedTaskInstanceFields.dag_id == dag.dag_id, RenderedTaskInstanceFields.run_id == dag_run.run_id
        )
        return {
            "state": str(dag_run.state),
            "states": {ti.task_id: str(ti.state) for ti in tis},
            "tries": {ti.task_id: ti.try_number for ti in tis},
            "xcoms": {row.task_id: row.value for row in xcoms},
            "rendered": {row.task_id: row.rendered_fields for row in rendered},
        }


# -- the tests ------------------------------------------------------------------------------------


def test_verify_in_sync_passes_pushes_the_report_and_leaks_no_kafka_secret(
    pipeline: Pipeline, airflow_home: Path, tmp_path: Path
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
    pipeline.commit_group(LAST_COMMITTED)

    run = run_in_airflow(
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
    pipeline: Pipeline, airflow_home: Path, tmp_path: Path
) -> None:
    pipeline.commit_group(1)  # the output of batches 2 and 3 never reached Kafka
    before = tree(pipeline.checkpoint)

    run = run_in_airflow("verify_then_rewind_plan", tmp_path, spec_path=str(pipeline.spec_path))

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
    pipeline: Pipeline, airflow_home: Path, tmp_path: Path
) -> None:
    pipeline.commit_group(1)
    before = tree(pipeline.checkpoint)

    run = run_in_airflow("rewind_then_verify", tmp_path, spec_path=str(pipeline.spec_path))

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
    pipeline: Pipeline, airflow_home: Path, tmp_path: Path
) -> None:
    assert set(pipeline.group().values()) == {None}  # NO_MARKER: the group holds nothing

    run = run_in_airflow("align", tmp_path, spec_path=str(pipeline.spec_path))

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


def test_abort_refuses_while_the_job_looks_alive_and_fences_the_open_transaction_when_forced(
    pipeline: Pipeline, airflow_home: Path, tmp_path: Path
) -> None:
    txn_id = f"{pipeline.prefix}-0"
    zombie = Producer({"bootstrap.servers": pipeline.bootstrap, "transactional.id": txn_id})
    zombie.init_transactions(30)
    zombie.begin_transaction()
    for i in range(10):
        zombie.produce(pipeline.output_topic, key=f"k{i}".encode(), value=b"never committed")
    assert zombie.flush(30) == 0
    pinned = end_offsets(pipeline.bootstrap, pipeline.output_topic, PARTITIONS, committed=True)
    hwm = end_offsets(pipeline.bootstrap, pipeline.output_topic, PARTITIONS, committed=False)
    assert pinned != hwm  # the open transaction really pins the last stable offset

    run = run_in_airflow("abort", tmp_path, spec_path=str(pipeline.spec_path))

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
    # The child process of run_in_airflow: python -m tests.dags.test_recovery_operators BUILDER ARGS RESULT
    builder, arguments, result_path = sys.argv[1:]
    outcome = run_dag(globals()[f"build_{builder}"](**json.loads(arguments)))
    Path(result_path).write_text(json.dumps(outcome, default=str))
