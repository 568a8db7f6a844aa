"""Verification per writer (docs/architecture.md): executor writers may leave batch C+1 on some partitions only.

With the executor writers (one transaction per input partition) a crash in the middle of batch
C+1 leaves some partitions at marker C+1 (KAFKA_AHEAD_SAFE) and the rest at C (IN_SYNC): that is
consistent and the replay completes the batch. With the driver writer (one transaction per batch)
the same mix is DIVERGED. Which writer applies: the checkpoint's recorded choice, else the spec's
explicit ``writers``, else the driver's rules.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import CheckpointError, RepairError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.offsets_expiry import RetentionReading
from airflow_provider_eos.core.presentation import result_text, verification_text
from airflow_provider_eos.core.repair import plan_align
from airflow_provider_eos.core.spec import PipelineSpec, Writers
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition
from airflow_provider_eos.core.verification import (
    Verdict,
    VerificationReport,
    WritersInUse,
    WritersSource,
    verify,
    verify_checkpoint,
    writers_in_use,
)
from airflow_provider_eos.core.writers_choice import WritersChoice, WritersSwitch, record_writers_choice, writers_switch
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.rewind import rewind
from airflow_provider_eos.usecases.verify import verify as verify_use_case
from tests.support.checkpoints import batch_end_offsets, write_checkpoint

Q = "0b5c3e1a-8d2f-4e6a-9c1b-7f3e5a2d4c60"
T = "in"
PARTITIONS = 4
C = 3  # last committed batch; C+1 = 4 is planned and in flight


def wal(*batches: int) -> dict[int, OffsetMap]:
    return {n: batch_end_offsets(T, n, PARTITIONS) for n in batches}


def group(batch_of: dict[int, int], query_id: str = Q) -> CommittedOffsets:
    """Partition p at the end offsets of batch ``batch_of[p]``, with that batch's marker."""
    return {
        TopicPartition(T, p): CommittedOffset(batch_end_offsets(T, b, PARTITIONS)[TopicPartition(T, p)],
                                              BatchMarker(query_id, b).encode())
        for p, b in batch_of.items()
    }


# Partitions 0 and 2 committed batch C+1 before the crash; 1 and 3 are still at C.
MID_BATCH = {0: C + 1, 1: C, 2: C + 1, 3: C}


def choice(writers: Writers, requested: Writers = Writers.AUTO) -> WritersChoice:
    return WritersChoice(
        writers=writers,
        requested=requested,
        reason="plan is partition-aligned" if writers is Writers.EXECUTORS else "plan is not partition-aligned",
        operator=None if writers is Writers.EXECUTORS else "HashAggregateExec",
        query_id=Q,
        batch_id=0,
        decided_at=dt.datetime(2026, 11, 20, 9, 0, tzinfo=dt.UTC),
    )


EXECUTORS_RECORDED = writers_in_use(choice(Writers.EXECUTORS), Writers.AUTO)


def run(batch_of: dict[int, int], writers: WritersInUse | None = None, *, planned: int = C + 1) -> VerificationReport:
    extra = {} if writers is None else {"writers": writers}
    return verify(query_id=Q, last_committed=C, last_planned=planned, planned_offsets=wal(*range(planned + 1)),
                  committed=group(batch_of), **extra)


def verdicts(report: VerificationReport) -> dict[int, Verdict]:
    return {row.tp.partition: row.verdict for row in report.rows}


# -- which writer -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("recorded", "spec", "writers", "source"),
    [
        (choice(Writers.EXECUTORS), Writers.AUTO, Writers.EXECUTORS, WritersSource.RECORDED),
        # The record wins over the spec: it is the writer that wrote what is in flight.
        (choice(Writers.EXECUTORS), Writers.DRIVER, Writers.EXECUTORS, WritersSource.RECORDED),
        (choice(Writers.DRIVER), Writers.EXECUTORS, Writers.DRIVER, WritersSource.RECORDED),
        (None, Writers.EXECUTORS, Writers.EXECUTORS, WritersSource.SPEC),
        (None, Writers.DRIVER, Writers.DRIVER, WritersSource.SPEC),
        (None, Writers.AUTO, Writers.DRIVER, WritersSource.DEFAULT),
        (None, None, Writers.DRIVER, WritersSource.DEFAULT),
    ],
)
def test_the_writer_is_the_recorded_choice_else_the_explicit_spec_else_the_driver(
    recorded: WritersChoice | None, spec: Writers | None, writers: Writers, source: WritersSource
) -> None:
    found = writers_in_use(recorded, spec)
    assert (found.writers, found.source, found.requested, found.choice) == (writers, source, spec, recorded)


