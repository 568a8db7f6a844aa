"""Every use case through both shells on the same real state: same outcome, same report.

The repairs also run executed: the pipeline is staged, one shell executes, the same state is
staged again (the checkpoint copied back, the sink group deleted) and the other shell executes;
both give the same result and leave the same checkpoint, backup and group behind.

The CLI runs as ``eos ... --json`` in a subprocess; the operator's ``execute`` runs in this
process with a minimal context (a task instance that records what is pushed to XCom). The
outcomes must correspond: ``ok`` is exit 0 and success (the data returned), ``finding`` is
exit 1 and ``AirflowFailException`` after the data was pushed, an error is exit 2 with the JSON
error object and an ``AirflowException`` carrying the same message and fix, with nothing pushed.
State is real: the broker of the ``bootstrap`` fixture and a checkpoint in Spark's format
written by :mod:`tests.support.checkpoints`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from airflow_provider_eos.core.markers import BatchMarker
from tests.integration.test_recovery_cli import group_coordinator_ready  # noqa: F401  (autouse warm-up)
from tests.support.checkpointed_pipeline import LAST_COMMITTED, PARTITIONS, CheckpointedPipeline, checkpointed_pipeline
from tests.support.checkpoints import tree

pytestmark = pytest.mark.integration

EOS = Path(sys.executable).with_name("eos")
# Values that depend on the moment a shell ran, not on the state both shells read.
MOMENT_KEYS = frozenset({"scanned_at", "evaluated_at", "evaluated_at_ms", "commit_age_ms", "age_ms", "observed_at"})


@pytest.fixture
def pipeline(tmp_path: Path, bootstrap: str, topic_factory) -> CheckpointedPipeline:
    """A spec file in a specs folder, a checkpoint of batches 0..3 and the sink group."""
    return checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="parity", trigger="10 seconds")


# -- the two shells -------------------------------------------------------------------------------


@dataclass
class Shell:
    """What one shell said: the outcome and the report (or, for an error, the error object)."""

    outcome: str
    data: dict[str, Any]


# Ages and times inside messages ("open for 652ms of its 1m00s timeout", "commit is 5s old (2026-...)").
MOMENT_TEXT = re.compile(r"\d{4}-\d\d-\d\dT[\d:.]+(?:[+-]\d\d:\d\d|Z)?|\b\d+(?:\.\d+)?(?:h\d+m)?(?:m\d+s|ms|s|m|h)\b")


def normalized(data: dict[str, Any]) -> Any:
    """``data`` as JSON would carry it, without the values that only say when it was read."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in MOMENT_KEYS}
        if isinstance(value, list):
            return [strip(v) for v in value]
        if isinstance(value, str):
            return MOMENT_TEXT.sub("<moment>", value)
        return value

    return strip(json.loads(json.dumps(data, default=str)))


def cli(*args: str, env: dict[str, str] | None = None) -> Shell:
    assert EOS.exists(), f"the eos entry point is not installed next to {sys.executable}; run `make install`"
    result = subprocess.run(
        [str(EOS), *args, "--json"], capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, **(env or {})},
    )
    try:
        data = json.loads(result.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"eos {' '.join(args)} --json printed no JSON (exit {result.returncode}):\n"
                    f"{result.stdout}{result.stderr}")
    outcome = {0: "ok", 1: "finding", 2: "error"}.get(result.returncode)
    assert outcome is not None, f"eos {' '.join(args)}: exit {result.returncode}\n{result.stderr}"
    return Shell(outcome, data)


class TaskInstance:
    """The part of the task instance the operators use: what they push to XCom."""

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value


def operator(task: Any) -> Shell:
    """Run ``task.execute`` and read its outcome the way Airflow would."""
    from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, TaskDeferred

    ti = TaskInstance()
    try:
        returned = task.execute({"ti": ti})
    except AirflowFailException as exc:
        if "return_value" in ti.pushed:
            return Shell("finding", ti.pushed["return_value"])
        return Shell("error", _error_of(exc))
    except AirflowException as exc:
        assert "return_value" not in ti.pushed, "an error must not push a report"
        return Shell("error", _error_of(exc))
    except TaskDeferred:  # pragma: no cover - a sensor that did not settle is a test bug
        pytest.fail(f"{task.task_id} deferred instead of settling on its first sample")
    return Shell("ok", returned)


def _error_of(exc: BaseException) -> dict[str, Any]:
    cause = exc.__cause__
    assert cause is not None, f"the task failure carries no core error: {exc!r}"
    return {"error": type(cause).__name__, "message": getattr(cause, "message", str(cause)),
            "fix": getattr(cause, "fix", None), "text": str(exc)}


