"""A group that holds nothing is "nothing committed" only while no earlier attempt's commit can have expired.

The pure decision (:mod:`airflow_provider_eos.core.offsets_expiry`, docs/design-notes.md note 55) and what
the sink protocol makes of it for both writers: the driver writer's :func:`decide_batch` and the executor
writers' :func:`decide_partition`, on the first batch, a later batch and a partition new in a batch;
and verification's verdict on the same states.
"""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_eos.core.driver_lease import CLOCK_SKEW_MARGIN
from airflow_provider_eos.core.errors import ExpiredOffsetsError, InconsistentOffsetsError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset
from airflow_provider_eos.core.offsets_expiry import OffsetsExpiry, RetentionReading
from airflow_provider_eos.core.sink_protocol import BatchAction, PlannedBatch, decide_batch, decide_partition
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.verification import Verdict, verify

Q = "5f0c2b7e-9a41-4c3e-8d2a-1b6f3e9c7a10"
P0, P1 = TopicPartition("orders", 0), TopicPartition("orders", 1)
NOW = dt.datetime(2026, 12, 6, 12, 0, tzinfo=dt.UTC)
WEEK_MINUTES = 10_080
WEEK = dt.timedelta(minutes=WEEK_MINUTES)


def planned(ago: dt.timedelta, batch_id: int = 0, retention_minutes: int | None = WEEK_MINUTES) -> OffsetsExpiry:
    stamp = int((NOW - ago).timestamp() * 1000)
    return RetentionReading(retention_minutes, NOW, None if retention_minutes else "refused").expiry_of(
        batch_id, {"batchTimestampMs": stamp})


@pytest.mark.parametrize(("ago", "may_have_expired"), [
    (dt.timedelta(0), False),
    (dt.timedelta(days=6), False),
    # The clocks of the broker and of two drivers may differ: the margin counts against the absence.
    (WEEK - CLOCK_SKEW_MARGIN - dt.timedelta(seconds=1), False),
    (WEEK - CLOCK_SKEW_MARGIN, True),
    (WEEK, True),
    (dt.timedelta(days=30), True),
])
def test_offsets_may_have_expired_once_the_batch_is_as_old_as_the_retention(ago, may_have_expired):
    assert planned(ago).may_have_expired is may_have_expired


def test_an_unknown_retention_is_kafkas_lowest_and_an_unknown_planning_time_may_have_expired():
    # A broker keeps offsets at least a minute (atLeast(1)): a first batch planned just now is told apart
    # without the retention (a principal without DescribeConfigs still starts a new pipeline); past it, not.
    assert not planned(dt.timedelta(seconds=1), retention_minutes=None).may_have_expired
    assert not planned(dt.timedelta(seconds=49), retention_minutes=None).may_have_expired
    assert planned(dt.timedelta(seconds=50), retention_minutes=None).may_have_expired  # 1 minute less the skew
    assert planned(dt.timedelta(hours=2), retention_minutes=None).may_have_expired
    undated = RetentionReading(WEEK_MINUTES, NOW).expiry_of(0, {"batchWatermarkMs": 0})
    assert undated.planned_at == dt.datetime.fromtimestamp(0, dt.UTC) and undated.may_have_expired
    assert "could not be read (refused)" in planned(dt.timedelta(hours=2), retention_minutes=None).describe()


def first_batch(expiry: OffsetsExpiry | None) -> PlannedBatch:
    return PlannedBatch.of(query_id=Q, batch_id=0, start={P0: 0, P1: 0}, end={P0: 20, P1: 21}, expiry=expiry)


def test_the_first_batch_produces_on_an_empty_group_planned_within_the_retention():
    assert decide_batch(first_batch(planned(dt.timedelta(days=1))), {}, "g") is BatchAction.PRODUCE
    assert decide_partition(P0, first_batch(planned(dt.timedelta(days=1))), None, "g") is BatchAction.PRODUCE


@pytest.mark.parametrize("decide", ["driver", "executors"])
def test_the_first_batch_is_refused_on_an_empty_group_planned_beyond_the_retention(decide):
    batch = first_batch(planned(dt.timedelta(days=8)))
    with pytest.raises(ExpiredOffsetsError) as refused:
        if decide == "driver":
            decide_batch(batch, {P0: None, P1: None}, "orders-sink")
        else:
            decide_partition(P0, batch, None, "orders-sink")
    error = refused.value
    listed = "orders-0, orders-1" if decide == "driver" else "orders-0"
    assert f"sink group 'orders-sink' holds nothing for {listed} in batch 0 of query {Q}" in error.message
    assert "planned 8.0 days ago" in error.message and "offsets.retention.minutes 10080 (7.0 days)" in error.message
    assert error.fix is not None
    assert "--to-batch -1" in error.fix and "starting_offsets" in error.fix
    assert '{"orders":{"0":20' in error.fix  # the end offsets to look for and, if written, to start from
    assert isinstance(error, InconsistentOffsetsError)  # the sink's refusals stay one family


def test_a_committed_replay_is_skipped_however_old_the_batch():
    batch = first_batch(planned(dt.timedelta(days=30)))
    done = {tp: CommittedOffset(end, BatchMarker(Q, 0).encode()) for tp, end in batch.end.items()}
    assert decide_batch(batch, done, "g") is BatchAction.SKIP_REPLAY
    assert decide_partition(P1, batch, done[P1], "g") is BatchAction.SKIP_REPLAY


