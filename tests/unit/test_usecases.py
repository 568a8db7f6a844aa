"""The use cases' decisions, with a hand-made checkpoint and the group's offsets scripted (no broker).

The same decisions run against the real broker through both shells in
tests/integration/test_usecases_parity.py; here are the outcomes a live broker does not produce
on demand (a commit the group does not hold afterwards) and the CLI's output contract.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from kafka.errors import RequestTimedOutError

from airflow_provider_eos.cli.output import ExitCode, emit, emit_error
from airflow_provider_eos.core.errors import CheckpointError, KafkaWriteNoAnswerError, RepairError, UnsafeToActError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.offsets_expiry import RetentionReading
from airflow_provider_eos.core.preflight import KAFKA_BROKER_DEFAULTS
from airflow_provider_eos.core.presentation import result_text
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import Transaction
from airflow_provider_eos.usecases import clients as clients_module
from airflow_provider_eos.usecases.align import align
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.result import Outcome
from airflow_provider_eos.usecases.rewind import rewind
from airflow_provider_eos.usecases.verify import verify
from tests.support.checkpoints import batch_end_offsets, write_checkpoint
from tests.support.offset_fetch_admin import OffsetCommitAdmin

TOPIC = "orders-in"
PARTITIONS = 2
QUERY = str(uuid.uuid4())


@dataclass
class ScriptedClients(PipelineClients):
    """Clients whose group offsets are read from a script, one entry per read (the last repeats)."""

    reads: list[CommittedOffsets] = field(default_factory=list)
    transactions: list[Transaction] = field(default_factory=list)
    #: The kafka-python admin align's write goes to (a stand-in answering every commit).
    commit_admin: Any = field(default_factory=lambda: OffsetCommitAdmin({}))

    @property
    def admin(self) -> Any:  # type: ignore[override]
        # No broker: the scripted reads stand in for it, and the probe has nothing to ask.
        return "scripted admin"

    def committed_offsets(self) -> CommittedOffsets:
        return self.reads.pop(0) if len(self.reads) > 1 else self.reads[0]

    def offsets_retention(self) -> RetentionReading:
        return RetentionReading(KAFKA_BROKER_DEFAULTS["offsets.retention.minutes"], dt.datetime.now(dt.UTC))

    def transactions_under_prefix(self) -> list[Transaction]:
        return self.transactions

    @contextlib.contextmanager
    def transactions_admin(self) -> Iterator[Any]:
        yield self.commit_admin


def group_at(batch: int) -> CommittedOffsets:
    marker = BatchMarker(QUERY, batch).encode()
    return {tp: CommittedOffset(o, marker) for tp, o in batch_end_offsets(TOPIC, batch, PARTITIONS).items()}


def nothing() -> CommittedOffsets:
    return {tp: None for tp in batch_end_offsets(TOPIC, 0, PARTITIONS)}


def clients(tmp_path: Path, *reads: CommittedOffsets, checkpoint: bool = True, alive: bool = False) -> ScriptedClients:
    """A checkpoint of batches 0..2 committed an hour ago (``alive``: just now) and the group's reads."""
    location = tmp_path / "checkpoint"
    if checkpoint:
        write_checkpoint(location, topic=TOPIC, partitions=PARTITIONS, query_id=QUERY, offsets=range(3),
                         commits=range(3))
        if not alive:
            then = time.time() - 3600
            for commit in (location / "commits").iterdir():
                os.utime(commit, (then, then))
    spec = PipelineSpec(
        name="orders", kafka={"bootstrap.servers": "localhost:1"}, input_topics=[TOPIC], output_topic="orders-out",
        group_id="orders-sink", transactional_id_prefix="orders-eos", checkpoint_location=str(location),
    )
    return ScriptedClients(spec, reads=list(reads))