def assert_same(
    cli_said: Shell, operator_said: Shell, *, outcome: str, cli_only: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Both shells reached ``outcome`` with the same report (or the same error); return the CLI's data.

    :param cli_only: keys only the CLI's data has (the operator under test returns the bare report).
    """
    assert (cli_said.outcome, operator_said.outcome) == (outcome, outcome), (cli_said, operator_said)
    if outcome == "error":
        assert operator_said.data["error"] == cli_said.data["error"]
        text = normalized({"text": operator_said.data["text"]})["text"]
        assert normalized({"message": cli_said.data["message"]})["message"] in text
        assert (cli_said.data["fix"] or "") in text
        return cli_said.data
    assert cli_said.data["outcome"] == outcome
    compared = {k: v for k, v in cli_said.data.items() if k not in cli_only}
    assert normalized(operator_said.data) == normalized(compared)
    return cli_said.data


def recovery(kind: str, pipeline: CheckpointedPipeline, **params: Any) -> Shell:
    from airflow_provider_eos.operators import recovery as ops

    classes = {
        "verify": ops.VerifyCommittedOffsetsOperator,
        "abort": ops.AbortOpenTransactionsOperator,
        "rewind": ops.RewindCheckpointOperator,
        "align": ops.AlignGroupOffsetsOperator,
    }
    return operator(classes[kind](task_id=kind, spec_path=str(pipeline.spec_path), **params))


@pytest.fixture
def open_transaction(pipeline: CheckpointedPipeline) -> Iterator[str]:
    """A live producer's transaction under the pipeline's prefix, open on the output topic."""
    txn_id = f"{pipeline.prefix}-0"
    producer = Producer({"bootstrap.servers": pipeline.bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(5):
        producer.produce(pipeline.output_topic, key=f"k{i}".encode(), value=b"open", partition=i % PARTITIONS)
    assert producer.flush(30) == 0
    try:
        yield txn_id
    finally:
        producer.abort_transaction(30)


# -- verify -------------------------------------------------------------------------------------


def test_verify_in_sync(pipeline: CheckpointedPipeline) -> None:
    pipeline.commit_group(LAST_COMMITTED)
    data = assert_same(cli("verify", "--spec", str(pipeline.spec_path)), recovery("verify", pipeline), outcome="ok")
    assert data["overall"] == "IN_SYNC" and data["last_committed"] == LAST_COMMITTED
    assert data["group_id"] == pipeline.group_id and len(data["rows"]) == PARTITIONS


def test_verify_kafka_behind(pipeline: CheckpointedPipeline) -> None:
    pipeline.commit_group(1)
    data = assert_same(
        cli("verify", "--spec", str(pipeline.spec_path)), recovery("verify", pipeline), outcome="finding"
    )
    assert data["overall"] == "KAFKA_BEHIND" and data["rewind_to_batch"] == 1
    assert data["next_step"].startswith("Rewind the checkpoint to batch 1")


def test_verify_with_a_missing_checkpoint(pipeline: CheckpointedPipeline) -> None:
    spec = json.loads(pipeline.spec_path.read_text())
    pipeline.spec_path.write_text(json.dumps({**spec, "checkpoint_location": str(pipeline.checkpoint) + "-never"}))

    # Nothing committed and a group holding nothing: a first run passes in both shells.
    data = assert_same(cli("verify", "--spec", str(pipeline.spec_path)), recovery("verify", pipeline), outcome="ok")
    assert data["overall"] == "IN_SYNC" and data["last_committed"] is None
    assert {(r["verdict"], r["group_offset"]) for r in data["rows"]} == {("IN_SYNC", None)}

    # The group holds markers of a query the missing checkpoint does not have: a wrong location.
    pipeline.commit_group(LAST_COMMITTED)
    data = assert_same(
        cli("verify", "--spec", str(pipeline.spec_path)), recovery("verify", pipeline), outcome="finding"
    )
    assert data["overall"] == "DIVERGED"


# -- abort --------------------------------------------------------------------------------------


def test_abort_dry_run_with_an_open_transaction_and_the_refusal(
    pipeline: CheckpointedPipeline, open_transaction: str
) -> None:
    spec = str(pipeline.spec_path)
    # Both shells dry-run by default (as for rewind and align).
    data = assert_same(cli("abort", "--spec", spec), recovery("abort", pipeline), outcome="finding")
    assert data["executed"] is False
    assert [(r["transactional_id"], r["outcome"]) for r in data["rows"]] == [
        (open_transaction, "would abort (dry run)")
    ]

    # Executing while the job looks alive (a young transaction, a fresh commit) is refused by both.
    error = assert_same(cli("abort", "--spec", spec, "--execute"), recovery("abort", pipeline, dry_run=False),
                        outcome="error")
    assert error["error"] == "UnsafeToActError" and open_transaction in error["message"]


# -- repairs ------------------------------------------------------------------------------------


def test_align_dry_run_on_no_marker(pipeline: CheckpointedPipeline) -> None:
    data = assert_same(
        cli("repair", "align", "--spec", str(pipeline.spec_path)), recovery("align", pipeline), outcome="ok"
    )
    assert data["verdict"] == "NO_MARKER" and data["executed"] is False and data["changes"] == PARTITIONS
    assert data["verdict_after"] == "NO_MARKER"


def test_rewind_dry_run(pipeline: CheckpointedPipeline) -> None:
    pipeline.commit_group(1)
    spec = str(pipeline.spec_path)
    data = assert_same(
        cli("repair", "rewind", "--spec", spec, "--to-batch", "1"),
        recovery("rewind", pipeline, to_batch=1),
        outcome="ok",
    )
    assert data["executed"] is False and data["to_batch"] == 1 and data["moved"] == []
    assert {m["path"] for m in data["moves"] if not m["path"].endswith(".crc")} == {
        "offsets/2", "offsets/3", "commits/2", "commits/3"
    }
    # Without a batch both take the one the KAFKA_BEHIND verdict names.
    named = assert_same(cli("repair", "rewind", "--spec", spec), recovery("rewind", pipeline), outcome="ok")
    assert normalized(named) == normalized(data)

    # With nothing behind there is no batch to take: the same refusal in both shells.
    pipeline.commit_group(LAST_COMMITTED)
    error = assert_same(cli("repair", "rewind", "--spec", spec), recovery("rewind", pipeline), outcome="error")
    assert error["error"] == "RepairError" and "IN_SYNC" in error["message"]


# -- executed repairs: the same pipeline staged twice, once per shell ------------------------------


def without_backup_dir(shell: Shell, checkpoint: Path) -> Shell:
    """The shell's result with its backup folder checked and named by a placeholder (its name is a timestamp)."""
    backup = Path(shell.data["backup_dir"])
    assert backup.parent == checkpoint.parent and backup.name.startswith(f"{checkpoint.name}.eos-backup-"), backup
    return Shell(shell.outcome, {**shell.data, "backup_dir": "<backup>"})


def test_rewind_executed(pipeline: CheckpointedPipeline, tmp_path: Path) -> None:
    """Refused alike while the checkpoint looks alive; executed alike, to the same checkpoint and backup."""
    pipeline.commit_group(1)
    spec, checkpoint = str(pipeline.spec_path), pipeline.checkpoint
    args = ("repair", "rewind", "--spec", spec, "--to-batch", "1", "--execute")

    pipeline.age_commits(0)  # committed just now: the query looks alive
    error = assert_same(cli(*args), recovery("rewind", pipeline, to_batch=1, dry_run=False), outcome="error")
    assert error["error"] == "UnsafeToActError" and "refusing to rewind the checkpoint" in error["message"]

    pipeline.age_commits()
    staged = tmp_path / "staged"
    shutil.copytree(checkpoint, staged)  # copy2 keeps the commits' old times
    seen = cli("repair", "rewind", "--spec", spec, "--to-batch", "1").data["fingerprint"]

    by_cli = cli(*args, "--expect-plan", seen)
    cli_checkpoint, cli_backup = tree(checkpoint), tree(Path(by_cli.data["backup_dir"]))
    shutil.rmtree(checkpoint)
    shutil.rmtree(by_cli.data["backup_dir"])
    shutil.copytree(staged, checkpoint)
    by_operator = recovery("rewind", pipeline, to_batch=1, dry_run=False, expected_plan=seen)

    data = assert_same(without_backup_dir(by_cli, checkpoint), without_backup_dir(by_operator, checkpoint),
                       outcome="ok")
    assert data["executed"] is True and data["fingerprint"] == seen and data["safety"]["safe"] is True
    assert {m for m in data["moved"] if not m.split("/")[-1].startswith(".")} == {
        "offsets/2", "offsets/3", "commits/2", "commits/3"}
    assert tree(checkpoint) == cli_checkpoint and tree(Path(by_operator.data["backup_dir"])) == cli_backup


def test_align_executed(pipeline: CheckpointedPipeline) -> None:
    """Committed alike (after the same dry run), leaving the sink group with the same offsets and markers."""
    from confluent_kafka.admin import AdminClient

    pipeline.age_commits()
    spec = str(pipeline.spec_path)
    seen = cli("repair", "align", "--spec", spec).data["fingerprint"]

    by_cli = cli("repair", "align", "--spec", spec, "--execute", "--expect-plan", seen)
    cli_group = pipeline.group()
    admin = AdminClient({"bootstrap.servers": pipeline.bootstrap})
    admin.delete_consumer_groups([pipeline.group_id])[pipeline.group_id].result(30)
    assert set(pipeline.group().values()) == {None}  # staged again: NO_MARKER
    by_operator = recovery("align", pipeline, dry_run=False, expected_plan=seen)

    data = assert_same(by_cli, by_operator, outcome="ok")
    assert data["executed"] is True and data["fingerprint"] == seen and data["verdict_after"] == "IN_SYNC"
    assert data["safety"]["safe"] is True
    marker = BatchMarker(pipeline.query_id, LAST_COMMITTED).encode()
    assert cli_group == {tp: (offset, marker) for tp, offset in pipeline.end_offsets(LAST_COMMITTED).items()}
    assert pipeline.group() == cli_group


# -- pre-flight ---------------------------------------------------------------------------------


def test_preflight(pipeline: CheckpointedPipeline, tmp_path: Path) -> None:
    from airflow_provider_eos.operators.preflight import EosPreflightOperator

    specs = str(pipeline.spec_path.parent)

    def task() -> EosPreflightOperator:
        return EosPreflightOperator(task_id="preflight", spec_path=str(pipeline.spec_path), specs_dir=specs,
                                    master="local[2]")

    args = ("preflight", "--spec", str(pipeline.spec_path), "--master", "local[2]")
    # The checkpoint committed batch 3 but the group holds no marker yet: the sink would stop on batch 4.
    data = assert_same(cli(*args, "--specs-dir", specs), operator(task()), outcome="finding")
    assert data["errors"] == ["EOS308"]
    pipeline.commit_group(LAST_COMMITTED)
    data = assert_same(cli(*args, "--specs-dir", specs), operator(task()), outcome="ok")
    assert data["ok"] is True and data["errors"] == []
    assert {f["code"]: f["status"] for f in data["findings"]}["EOS401"] == "pass"  # the folder was read

    # $EOS_SPECS_DIR is the folder eos preflight reads without --specs-dir, as the DAGs do.
    via_env = cli(*args, env={"EOS_SPECS_DIR": specs})
    assert normalized(via_env.data) == normalized(data)

    # A pipeline whose topics do not exist: the same failed rules in both shells.
    spec = json.loads(pipeline.spec_path.read_text())
    pipeline.spec_path.write_text(json.dumps({**spec, "input_topics": [f"missing-{uuid.uuid4().hex[:8]}"]}))
    data = assert_same(cli(*args, "--specs-dir", specs), operator(task()), outcome="finding")
    assert "EOS205" in data["errors"]


# -- health -------------------------------------------------------------------------------------


def test_health(pipeline: CheckpointedPipeline) -> None:
    """``eos health`` and the health sensor evaluate the same sample the same way.

    The sensor's XCom is the report itself (it watches over time rather than answering once),
    so the CLI's ``outcome`` and ``next_step`` are left out of the comparison.
    """
    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    def sensor(watch: str) -> Shell:
        return operator(StreamingQueryHealthSensor(
            task_id="health", spec_path=str(pipeline.spec_path), watch=watch,
            committed_after="2000-01-01T00:00:00+00:00",
        ))

    pipeline.produce_input_of(LAST_COMMITTED)  # no lag
    pipeline.commit_group(LAST_COMMITTED)
    data = assert_same(cli("health", "--spec", str(pipeline.spec_path)), sensor("wait_healthy"), outcome="ok",
                       cli_only=("outcome", "next_step"))
    assert data["status"] == "HEALTHY" and data["total_lag"] == 0

    pipeline.commit_group(1)  # the output of batches 2 and 3 is missing: KAFKA_BEHIND
    data = assert_same(cli("health", "--spec", str(pipeline.spec_path)), sensor("watch"), outcome="finding",
                       cli_only=("outcome", "next_step"))
    assert data["status"] == "UNHEALTHY" and data["verification"]["verdict"] == "KAFKA_BEHIND"
    assert data["next_step"].startswith("Rewind the checkpoint to batch 1")
