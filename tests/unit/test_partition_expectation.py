"""The exact states a comparing writer (the JVM executor writer) is given agree with ``decide_partition``.

Over a grid of committed values (nothing, start or end offsets or others, markers of this batch,
the previous one, another batch or query, a zero-padded batch, garbage, no metadata) for the
first batch, a later batch and a partition new in the batch, each planned within and beyond the
brokers' offsets.retention.minutes: the expectation's match and the protocol's decision are the
same, an inconsistency or a possible expiry included (``None`` against the error).
"""

from __future__ import annotations

import datetime as dt
import itertools

import pytest

from airflow_provider_eos.core.errors import InconsistentOffsetsError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset
from airflow_provider_eos.core.offsets_expiry import OffsetsExpiry
from airflow_provider_eos.core.sink_protocol import BatchAction, PlannedBatch, decide_partition, partition_expectation
from airflow_provider_eos.core.topic_partition import TopicPartition

Q = "5f0c2b7e-9a41-4c3e-8d2a-1b6f3e9c7a10"
OTHER_Q = "a3e1d9c4-7b2f-4e08-9c51-6d4f2a8b0e37"
TP = TopicPartition("orders", 0)
NEW = TopicPartition("orders", 1)
NOW = dt.datetime(2026, 12, 6, 12, 0, tzinfo=dt.UTC)


def _expiry(batch_id: int, days_ago: float) -> OffsetsExpiry:
    """Batch ``batch_id`` planned ``days_ago`` days ago, against Kafka's default retention (7 days)."""
    return OffsetsExpiry(batch_id, NOW - dt.timedelta(days=days_ago), NOW, 10_080)


def _metadata(batch_id: int) -> list[str]:
    found = ["", "not a marker", f"eos2:{Q}:{batch_id}", f"eos1:{Q}:0{batch_id}", f"eos1:{Q}:{batch_id} "]
    for n in {batch_id, batch_id - 1, batch_id + 1, 0}:
        if n >= 0:
            found += [BatchMarker(Q, n).encode(), BatchMarker(OTHER_Q, n).encode()]
    return found


def _committed(batch_id: int, offsets: list[int]) -> list[CommittedOffset | None]:
    return [None, *(CommittedOffset(o, m) for o, m in itertools.product(offsets, _metadata(batch_id)))]


def _protocol(tp: TopicPartition, batch_id: int, start: dict, end: dict, committed,
              expiry: OffsetsExpiry | None = None) -> BatchAction | None:
    try:
        return decide_partition(tp, PlannedBatch.of(query_id=Q, batch_id=batch_id, start=start, end=end,
                                                    expiry=expiry), committed, "g")
    except InconsistentOffsetsError:
        return None


@pytest.mark.parametrize(("batch_id", "tp", "start", "end"), [
    (0, TP, {TP: 0}, {TP: 50}),
    (0, TP, {TP: 30}, {TP: 30}),
    (7, TP, {TP: 100}, {TP: 180}),
    (7, TP, {TP: 100}, {TP: 100}),
    (7, NEW, {TP: 100}, {TP: 180, NEW: 20}),
    (1, TP, {TP: 0}, {TP: 9}),
])
@pytest.mark.parametrize("planned_days_ago", [None, 1, 8])
def test_the_expectation_decides_as_the_protocol(batch_id, tp, start, end, planned_days_ago):
    expiry = None if planned_days_ago is None else _expiry(batch_id, planned_days_ago)
    expected = partition_expectation(tp, query_id=Q, batch_id=batch_id, start=start, end=end, expiry=expiry)
    offsets = sorted({start.get(tp, 0), end[tp], end[tp] + 1, max(0, start.get(tp, 0) - 1)})
    cases = _committed(batch_id, offsets)
    for committed in cases:
        assert expected.decide(committed) == _protocol(tp, batch_id, start, end, committed, expiry), committed
    # The grid reaches every outcome where the protocol has it: beyond the retention, nothing committed
    # no longer produces, and that is the first batch's and a new partition's only way to.
    outcomes = {expected.decide(c) for c in cases}
    assert {BatchAction.SKIP_REPLAY, None} <= outcomes
    only_by_absence = batch_id == 0 or tp not in start
    assert (BatchAction.PRODUCE in outcomes) is not (only_by_absence and planned_days_ago == 8)


def test_the_first_batch_and_a_new_partition_produce_on_nothing_committed_only():
    first = partition_expectation(TP, query_id=Q, batch_id=0, start={TP: 0}, end={TP: 5})
    assert (first.produce_at, first.produce_when_nothing_committed) == (None, True)
    new = partition_expectation(NEW, query_id=Q, batch_id=4, start={TP: 0}, end={TP: 5, NEW: 3})
    assert (new.produce_at, new.produce_when_nothing_committed) == (None, True)
    later = partition_expectation(TP, query_id=Q, batch_id=4, start={TP: 2}, end={TP: 5})
    assert later.produce_at == CommittedOffset(2, BatchMarker(Q, 3).encode())
    assert not later.produce_when_nothing_committed
    assert later.skip_at == CommittedOffset(5, BatchMarker(Q, 4).encode())