@pytest.fixture
def commits(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[dict[Any, Any]]]:
    """What align commits, recorded instead of sent."""
    sent: list[dict[Any, Any]] = []

    def record(admin: Any, group: str, offsets: dict[Any, Any], **kwargs: Any) -> None:
        sent.append(offsets)

    monkeypatch.setattr(clients_module, "commit_group_offsets", record)
    yield sent


def test_verify_without_a_checkpoint_is_nothing_committed_yet(tmp_path: Path) -> None:
    result = verify(clients(tmp_path, nothing(), checkpoint=False))
    assert result.outcome is Outcome.OK and result.report.overall.value == "IN_SYNC"
    assert result.notes and "no checkpoint" in result.notes[0]
    assert "Note: no checkpoint" in result_text(result)


def test_verify_without_a_checkpoint_but_with_markers_is_a_finding(tmp_path: Path) -> None:
    result = verify(clients(tmp_path, group_at(1), checkpoint=False))
    assert result.outcome is Outcome.FINDING and result.report.overall.value == "DIVERGED"
    assert "disagree (DIVERGED)" in result.summary


def test_align_that_the_group_does_not_hold_afterwards_is_a_finding(tmp_path: Path, commits: list) -> None:
    # Before: nothing (NO_MARKER). After the commit the group still reads nothing.
    result = align(clients(tmp_path, nothing(), nothing()), execute=True)
    assert len(commits) == 1 and result.executed
    assert result.outcome is Outcome.FINDING and result.after.overall.value == "NO_MARKER"
    assert result.summary == "committed the plan, but verification afterwards says NO_MARKER"
    assert result.data()["verdict_after"] == "NO_MARKER" and result.data()["outcome"] == "finding"


def test_align_that_lands_is_ok_and_a_dry_run_commits_nothing(tmp_path: Path, commits: list) -> None:
    done = align(clients(tmp_path, nothing(), group_at(2)), execute=True)
    assert done.outcome is Outcome.OK and done.after.overall.value == "IN_SYNC"
    assert "Committed. Verification afterwards" in result_text(done)

    dry = align(clients(tmp_path / "dry", nothing()))
    assert len(commits) == 1  # only the executed one
    assert dry.outcome is Outcome.OK and not dry.executed and "Dry run: nothing committed" in result_text(dry)


def test_repairs_refuse_a_missing_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no Spark checkpoint"):
        align(clients(tmp_path, nothing(), checkpoint=False))
    with pytest.raises(CheckpointError, match="no Spark checkpoint"):
        rewind(clients(tmp_path, nothing(), checkpoint=False), to_batch=0)


def test_rewind_takes_the_batch_the_verdict_names_or_refuses(tmp_path: Path) -> None:
    behind = rewind(clients(tmp_path, group_at(1)))
    assert behind.outcome is Outcome.OK and behind.report.plan.to_batch == 1 and not behind.report.executed
    assert behind.notes == ("verification says KAFKA_BEHIND: rewinding to batch 1",)
    with pytest.raises(RepairError, match="verdict IN_SYNC") as info:
        rewind(clients(tmp_path / "in-sync", group_at(2)))
    assert info.value.fix


def test_repairs_execute_only_when_the_pipeline_does_not_look_alive_or_forced(tmp_path: Path, commits: list) -> None:
    from tests.support.checkpoints import tree

    alive = clients(tmp_path / "a", nothing(), alive=True)  # the checkpoint committed just now
    before = tree(tmp_path / "a" / "checkpoint")
    assert not align(alive).executed and not rewind(alive, to_batch=1).report.executed  # dry runs are allowed
    with pytest.raises(UnsafeToActError, match=r"refusing to align the sink group: the pipeline looks alive"):
        align(alive, execute=True)
    with pytest.raises(UnsafeToActError, match=r"refusing to rewind the checkpoint: the pipeline looks alive") as err:
        rewind(alive, to_batch=1, execute=True)
    assert "rewind <pipeline> force" in (err.value.fix or "")
    assert commits == [] and tree(tmp_path / "a" / "checkpoint") == before

    forced = rewind(alive, to_batch=1, execute=True, force=True)
    assert forced.report.executed and forced.safety is not None and forced.safety.forced
    assert forced.notes[0].startswith("forced despite signs that the pipeline is alive: the checkpoint's newest commit")
    assert forced.data()["safety"]["forced"] is True