def test_the_summary_says_which_writer_and_where_from() -> None:
    assert EXECUTORS_RECORDED.summary == (
        "executors, as recorded in the checkpoint's eos/writers.json (requested auto, decided at batch 0: "
        "plan is partition-aligned)"
    )
    switched = writers_in_use(choice(Writers.DRIVER), Writers.EXECUTORS).summary
    assert switched.startswith("driver, as recorded") and "(HashAggregateExec)" in switched
    assert "the spec now says executors: the job decides again at its next start" in switched
    assert writers_in_use(None, Writers.EXECUTORS).summary == (
        "executors, from the spec (the checkpoint records no choice)"
    )
    assert writers_in_use(None, Writers.AUTO).summary == (
        "driver rules: the spec says auto and the checkpoint records no choice yet"
    )
    assert writers_in_use(None, None).summary.endswith("no spec at hand and the checkpoint records no choice yet")


# -- the mid-batch mix --------------------------------------------------------------------------


def test_executor_writers_stopped_mid_batch_are_ahead_safe_and_in_sync_per_partition() -> None:
    report = run(MID_BATCH, EXECUTORS_RECORDED)
    assert verdicts(report) == {
        0: Verdict.KAFKA_AHEAD_SAFE, 1: Verdict.IN_SYNC, 2: Verdict.KAFKA_AHEAD_SAFE, 3: Verdict.IN_SYNC,
    }
    assert report.overall is Verdict.KAFKA_AHEAD_SAFE and report.ok
    assert report.issues == ()
    assert report.partially_written_batch == C + 1
    assert report.next_step.startswith("Nothing to do: the replay skips the committed partitions and writes the rest.")
    assert "Batch 4 is in Kafka on 2 partition(s) and not yet on 2" in report.next_step
    waiting = next(row for row in report.rows if row.tp.partition == 1)
    assert waiting.detail == (
        "marker and offset match batch 3; batch 4 is not in Kafka for this partition yet: the replay writes it"
    )
    ahead = next(row for row in report.rows if row.tp.partition == 0)
    assert ahead.detail == "batch 4 is in Kafka, commits/4 is missing: the replay skips it"


@pytest.mark.parametrize("writers", [None, writers_in_use(None, Writers.AUTO), writers_in_use(None, Writers.DRIVER),
                                     writers_in_use(choice(Writers.DRIVER), Writers.EXECUTORS)])
def test_the_same_mix_is_diverged_by_the_driver_writers_rules(writers: WritersInUse | None) -> None:
    report = run(MID_BATCH, writers)
    # Each row alone still says what it is; the group as a whole cannot come from one transaction per batch.
    assert verdicts(report) == {
        0: Verdict.KAFKA_AHEAD_SAFE, 1: Verdict.IN_SYNC, 2: Verdict.KAFKA_AHEAD_SAFE, 3: Verdict.IN_SYNC,
    }
    assert report.overall is Verdict.DIVERGED and not report.ok
    assert report.partially_written_batch is None
    (issue,) = report.issues
    assert "different batches (3, 4)" in issue and "one marker per transaction" in issue
    assert f"writers: {report.writers.summary}" in issue
    assert report.next_step.startswith("Manual")


def test_with_nothing_recorded_and_auto_the_diverged_mix_hints_at_the_missing_record() -> None:
    (issue,) = run(MID_BATCH, writers_in_use(None, Writers.AUTO)).issues
    assert "eos/writers.json is missing" in issue and "`writers: executors`" in issue
    (explicit,) = run(MID_BATCH, writers_in_use(None, Writers.DRIVER)).issues
    assert "eos/writers.json" not in explicit


def test_executor_writers_at_c_plus_one_everywhere_are_plain_ahead_safe() -> None:
    report = run(dict.fromkeys(range(PARTITIONS), C + 1), EXECUTORS_RECORDED)
    assert report.overall is Verdict.KAFKA_AHEAD_SAFE and report.partially_written_batch is None
    assert report.next_step.startswith("Nothing to do: batch 4 is in Kafka but not yet in commits/")