def test_executor_writers_refuse_only_the_partition_that_holds_nothing():
    batch = first_batch(planned(dt.timedelta(days=8)))
    assert decide_partition(P1, batch, CommittedOffset(21, BatchMarker(Q, 0).encode()), "g") is BatchAction.SKIP_REPLAY
    with pytest.raises(ExpiredOffsetsError):
        decide_partition(P0, batch, None, "g")


def test_a_later_batch_refused_an_empty_group_before_and_still_does_as_inconsistent():
    later = PlannedBatch.of(query_id=Q, batch_id=5, start={P0: 40}, end={P0: 50},
                            expiry=planned(dt.timedelta(days=8), 5))
    with pytest.raises(InconsistentOffsetsError) as refused:
        decide_batch(later, {}, "g")
    assert not isinstance(refused.value, ExpiredOffsetsError)
    assert "expected offset 40 with marker" in refused.value.message


def test_a_partition_new_in_a_later_batch_follows_the_same_rule():
    def batch(days: float) -> PlannedBatch:
        return PlannedBatch.of(query_id=Q, batch_id=5, start={P0: 40}, end={P0: 50, P1: 7},
                               expiry=planned(dt.timedelta(days=days), 5))

    at_start = {P0: CommittedOffset(40, BatchMarker(Q, 4).encode()), P1: None}
    assert decide_batch(batch(1), at_start, "g") is BatchAction.PRODUCE
    with pytest.raises(ExpiredOffsetsError) as refused:
        decide_batch(batch(8), at_start, "g")
    assert "holds nothing for orders-1 in batch 5" in refused.value.message and "--to-batch 4" in refused.value.fix


def test_only_a_batch_that_takes_an_empty_group_for_its_start_needs_the_expiry():
    assert first_batch(None).accepts_nothing_committed
    assert PlannedBatch.of(query_id=Q, batch_id=3, start={P0: 1}, end={P0: 2, P1: 1}).accepts_nothing_committed
    assert not PlannedBatch.of(query_id=Q, batch_id=3, start={P0: 1}, end={P0: 2}).accepts_nothing_committed


def test_an_inconsistent_partition_beside_a_possibly_expired_one_names_both():
    batch = first_batch(planned(dt.timedelta(days=8)))
    with pytest.raises(InconsistentOffsetsError) as refused:
        decide_batch(batch, {P0: None, P1: CommittedOffset(3, BatchMarker(Q, 0).encode())}, "g")
    assert not isinstance(refused.value, ExpiredOffsetsError)
    assert "2 of 2 partition(s) inconsistent" in refused.value.message
    assert "orders-0: expected nothing committed (first batch of query" in refused.value.message
    assert "found nothing committed, but batch 0 was planned 8.0 days ago" in refused.value.message


@pytest.mark.parametrize(("days", "overall"), [(1, Verdict.IN_SYNC), (8, Verdict.NO_MARKER)])
def test_verify_says_an_empty_group_proves_nothing_once_the_batch_in_flight_is_past_the_retention(days, overall):
    report = verify(query_id=Q, last_committed=None, last_planned=0, planned_offsets={0: {P0: 20, P1: 21}},
                    committed={P0: None, P1: None}, expiry=planned(dt.timedelta(days=days)))
    assert report.overall is overall
    if overall is Verdict.IN_SYNC:
        assert report.expired_batch is None and report.next_step.startswith("Nothing to do")
        return
    assert report.expired_batch == 0 and not report.ok
    assert all("planned 8.0 days ago" in row.detail for row in report.rows)
    assert "Do not restart as is" in report.next_step and "--to-batch -1" in report.next_step


def test_verify_names_a_partition_new_in_the_batch_in_flight_past_the_retention():
    at_c = CommittedOffset(40, BatchMarker(Q, 4).encode())
    report = verify(query_id=Q, last_committed=4, last_planned=5, planned_offsets={4: {P0: 40}, 5: {P0: 50, P1: 7}},
                    committed={P0: at_c, P1: None}, expiry=planned(dt.timedelta(days=8), 5))
    assert {row.tp: row.verdict for row in report.rows} == {P0: Verdict.IN_SYNC, P1: Verdict.NO_MARKER}
    assert report.expired_batch == 5 and "--to-batch 4" in report.next_step


@pytest.mark.parametrize(("days", "expired"), [(1, None), (8, 5)])
def test_verify_on_a_later_batch_whose_every_offset_expired_asks_whether_the_batch_in_flight_was_written(
    days, expired,
):
    # commits/4, offsets/5 planned, the group empty: within the retention batch 5 cannot have committed, so
    # aligning to batch 4 is the repair; beyond it, batch 5 may have committed and expired (note 61).
    report = verify(query_id=Q, last_committed=4, last_planned=5, planned_offsets={4: {P0: 40}, 5: {P0: 50}},
                    committed={P0: None}, expiry=planned(dt.timedelta(days=days), 5))
    assert report.overall is Verdict.NO_MARKER and report.expired_batch == expired
    if expired is None:
        assert "eos repair align --spec FILE" in report.next_step and "--in-flight-batch" not in report.next_step
        return
    assert "planned 8.0 days ago" in report.rows[0].detail
    assert "align will not guess" in report.next_step
    assert "`eos repair align --spec FILE --in-flight-batch not-written`" in report.next_step
    assert "`eos repair align --spec FILE --in-flight-batch written`" in report.next_step
    assert "--to-batch" not in report.next_step
