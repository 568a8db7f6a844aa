"""Aligning the sink group to the checkpoint: offsets/C with marker C, refused where it loses or duplicates."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset
from airflow_provider_eos.core.presentation import align_plan_text
from airflow_provider_eos.core.repair import (
    AlignPlan,
    AlignRow,
    plan_align,
)
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.verification import Verdict, verify_checkpoint
from tests.unit.repair.builders import (
    TP0,
    TP1,
    Q,
    end_offsets,
    marked,
    write_checkpoint,
)


def test_align_on_no_marker_targets_offsets_of_the_last_committed_batch(committed5: CheckpointReader) -> None:
    plan = plan_align(committed5, {TP0: None, TP1: CommittedOffset(42, "")})
    marker = BatchMarker(Q, 5).encode()
    assert plan.verdict is Verdict.NO_MARKER
    assert not plan.is_noop and len(plan.changes) == 2
    assert plan.offsets_with_metadata() == {TP0: (600, marker), TP1: (601, marker)}
    rows = {row.tp: row for row in plan.rows}
    assert (rows[TP0].before_offset, rows[TP0].before_metadata) == (None, None)
    assert (rows[TP1].before_offset, rows[TP1].before_metadata) == (42, "")
    data = json.loads(json.dumps(plan.to_dict()))
    assert data["changes"] == 2 and data["rows"][1]["before_offset"] == 42
    text = align_plan_text(plan)
    assert "2 of 2 partition(s) change" in text
    assert any(line.split()[:5] == ["in-1", "42", '""', "601", marker] for line in text.splitlines())


def test_align_is_a_noop_when_in_sync(committed5: CheckpointReader) -> None:
    plan = plan_align(committed5, marked(end_offsets(5), 5))
    assert plan.verdict is Verdict.IN_SYNC
    assert plan.is_noop and plan.changes == ()
    assert "nothing to do" in align_plan_text(plan)


def test_align_after_committing_the_plan_is_a_noop(committed5: CheckpointReader) -> None:
    plan = plan_align(committed5, {TP0: None, TP1: None})
    group = {tp: CommittedOffset(offset, meta) for tp, (offset, meta) in plan.offsets_with_metadata().items()}
    assert verify_checkpoint(committed5, group).overall is Verdict.IN_SYNC
    assert plan_align(committed5, group).is_noop


def test_align_refuses_when_it_would_lose_output_unless_forced(committed5: CheckpointReader) -> None:
    behind = marked(end_offsets(3), 3)
    with pytest.raises(RepairError, match=r"verification says KAFKA_BEHIND; .*lost") as err:
        plan_align(committed5, behind)
    assert "--to-batch 3" in (err.value.fix or "")
    forced = plan_align(committed5, behind, force=True)
    assert forced.verdict is Verdict.KAFKA_BEHIND and "forced despite KAFKA_BEHIND" in forced.warnings[0]
    assert forced.offsets_with_metadata()[TP0] == (600, BatchMarker(Q, 5).encode())


def test_align_refuses_when_it_would_duplicate_the_replayed_batch(committed5: CheckpointReader) -> None:
    with pytest.raises(RepairError, match=r"KAFKA_AHEAD_SAFE; batch 6 is already in Kafka.*duplicates"):
        plan_align(committed5, marked(end_offsets(6), 6))


def test_align_refuses_diverged_unless_forced(committed5: CheckpointReader) -> None:
    foreign = marked(end_offsets(5), 5, query_id="ffffffff-0000-4000-8000-000000000000")
    with pytest.raises(RepairError, match=r"DIVERGED") as err:
        plan_align(committed5, foreign)
    assert "--force" in (err.value.fix or "")
    assert len(plan_align(committed5, foreign, force=True).changes) == 2


def test_align_leaves_partitions_outside_the_checkpoint_untouched(committed5: CheckpointReader) -> None:
    stray = TopicPartition("other", 0)
    plan = plan_align(committed5, {TP0: None, TP1: None, stray: CommittedOffset(5, "")})
    assert plan.untouched == (stray,)
    assert stray not in plan.offsets_with_metadata()
    assert "other-0" in align_plan_text(plan)


def test_align_refuses_without_a_committed_batch(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=[0], commits=[])
    with pytest.raises(RepairError, match=r"has no committed batch, so there is nothing to align"):
        plan_align(CheckpointReader(location), {TP0: None})



def test_align_json_keeps_topic_and_partition_apart_and_reads_back(committed5: CheckpointReader) -> None:
    stray = TopicPartition("other-app", 0)
    plan = plan_align(committed5, {TP0: None, TP1: CommittedOffset(601, ""), stray: CommittedOffset(5, "")})
    data = json.loads(json.dumps(plan.to_dict()))
    assert data["repair"] == "align" and data["verdict"] == "NO_MARKER"
    assert data["changes"] == 2 and data["is_noop"] is False
    assert data["untouched"] == [{"topic": "other-app", "partition": 0}]
    assert data["rows"][0] == {
        "topic": "in",
        "partition": 0,
        "before_offset": None,
        "before_metadata": None,
        "after_offset": 600,
        "after_metadata": BatchMarker(Q, 5).encode(),
        "changed": True,
    }
    read = AlignPlan.model_validate(data)
    assert read == plan and read.offsets_with_metadata() == plan.offsets_with_metadata()
    assert AlignRow.model_validate(data["rows"][1]) == plan.rows[1]


def test_align_refuses_a_partition_behind_even_beside_one_without_a_marker(committed5: CheckpointReader) -> None:
    # in-0 holds nothing (NO_MARKER), in-1 marker 3 (KAFKA_BEHIND): aligning would declare batches 4..5 of in-1
    # produced. The overall verdict is DIVERGED; the row alone refuses too.
    group = {TP0: None, **marked({TP1: end_offsets(3)[TP1]}, 3)}
    with pytest.raises(RepairError, match=r"refusing to align the group to batch 5: verification says DIVERGED"):
        plan_align(committed5, group)
    forced = plan_align(committed5, group, force=True)
    assert forced.warnings[0].startswith("forced despite DIVERGED")


def test_align_refuses_by_any_row_not_only_the_overall_verdict(
    committed5: CheckpointReader, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A report whose overall verdict would allow aligning (NO_MARKER) while one row is KAFKA_BEHIND: what
    # verification said before it ruled that mix DIVERGED. The plan must not rely on the overall verdict alone.
    from airflow_provider_eos.core.repair import align

    def overall_no_marker(*args, **kwargs):
        return verify_checkpoint(*args, **kwargs).model_copy(update={"overall": Verdict.NO_MARKER, "issues": ()})

    monkeypatch.setattr(align, "verify_checkpoint", overall_no_marker)
    group = {TP0: None, **marked({TP1: end_offsets(3)[TP1]}, 3)}
    with pytest.raises(RepairError, match=r"verification says NO_MARKER \(KAFKA_BEHIND rows\); .*lost") as err:
        plan_align(committed5, group)
    assert "--force" in (err.value.fix or "")