def test_executor_writers_in_sync_everywhere_stay_in_sync() -> None:
    report = run(dict.fromkeys(range(PARTITIONS), C), EXECUTORS_RECORDED, planned=C)
    assert report.overall is Verdict.IN_SYNC and report.partially_written_batch is None
    assert all(row.detail == "marker and offset match batch 3" for row in report.rows)


def test_executor_writers_never_leave_a_committed_batch_behind_on_some_partitions() -> None:
    # Batch C ended only after every partition committed it: C-1 beside C is not a crash of theirs.
    report = run({0: C - 1, 1: C, 2: C, 3: C}, EXECUTORS_RECORDED, planned=C)
    assert report.overall is Verdict.DIVERGED
    (issue,) = report.issues
    assert "batches 2, 3" in issue and "at most two adjacent batches" in issue
    # Three batches side by side are no crash of theirs either.
    assert run({0: C - 1, 1: C, 2: C + 1, 3: C}, EXECUTORS_RECORDED).overall is Verdict.DIVERGED


def test_a_diverged_partition_inside_the_mix_still_makes_the_group_diverged() -> None:
    committed = group(MID_BATCH)
    tp = TopicPartition(T, 1)
    committed[tp] = CommittedOffset(committed[tp].offset + 1, committed[tp].metadata)
    report = verify(query_id=Q, last_committed=C, last_planned=C + 1, planned_offsets=wal(*range(C + 2)),
                    committed=committed, writers=EXECUTORS_RECORDED)
    assert report.overall is Verdict.DIVERGED and report.partially_written_batch is None
    assert verdicts(report)[1] is Verdict.DIVERGED


# -- the report says which writer ---------------------------------------------------------------


def test_the_json_and_the_text_say_which_writer_judged() -> None:
    report = run(MID_BATCH, EXECUTORS_RECORDED)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["writers"]["writers"] == "executors" and data["writers"]["source"] == "recorded"
    assert data["writers"]["requested"] == "auto" and data["writers"]["choice"]["batch_id"] == 0
    assert data["writers"]["summary"] == EXECUTORS_RECORDED.summary
    assert data["partially_written_batch"] == 4 and data["overall"] == "KAFKA_AHEAD_SAFE"
    assert VerificationReport.model_validate(data) == report
    text = verification_text(report)
    assert text.splitlines()[1] == f"Writers: {EXECUTORS_RECORDED.summary}"
    assert "Next step: Nothing to do: the replay skips the committed partitions and writes the rest." in text


def test_a_report_without_a_writer_judges_by_the_driver_rules() -> None:
    report = run({p: C for p in range(PARTITIONS)}, planned=C)
    assert report.writers == writers_in_use(None, None)
    assert "Writers: driver rules: no spec at hand" in verification_text(report)


# -- over a checkpoint, the repairs and the use cases -------------------------------------------


def checkpoint(tmp_path: Path, record: WritersChoice | None) -> CheckpointReader:
    root = write_checkpoint(tmp_path / "ck", topic=T, partitions=PARTITIONS, query_id=Q, offsets=range(C + 2),
                            commits=range(C + 1))
    reader = CheckpointReader(str(root))
    if record is not None:
        record_writers_choice(reader, record)
    return reader


@pytest.mark.parametrize(
    ("record", "spec", "overall", "source"),
    [
        (choice(Writers.EXECUTORS), None, Verdict.KAFKA_AHEAD_SAFE, WritersSource.RECORDED),
        (choice(Writers.EXECUTORS), Writers.DRIVER, Verdict.KAFKA_AHEAD_SAFE, WritersSource.RECORDED),
        (choice(Writers.DRIVER), Writers.EXECUTORS, Verdict.DIVERGED, WritersSource.RECORDED),
        (None, Writers.EXECUTORS, Verdict.KAFKA_AHEAD_SAFE, WritersSource.SPEC),
        (None, Writers.AUTO, Verdict.DIVERGED, WritersSource.DEFAULT),
    ],
)
def test_verify_checkpoint_reads_the_recorded_choice(
    tmp_path: Path, record: WritersChoice | None, spec: Writers | None, overall: Verdict, source: WritersSource
) -> None:
    report = verify_checkpoint(checkpoint(tmp_path, record), group(MID_BATCH), spec_writers=spec)
    assert (report.overall, report.writers.source) == (overall, source)


