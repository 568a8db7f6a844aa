"""The rules of one partition's state before the sink writes batch ``N`` (core/sink_protocol.py).

Tables of cases for each rule alone and for the state they give together; the decisions built
on them (produce, skip, refuse, and their messages) are tests/unit/test_sink_protocol.py's.
Batch 5 of query ``Q`` reads partition ``orders-0`` from 100 to 200; ``orders-1`` is new in it.
"""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset
from airflow_provider_eos.core.sink_protocol import (
    PlannedBatch,
    _classify,
    _State,
    committed_by_previous_batch,
    committed_by_this_batch,
    nothing_committed_before,
)
from airflow_provider_eos.core.topic_partition import TopicPartition

Q = "5f0c2b7e-9a41-4c3e-8d2a-1b6f3e9c7a10"
OTHER_Q = "a3e1d9c4-7b2f-4e08-9c51-6d4f2a8b0e37"
TP = TopicPartition("orders", 0)
NEW = TopicPartition("orders", 1)

BATCH = PlannedBatch.of(query_id=Q, batch_id=5, start={TP: 100}, end={TP: 200, NEW: 30})
FIRST = PlannedBatch.of(query_id=Q, batch_id=0, start={TP: 0}, end={TP: 50})
# A checkpoint whose first batch is not 0 (the caller says so).
FIRST_LATER = PlannedBatch.of(query_id=Q, batch_id=3, start={TP: 0}, end={TP: 50}, is_first_batch=True)


def at(offset: int, batch: int, query_id: str = Q) -> CommittedOffset:
    return CommittedOffset(offset, BatchMarker(query_id, batch).encode())


# (id, rule, batch, partition, committed, applies)
RULES = [
    ("nothing-before-first-batch", nothing_committed_before, FIRST, TP, None, True),
    ("nothing-before-declared-first-batch", nothing_committed_before, FIRST_LATER, TP, None, True),
    ("nothing-on-a-new-partition", nothing_committed_before, BATCH, NEW, None, True),
    ("nothing-on-a-later-batch", nothing_committed_before, BATCH, TP, None, False),
    ("something-before-first-batch", nothing_committed_before, FIRST, TP, at(0, 0), False),
    ("end-with-this-marker", committed_by_this_batch, BATCH, TP, at(200, 5), True),
    ("new-partition-end-with-this-marker", committed_by_this_batch, BATCH, NEW, at(30, 5), True),
    ("end-with-previous-marker", committed_by_this_batch, BATCH, TP, at(200, 4), False),
    ("other-offset-with-this-marker", committed_by_this_batch, BATCH, TP, at(199, 5), False),
    ("end-with-other-query-marker", committed_by_this_batch, BATCH, TP, at(200, 5, OTHER_Q), False),
    ("end-without-marker", committed_by_this_batch, BATCH, TP, CommittedOffset(200), False),
    ("end-with-garbage", committed_by_this_batch, BATCH, TP, CommittedOffset(200, "not a marker"), False),
    ("nothing-is-not-this-batch", committed_by_this_batch, BATCH, TP, None, False),
    ("start-with-previous-marker", committed_by_previous_batch, BATCH, TP, at(100, 4), True),
    ("start-with-older-marker", committed_by_previous_batch, BATCH, TP, at(100, 3), False),
    ("other-offset-with-previous-marker", committed_by_previous_batch, BATCH, TP, at(101, 4), False),
    ("start-with-other-query-marker", committed_by_previous_batch, BATCH, TP, at(100, 4, OTHER_Q), False),
    ("new-partition-has-no-previous-batch", committed_by_previous_batch, BATCH, NEW, at(0, 4), False),
    ("first-batch-has-no-previous-batch", committed_by_previous_batch, FIRST, TP, at(0, 0), False),
    ("nothing-is-not-the-previous-batch", committed_by_previous_batch, BATCH, TP, None, False),
]


@pytest.mark.parametrize(
    ("rule", "batch", "tp", "committed", "applies"), [row[1:] for row in RULES], ids=[row[0] for row in RULES]
)
def test_each_rule_recognises_only_its_state(rule, batch: PlannedBatch, tp: TopicPartition,
                                             committed: CommittedOffset | None, applies: bool) -> None:
    assert rule(batch, tp, committed) is applies


# (id, batch, partition, committed, state)
STATES = [
    ("first-batch-nothing-committed", FIRST, TP, None, _State.AT_START),
    ("first-batch-replayed", FIRST, TP, at(50, 0), _State.AT_END),
    ("previous-batch-committed", BATCH, TP, at(100, 4), _State.AT_START),
    ("this-batch-committed", BATCH, TP, at(200, 5), _State.AT_END),
    ("new-partition-nothing-committed", BATCH, NEW, None, _State.AT_START),
    ("group-emptied-on-a-later-batch", BATCH, TP, None, _State.INCONSISTENT),
    ("batch-skipped", BATCH, TP, at(100, 3), _State.INCONSISTENT),
    ("offset-moved-by-hand", BATCH, TP, at(150, 4), _State.INCONSISTENT),
    ("other-query", BATCH, TP, at(200, 5, OTHER_Q), _State.INCONSISTENT),
    ("no-marker", BATCH, TP, CommittedOffset(100), _State.INCONSISTENT),
]


@pytest.mark.parametrize(
    ("batch", "tp", "committed", "state"), [row[1:] for row in STATES], ids=[row[0] for row in STATES]
)
def test_the_rules_give_each_partition_one_state(batch: PlannedBatch, tp: TopicPartition,
                                                 committed: CommittedOffset | None, state: _State) -> None:
    assert _classify(batch, tp, committed).state is state


@pytest.mark.parametrize(
    ("batch", "tp", "before"),
    [
        (FIRST, TP, f"nothing committed (first batch of query {Q})"),
        (BATCH, NEW, "nothing committed (partition new in this batch)"),
        (BATCH, TP, f"offset 100 with marker {BatchMarker(Q, 4).encode()}"),
    ],
    ids=["first-batch", "new-partition", "later-batch"],
)
def test_the_expected_states_name_the_before_state_and_the_replay(batch: PlannedBatch, tp: TopicPartition,
                                                                  before: str) -> None:
    replay = f"offset {batch.end[tp]} with marker {BatchMarker(Q, batch.batch_id).encode()}"
    assert batch.expected(tp) == f"{before}, or {replay} (batch {batch.batch_id} already committed)"


@pytest.mark.parametrize(("batch_id", "given", "first"), [(0, None, True), (3, None, False), (3, True, True),
                                                          (0, False, False)])
def test_the_first_batch_defaults_to_batch_zero(batch_id: int, given: bool | None, first: bool) -> None:
    batch = PlannedBatch.of(query_id=Q, batch_id=batch_id, start={}, end={TP: 1}, is_first_batch=given)
    assert batch.is_first_batch is first
