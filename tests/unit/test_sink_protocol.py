"""The sink's per-batch decision: produce, skip a replay, or refuse an inconsistency."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.errors import InconsistentOffsetsError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.sink_protocol import (
    BatchAction,
    PlannedBatch,
    decide_batch,
    executor_batch_action,
    offsets_to_commit,
    task_committed_in_this_run,
)
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition

Q = "5f0c2b7e-9a41-4c3e-8d2a-1b6f3e9c7a10"
OTHER_Q = "a3e1d9c4-7b2f-4e08-9c51-6d4f2a8b0e37"
GROUP = "orders-eos-sink"
A0 = TopicPartition("orders.v1-raw", 0)
A1 = TopicPartition("orders.v1-raw", 1)
B0 = TopicPartition("payments", 0)

START: OffsetMap = {A0: 100, A1: 100, B0: 40}
END: OffsetMap = {A0: 200, A1: 180, B0: 40}


def marked(offset: int, batch_id: int, query_id: str = Q) -> CommittedOffset:
    return CommittedOffset(offset, BatchMarker(query_id, batch_id).encode())


def decide(
    committed: CommittedOffsets,
    *,
    batch_id: int = 5,
    start: OffsetMap = START,
    end: OffsetMap = END,
    is_first_batch: bool | None = None,
) -> BatchAction:
    planned = PlannedBatch.of(query_id=Q, batch_id=batch_id, start=start, end=end, is_first_batch=is_first_batch)
    return decide_batch(planned, committed, GROUP)


def inconsistent(committed: CommittedOffsets, **kwargs: object) -> str:
    with pytest.raises(InconsistentOffsetsError) as info:
        decide(committed, **kwargs)  # type: ignore[arg-type]
    assert "eos verify" in info.value.fix
    assert "VerifyCommittedOffsetsOperator" in info.value.fix
    assert "eos repair" in info.value.fix
    assert GROUP in info.value.fix
    return str(info.value)


# -- the two legitimate cases ------------------------------------------------------------------


def test_previous_batch_committed_produces() -> None:
    committed = {tp: marked(START[tp], 4) for tp in START}
    assert decide(committed) is BatchAction.PRODUCE


def test_this_batch_committed_skips_replay() -> None:
    committed = {tp: marked(END[tp], 5) for tp in END}
    assert decide(committed) is BatchAction.SKIP_REPLAY


def test_first_batch_with_nothing_committed_produces() -> None:
    assert decide({}, batch_id=0) is BatchAction.PRODUCE
    assert decide(dict.fromkeys(END), batch_id=0) is BatchAction.PRODUCE


def test_first_batch_replay_skips() -> None:
    committed = {tp: marked(END[tp], 0) for tp in END}
    assert decide(committed, batch_id=0) is BatchAction.SKIP_REPLAY


def test_is_first_batch_defaults_to_batch_zero_but_can_be_given() -> None:
    # A caller that knows better (e.g. a checkpoint whose first batch is not 0) can say so.
    assert decide({}, batch_id=3, is_first_batch=True) is BatchAction.PRODUCE
    message = inconsistent({}, batch_id=3)
    assert "nothing committed" in message


def test_no_data_batch_with_equal_start_and_end() -> None:
    # Stateful queries run batches without new input to close windows: start == end.
    committed = {tp: marked(END[tp], 5) for tp in END}
    assert decide(committed, batch_id=6, start=END, end=END) is BatchAction.PRODUCE
    committed = {tp: marked(END[tp], 6) for tp in END}
    assert decide(committed, batch_id=6, start=END, end=END) is BatchAction.SKIP_REPLAY


def test_partition_added_between_batches_may_have_nothing_committed() -> None:
    new = TopicPartition("payments", 1)
    end = {**END, new: 12}
    committed: CommittedOffsets = {tp: marked(START[tp], 4) for tp in START}
    committed[new] = None
    assert decide(committed, end=end) is BatchAction.PRODUCE
    # ... and on the replay it carries marker N like the others.
    committed = {tp: marked(end[tp], 5) for tp in end}
    assert decide(committed, end=end) is BatchAction.SKIP_REPLAY


def test_extra_committed_partitions_outside_end_are_ignored() -> None:
    committed = {tp: marked(START[tp], 4) for tp in START}
    committed[TopicPartition("unrelated", 0)] = CommittedOffset(1, "junk")
    assert decide(committed) is BatchAction.PRODUCE


# -- inconsistencies ---------------------------------------------------------------------------


def test_group_behind_names_partition_expected_and_found() -> None:
    committed = {tp: marked(START[tp], 4) for tp in START}
    committed[A1] = marked(50, 3)
    message = inconsistent(committed)
    assert "orders.v1-raw-1" in message
    assert f"offset 100 with marker eos1:{Q}:4" in message
    assert f"offset 180 with marker eos1:{Q}:5" in message
    assert f"found offset 50 (marker eos1:{Q}:3)" in message
    assert "1 of 3 partition(s)" in message
    assert "orders.v1-raw-0" not in message.split("inconsistent:")[1]


def test_right_marker_wrong_offset() -> None:
    committed = {tp: marked(END[tp], 5) for tp in END}
    committed[A0] = marked(199, 5)
    message = inconsistent(committed)
    assert "orders.v1-raw-0" in message
    assert "found offset 199" in message


def test_previous_marker_wrong_offset() -> None:
    committed = {tp: marked(START[tp], 4) for tp in START}
    committed[B0] = marked(41, 4)
    assert "found offset 41" in inconsistent(committed)


def test_group_ahead_by_more_than_one_batch() -> None:
    committed = {tp: marked(END[tp] + 10, 6) for tp in END}
    message = inconsistent(committed)
    assert f"marker eos1:{Q}:6" in message
    assert "3 of 3 partition(s)" in message


def test_foreign_query_id() -> None:
    committed = {tp: marked(START[tp], 4, OTHER_Q) for tp in START}
    message = inconsistent(committed)
    assert OTHER_Q in message


def test_nothing_committed_after_first_batch() -> None:
    message = inconsistent({}, batch_id=5)
    assert "found nothing committed" in message
    assert "sink group 'orders-eos-sink'" in message


def test_first_batch_but_group_has_offsets_without_marker() -> None:
    committed = {tp: CommittedOffset(END[tp], "") for tp in END}
    message = inconsistent(committed, batch_id=0)
    assert "(no marker)" in message


def test_unreadable_metadata_is_reported_not_raised_as_marker_error() -> None:
    committed = {tp: marked(START[tp], 4) for tp in START}
    committed[A0] = CommittedOffset(100, "set by kafka-consumer-groups")
    message = inconsistent(committed)
    assert "'set by kafka-consumer-groups'" in message


def test_mixed_batches_is_inconsistent() -> None:
    committed = {A0: marked(END[A0], 5), A1: marked(START[A1], 4), B0: marked(START[B0], 4)}
    message = inconsistent(committed)
    assert "split" in message
    assert "atomically" in message
    assert "orders.v1-raw-0" in message and "orders.v1-raw-1" in message


def test_new_partition_with_unexpected_commit() -> None:
    new = TopicPartition("payments", 1)
    end = {**END, new: 12}
    committed: CommittedOffsets = {tp: marked(START[tp], 4) for tp in START}
    committed[new] = CommittedOffset(3, "")
    message = inconsistent(committed, end=end)
    assert "payments-1" in message
    assert "partition new in this batch" in message


def test_empty_end_is_refused() -> None:
    with pytest.raises(InconsistentOffsetsError, match="no input partitions"):
        decide({}, end={})


# -- what the sink commits ---------------------------------------------------------------------


def test_offsets_to_commit() -> None:
    result = offsets_to_commit(Q, 5, END)
    assert result == {A0: (200, f"eos1:{Q}:5"), A1: (180, f"eos1:{Q}:5"), B0: (40, f"eos1:{Q}:5")}
    assert list(result) == sorted(END)


def test_commit_then_decide_is_a_replay() -> None:
    # What the sink commits for batch N is exactly what makes the replay of N skip and N+1 proceed.
    committed = {tp: CommittedOffset(o, m) for tp, (o, m) in offsets_to_commit(Q, 5, END).items()}
    assert decide(committed, batch_id=5) is BatchAction.SKIP_REPLAY
    later = {A0: 250, A1: 180, B0: 60}
    assert decide(committed, batch_id=6, start=END, end=later) is BatchAction.PRODUCE


@pytest.mark.parametrize(("action", "attempt", "committed"), [
    ("produce", 0, True),
    ("produce", 2, True),
    # A first attempt finding marker N: a replay, committed before this run.
    ("skip_replay", 0, False),
    # A retry finding marker N: an earlier attempt of this run committed, then died before reporting.
    ("skip_replay", 1, True),
])
def test_a_retry_finding_marker_n_is_this_runs_commit(action: str, attempt: int, committed: bool) -> None:
    assert task_committed_in_this_run(action, attempt) is committed


def test_an_executor_batch_whose_only_task_is_a_retry_finding_marker_n_was_produced() -> None:
    reports = [{"action": "skip_replay", "attempt": 1}]
    tasks_committed = sum(task_committed_in_this_run(r["action"], r["attempt"]) for r in reports)
    assert executor_batch_action(tasks_committed, 0) is BatchAction.PRODUCE
    assert executor_batch_action(0, 0) is BatchAction.SKIP_REPLAY
    assert executor_batch_action(0, 1) is BatchAction.PRODUCE