def test_an_execution_holds_the_plan_to_the_fingerprint_the_dry_run_showed(tmp_path: Path, commits: list) -> None:
    dry = align(clients(tmp_path, nothing()))
    seen = dry.report.fingerprint
    assert f"Plan fingerprint: {seen}" in result_text(dry) and f"--expect-plan {seen}" in dry.next_step
    assert dry.notes == ()
    noted = align(clients(tmp_path / "n", nothing()), expected_plan="0" * len(seen))
    assert noted.notes == (f"the expected plan '{'0' * len(seen)}' is not this plan ({seen}): the state changed "
                           "since that dry run",)

    # The group now holds an offset the dry run did not show: another plan, refused, nothing committed.
    changed = {**nothing(), TopicPartition(TOPIC, 0): CommittedOffset(5, "")}
    with pytest.raises(RepairError, match=rf"the plan changed since the dry run that showed plan fingerprint '{seen}'"):
        align(clients(tmp_path / "c", changed), execute=True, expected_plan=seen)
    assert commits == []
    done = align(clients(tmp_path / "d", nothing(), group_at(2)), execute=True, expected_plan=seen.upper())
    assert done.executed and len(commits) == 1 and done.notes == ()
    unheld = align(clients(tmp_path / "u", nothing(), group_at(2)), execute=True)
    assert unheld.notes == ("executed without an expected plan fingerprint: the plan carried out is the one made in "
                            "this call, not one a person read",)


def test_an_align_whose_write_got_no_answer_says_the_write_may_have_gone_through(tmp_path: Path) -> None:
    """The commit's OffsetCommit unanswered (a broker paused): the typed error names the spec's brokers and says what
    the group holds is unknown, so no retry acts before verify has read it (design notes 76, 88)."""
    scripted = clients(tmp_path, nothing())
    scripted.commit_admin = OffsetCommitAdmin(RequestTimedOutError(), bootstrap_servers="localhost:1",
                                              request_timeout_ms=30_000)
    with pytest.raises(KafkaWriteNoAnswerError) as raised:
        align(scripted, execute=True)
    assert not raised.value.retryable
    assert raised.value.message.startswith("OffsetCommit('orders-sink'): no answer from the Kafka broker(s) at "
                                           "localhost:1 within 30 s"), raised.value.message
    assert "the write may have gone through" in raised.value.message
    assert "run `eos verify --spec <spec file>`" in str(raised.value.fix)


@pytest.mark.parametrize(("outcome", "code"), [(Outcome.OK, 0), (Outcome.FINDING, 1), (Outcome.ERROR, 2)])
def test_one_exit_code_per_outcome(outcome: Outcome, code: int) -> None:
    assert ExitCode.of(outcome) == code


def test_cli_output_text_json_and_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = verify(clients(tmp_path, group_at(1)))  # KAFKA_BEHIND

    assert emit(argparse.Namespace(json=False), result) is ExitCode.FINDING
    assert capsys.readouterr().out.startswith("Verification: KAFKA_BEHIND")
    assert emit(argparse.Namespace(json=True), result) is ExitCode.FINDING
    data = json.loads(capsys.readouterr().out)
    assert data == json.loads(json.dumps(result.data()))
    assert data["outcome"] == "finding" and data["pipeline"] == "orders" and data["rewind_to_batch"] == 1

    error = RepairError("refused", fix="do this")
    assert emit_error(argparse.Namespace(json=True), error) is ExitCode.ERROR
    assert json.loads(capsys.readouterr().out) == {"error": "RepairError", "message": "refused", "fix": "do this"}
    assert emit_error(argparse.Namespace(json=False), error) is ExitCode.ERROR
    assert capsys.readouterr().err == "error: refused\nFix: do this\n"
