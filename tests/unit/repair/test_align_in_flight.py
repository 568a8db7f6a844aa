"""Align when the batch in flight's offsets may have expired: refused until told whether it was written.

Once the broker deleted the sink group's offsets (``offsets.retention.minutes`` after their commit), an
empty group cannot tell "batch ``C+1`` never committed" from "it committed, then expired" (design notes 55
and 61). Each case is carried through to what the sink then does with the replay of ``C+1``
(:func:`decide_batch` on the committed plan), so a plan that would write the batch twice fails here.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import ExpiredOffsetsError, RepairError
from airflow_provider_eos.core.in_flight_batch import InFlightBatch, parse_in_flight
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.offsets_expiry import RetentionReading
from airflow_provider_eos.core.presentation import align_plan_text
from airflow_provider_eos.core.repair import AlignPlan, plan_align
from airflow_provider_eos.core.sink_protocol import BatchAction, PlannedBatch, decide_batch
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.verification import Verdict, verify_checkpoint
from tests.unit.repair.builders import TP0, TP1, Q, end_offsets, marked, write_checkpoint

WEEK_MINUTES = 10_080
TP2 = TopicPartition("in", 2)
# write_checkpoint dates offsets/N at 1_700_000_000_000 + N ms (2023-11-14): 8 days later the batch in flight
# is past a week's retention, 1 day later it is not.
PLANNED = dt.datetime.fromtimestamp(1_700_000_000, dt.UTC)
EXPIRED = RetentionReading(WEEK_MINUTES, PLANNED + dt.timedelta(days=8))
FRESH = RetentionReading(WEEK_MINUTES, PLANNED + dt.timedelta(days=1))
EMPTY: CommittedOffsets = {TP0: None, TP1: None}


def committed_plan(plan: AlignPlan) -> CommittedOffsets:
    """The group once the plan is committed."""
    return {tp: CommittedOffset(offset, meta) for tp, (offset, meta) in plan.offsets_with_metadata().items()}


def replay(reader: CheckpointReader, batch: int, group: CommittedOffsets, retention: RetentionReading) -> BatchAction:
    """What the sink does with the replay of ``batch`` (offsets/batch kept, as Spark replays it) on ``group``."""
    start = reader.planned_offsets(batch - 1) if batch > 0 else {}
    expiry = retention.expiry_of(batch, reader.batch_metadata(batch))
    planned = PlannedBatch.of(query_id=Q, batch_id=batch, start=start, end=reader.planned_offsets(batch),
                              expiry=expiry)
    return decide_batch(planned, group, "g")


def test_without_an_answer_align_refuses_naming_the_batch_its_input_and_both_ways_on(
    committed5: CheckpointReader,
) -> None:
    for force in (False, True):  # force overrides verdicts and liveness, not a fact only the output topic holds
        with pytest.raises(RepairError) as refused:
            plan_align(committed5, EMPTY, retention=EXPIRED, force=force)
        message, fix = refused.value.message, refused.value.fix or ""
        assert message.startswith("refusing to align: batch 6's offsets may have expired")
        assert 'read in-0, in-1 from input offsets {"in":{"0":600,"1":601}} to {"in":{"0":700,"1":701}}' in message
        assert "--in-flight-batch not-written" in fix and "--in-flight-batch written" in fix
        assert "offsets/5 with marker 5 and the replay writes batch 6" in fix
        assert "offsets/6 with marker 6 and the replay skips batch 6" in fix


def test_written_commits_the_batch_in_flight_with_its_marker_and_the_replay_skips_it(
    committed5: CheckpointReader,
) -> None:
    plan = plan_align(committed5, EMPTY, retention=EXPIRED, in_flight_batch=InFlightBatch.WRITTEN)
    marker = BatchMarker(Q, 6).encode()
    assert plan.batch_id == 6 and plan.expired_batch == 6 and plan.in_flight_batch is InFlightBatch.WRITTEN
    assert plan.offsets_with_metadata() == {TP0: (700, marker), TP1: (701, marker)}
    assert "told batch 6 is in the output topic" in plan.warnings[0]
    assert "Align the sink group to checkpoint batch 6" in align_plan_text(plan)
    group = committed_plan(plan)
    assert verify_checkpoint(committed5, group, retention=EXPIRED).overall is Verdict.KAFKA_AHEAD_SAFE
    assert replay(committed5, 6, group, EXPIRED) is BatchAction.SKIP_REPLAY
    # Executed, the same answer finds nothing left to decide.
    with pytest.raises(RepairError, match="names no batch in flight whose offsets may have expired"):
        plan_align(committed5, group, retention=EXPIRED, in_flight_batch=InFlightBatch.WRITTEN)
    assert plan_align(committed5, group, retention=EXPIRED, force=True).batch_id == 5  # only forced, as before


def test_not_written_aligns_to_the_last_committed_batch_and_the_replay_writes_it(
    committed5: CheckpointReader,
) -> None:
    plan = plan_align(committed5, EMPTY, retention=EXPIRED, in_flight_batch=InFlightBatch.NOT_WRITTEN)
    marker = BatchMarker(Q, 5).encode()
    assert plan.batch_id == 5 and plan.in_flight_batch is InFlightBatch.NOT_WRITTEN
    assert plan.offsets_with_metadata() == {TP0: (600, marker), TP1: (601, marker)}
    group = committed_plan(plan)
    assert verify_checkpoint(committed5, group, retention=EXPIRED).overall is Verdict.IN_SYNC
    assert replay(committed5, 6, group, EXPIRED) is BatchAction.PRODUCE
    written = plan_align(committed5, EMPTY, retention=EXPIRED, in_flight_batch=InFlightBatch.WRITTEN)
    assert plan.fingerprint != written.fingerprint


def test_within_the_retention_the_empty_group_proves_the_batch_in_flight_never_committed(
    committed5: CheckpointReader,
) -> None:
    plan = plan_align(committed5, EMPTY, retention=FRESH)
    assert plan.batch_id == 5 and plan.expired_batch is None and plan.in_flight_batch is None
    with pytest.raises(RepairError, match=r"in_flight_batch 'not-written' was given, but verification names no"):
        plan_align(committed5, EMPTY, retention=FRESH, in_flight_batch=InFlightBatch.NOT_WRITTEN)


def test_no_batch_in_flight_needs_no_answer(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(6), commits=range(6))
    assert plan_align(CheckpointReader(location), EMPTY, retention=EXPIRED).batch_id == 5


def test_the_first_batch_reaches_the_same_refusal_and_not_written_is_a_rewind(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=[0], commits=[])
    reader = CheckpointReader(location)
    with pytest.raises(RepairError, match=r"batch 0's offsets may have expired") as refused:
        plan_align(reader, EMPTY, retention=EXPIRED)
    assert "`eos repair rewind --spec FILE --to-batch -1`" in (refused.value.fix or "")
    with pytest.raises(RepairError, match=r"not-written: .*it is the first batch") as rewind:
        plan_align(reader, EMPTY, retention=EXPIRED, in_flight_batch=InFlightBatch.NOT_WRITTEN)
    assert "--to-batch -1" in (rewind.value.fix or "")
    # Without the rewind the sink refuses the replay whatever the group holds: nothing is what it holds.
    with pytest.raises(ExpiredOffsetsError):
        replay(reader, 0, EMPTY, EXPIRED)
    written = plan_align(reader, EMPTY, retention=EXPIRED, in_flight_batch="written")
    assert written.offsets_with_metadata() == {TP0: (100, BatchMarker(Q, 0).encode()),
                                                TP1: (101, BatchMarker(Q, 0).encode())}
    assert replay(reader, 0, committed_plan(written), EXPIRED) is BatchAction.SKIP_REPLAY


def add_partition(location: str, batch: int, tp: TopicPartition, offset: int) -> None:
    """A partition new in ``batch``: ``offsets/batch`` lists it, earlier batches do not."""
    path = Path(location) / "offsets" / str(batch)
    version, metadata, source = path.read_text().split("\n")
    ends = json.loads(source)
    ends[tp.topic][str(tp.partition)] = offset
    path.write_text("\n".join([version, metadata, json.dumps(ends)]))
    (path.parent / f".{batch}.crc").unlink(missing_ok=True)


@pytest.mark.parametrize("group", [
    pytest.param({**EMPTY, TP2: None}, id="every-offset-expired"),
    pytest.param({**marked(end_offsets(5), 5), TP2: None}, id="only-the-new-partition-holds-nothing"),
])
def test_a_partition_new_in_the_batch_in_flight_reaches_the_same_refusal(
    committed5: CheckpointReader, group: CommittedOffsets,
) -> None:
    add_partition(str(committed5.root), 6, TP2, 7)
    with pytest.raises(RepairError, match=r"batch 6's offsets may have expired") as refused:
        plan_align(committed5, group, retention=EXPIRED)
    assert "(in-2 from their earliest)" in refused.value.message
    assert "`eos repair rewind --spec FILE --to-batch 5`" in (refused.value.fix or "")
    with pytest.raises(RepairError, match=r"in-2 is new in it \(not in offsets/5\)"):
        plan_align(committed5, group, retention=EXPIRED, in_flight_batch=InFlightBatch.NOT_WRITTEN)
    written = plan_align(committed5, group, retention=EXPIRED, in_flight_batch=InFlightBatch.WRITTEN)
    assert set(written.offsets_with_metadata()) == {TP0, TP1, TP2}
    assert replay(committed5, 6, committed_plan(written), EXPIRED) is BatchAction.SKIP_REPLAY


@pytest.mark.parametrize(("value", "answer"), [
    (None, None), ("", None), ("None", None), (" Written ", InFlightBatch.WRITTEN),
    ("not-written", InFlightBatch.NOT_WRITTEN), ("not_written", InFlightBatch.NOT_WRITTEN),
    (InFlightBatch.WRITTEN, InFlightBatch.WRITTEN),
])
def test_the_answer_is_read_from_a_flag_an_argument_or_the_form(value: object, answer: InFlightBatch | None) -> None:
    assert parse_in_flight(value) is answer  # type: ignore[arg-type]


def test_an_answer_align_does_not_know_is_refused_naming_it() -> None:
    with pytest.raises(RepairError, match=r"in_flight_batch is 'yes'") as refused:
        parse_in_flight("yes")
    assert "'written', 'not-written'" in (refused.value.fix or "")