def test_a_malformed_writers_record_is_a_checkpoint_error(tmp_path: Path) -> None:
    reader = checkpoint(tmp_path, None)
    (Path(reader.root) / "eos").mkdir()
    (Path(reader.root) / "eos" / "writers.json").write_text('{"writers": "auto"}')
    with pytest.raises(CheckpointError, match=r"writers\.json"):
        verify_checkpoint(reader, group(MID_BATCH))


def test_align_refuses_the_mid_batch_state_because_the_replay_completes_it(tmp_path: Path) -> None:
    reader = checkpoint(tmp_path, choice(Writers.EXECUTORS))
    with pytest.raises(RepairError, match=r"KAFKA_AHEAD_SAFE; batch 4 is already in Kafka on some partitions") as err:
        plan_align(reader, group(MID_BATCH))
    assert err.value.fix is not None and err.value.fix.startswith("Nothing to do: the replay skips the committed")
    forced = plan_align(reader, group(MID_BATCH), force=True)
    (warning,) = forced.warnings
    assert "forced despite KAFKA_AHEAD_SAFE" in warning and "their part of batch 4 a second time" in warning
    assert [row.tp.partition for row in forced.changes] == [0, 2]


def test_align_with_the_spec_saying_executors_and_nothing_recorded_refuses_too(tmp_path: Path) -> None:
    reader = checkpoint(tmp_path, None)
    with pytest.raises(RepairError, match="KAFKA_AHEAD_SAFE"):
        plan_align(reader, group(MID_BATCH), spec_writers=Writers.EXECUTORS)
    # By the driver's rules the same state is DIVERGED: refused as well, for another reason.
    with pytest.raises(RepairError, match="DIVERGED"):
        plan_align(reader, group(MID_BATCH))


class _Scripted(PipelineClients):
    committed: CommittedOffsets

    def committed_offsets(self) -> CommittedOffsets:
        return self.committed

    def offsets_retention(self) -> RetentionReading:
        return RetentionReading(10_080, dt.datetime.now(dt.UTC))


def scripted(tmp_path: Path, writers: str, record: WritersChoice | None) -> _Scripted:
    reader = checkpoint(tmp_path, record)
    spec = PipelineSpec(
        name="orders", kafka={"bootstrap.servers": "localhost:1"}, input_topics=[T], output_topic="orders-out",
        group_id="orders-sink", transactional_id_prefix="orders-eos", checkpoint_location=reader.root,
        writers=writers,
    )
    clients = _Scripted(spec)
    clients.committed = group(MID_BATCH)
    return clients


def test_the_verify_use_case_judges_by_the_spec_when_nothing_is_recorded(tmp_path: Path) -> None:
    result = verify_use_case(scripted(tmp_path, "executors", None))
    assert result.ok and result.report.overall is Verdict.KAFKA_AHEAD_SAFE
    data = result.data()
    assert data["writers"]["source"] == "spec" and data["writers"]["writers"] == "executors"
    assert data["next_step"].startswith("Nothing to do: the replay skips the committed partitions")
    assert "Writers: executors, from the spec" in result_text(result)


def test_the_rewind_use_case_has_nothing_to_rewind_mid_batch(tmp_path: Path) -> None:
    with pytest.raises(RepairError, match="verification names none \\(verdict KAFKA_AHEAD_SAFE\\)") as err:
        rewind(scripted(tmp_path, "auto", choice(Writers.EXECUTORS)))
    assert err.value.fix is not None and "the replay skips the committed partitions" in err.value.fix


@pytest.mark.parametrize(("recorded", "chosen", "switch"), [
    (None, Writers.DRIVER, WritersSwitch.NONE),
    (None, Writers.EXECUTORS, WritersSwitch.NONE),
    (Writers.DRIVER, Writers.DRIVER, WritersSwitch.NONE),
    (Writers.EXECUTORS, Writers.EXECUTORS, WritersSwitch.NONE),
    (Writers.EXECUTORS, Writers.DRIVER, WritersSwitch.FROM_EXECUTORS),
    (Writers.DRIVER, Writers.EXECUTORS, WritersSwitch.FROM_DRIVER),
])
def test_a_run_owes_the_recorded_writer_a_take_over_only_when_it_is_another(recorded, chosen, switch) -> None:
    assert writers_switch(None if recorded is None else choice(recorded), chosen) is switch
