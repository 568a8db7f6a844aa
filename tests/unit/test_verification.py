"""Verification verdicts (docs/architecture.md, verdicts), per partition and overall."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from pathlib import Path

import fsspec
import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import CheckpointError, InconsistentOffsetsError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.presentation import verification_text
from airflow_provider_eos.core.sink_protocol import PlannedBatch, decide_batch, decide_partition
from airflow_provider_eos.core.spec import Writers
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition
from airflow_provider_eos.core.verification import (
    Verdict,
    VerificationReport,
    verify,
    verify_checkpoint,
    writers_in_use,
)

Q = "5f0c1a7e-3b2d-4c1e-9a8f-0d6e2b7c4a11"
OTHER_Q = "9d8c7b6a-5f4e-4d3c-8b2a-1f0e9d8c7b6a"
T = "in"
TP0 = TopicPartition(T, 0)
TP1 = TopicPartition(T, 1)


def wal(*batches: int, partitions: int = 2) -> dict[int, OffsetMap]:
    """offsets/N for the given batches: partition p of batch N ends at 100*(N+1) + p."""
    return {n: {TopicPartition(T, p): 100 * (n + 1) + p for p in range(partitions)} for n in batches}


def marked(offsets: Mapping[TopicPartition, int], batch: int, query_id: str = Q) -> CommittedOffsets:
    """The group as the sink leaves it after committing ``batch`` with ``offsets``."""
    metadata = BatchMarker(query_id, batch).encode()
    return {tp: CommittedOffset(offset, metadata) for tp, offset in offsets.items()}


def run(
    committed: CommittedOffsets,
    *,
    last_committed: int | None,
    last_planned: int | None,
    offsets: Mapping[int, OffsetMap] | None = None,
    query_id: str | None = Q,
) -> VerificationReport:
    return verify(
        query_id=query_id,
        last_committed=last_committed,
        last_planned=last_planned,
        planned_offsets=offsets if offsets is not None else wal(*range(0, 10)),
        committed=committed,
    )


def only(report: VerificationReport, tp: TopicPartition):
    (row,) = [row for row in report.rows if row.tp == tp]
    return row


# -- each verdict ------------------------------------------------------------------------------


def test_in_sync_when_marker_and_offsets_match_the_last_committed_batch() -> None:
    report = run(marked(wal(5)[5], 5), last_committed=5, last_planned=5)
    assert report.overall is Verdict.IN_SYNC
    assert report.ok
    assert [row.verdict for row in report.rows] == [Verdict.IN_SYNC, Verdict.IN_SYNC]
    row = only(report, TP1)
    assert (row.checkpoint_batch, row.checkpoint_offset, row.group_offset) == (5, 601, 601)
    assert (row.marker_batch, row.marker_query_id, row.wal_offset) == (5, Q, 601)
    assert report.next_step.startswith("Nothing to do")
    assert report.rewind_to_batch is None


def test_kafka_ahead_safe_when_marker_is_the_planned_uncommitted_batch() -> None:
    report = run(marked(wal(6)[6], 6), last_committed=5, last_planned=6)
    assert report.overall is Verdict.KAFKA_AHEAD_SAFE
    assert report.ok
    assert "replays batch 6" in report.next_step
    row = only(report, TP0)
    assert (row.checkpoint_offset, row.group_offset, row.wal_offset) == (600, 700, 700)


def test_marker_of_next_batch_without_offsets_file_is_diverged() -> None:
    # commits/5 is the last file and nothing planned batch 6: the marker cannot be a replay.
    report = run(marked(wal(6)[6], 6), last_committed=5, last_planned=5)
    assert report.overall is Verdict.DIVERGED
    assert "has not planned it (last planned batch 5)" in only(report, TP0).detail


def test_kafka_behind_reports_missing_batches_and_rewind_target() -> None:
    report = run(marked(wal(4)[4], 4), last_committed=7, last_planned=7)
    assert report.overall is Verdict.KAFKA_BEHIND
    assert not report.ok
    assert report.rewind_to_batch == 4
    row = only(report, TP0)
    assert row.marker_batch == 4
    assert "5..7 is missing" in row.detail
    assert "eos repair rewind --spec FILE --to-batch 4" in report.next_step
    assert "batches 5..7" in report.next_step
    assert "purged" not in report.next_step


def test_kafka_behind_by_one_batch_names_that_batch() -> None:
    report = run(marked(wal(6)[6], 6), last_committed=7, last_planned=7)
    assert report.overall is Verdict.KAFKA_BEHIND
    assert "output of batch(es) 7 is missing" in only(report, TP0).detail


def test_kafka_behind_with_purged_marker_batch_says_the_offset_is_unchecked() -> None:
    offsets = wal(7, 8)  # offsets/4 was purged
    report = run(marked(wal(4)[4], 4), last_committed=7, last_planned=8, offsets=offsets)
    assert report.overall is Verdict.KAFKA_BEHIND
    row = only(report, TP0)
    assert row.wal_offset is None
    assert "offsets/4 is no longer in the checkpoint" in row.detail
    assert "will be refused" in row.detail
    assert "offsets/4 is no longer in the checkpoint (Spark purged it)" in report.next_step


def test_offset_differing_from_the_wal_at_the_marker_batch_is_diverged() -> None:
    committed = marked(wal(5)[5], 5)
    committed[TP1] = CommittedOffset(650, BatchMarker(Q, 5).encode())
    report = run(committed, last_committed=5, last_planned=5)
    assert report.overall is Verdict.DIVERGED
    assert only(report, TP0).verdict is Verdict.IN_SYNC
    row = only(report, TP1)
    assert row.verdict is Verdict.DIVERGED
    assert "650 differs from offsets/5 (601)" in row.detail
    assert row.wal_offset == 601


def test_offset_differing_from_the_wal_at_an_older_marker_batch_is_diverged_not_behind() -> None:
    committed = {TP0: CommittedOffset(999, BatchMarker(Q, 3).encode())}
    report = run(committed, last_committed=7, last_planned=7, offsets=wal(3, 7, partitions=1))
    assert report.overall is Verdict.DIVERGED
    assert "999 differs from offsets/3 (400)" in only(report, TP0).detail


def test_marker_more_than_one_batch_ahead_is_diverged() -> None:
    report = run(marked(wal(7)[7], 7), last_committed=5, last_planned=6)
    assert report.overall is Verdict.DIVERGED
    assert "names batch 7, more than one batch after the last committed batch 5" in only(report, TP0).detail


def test_foreign_query_id_is_diverged() -> None:
    report = run(marked(wal(5)[5], 5, query_id=OTHER_Q), last_committed=5, last_planned=5)
    assert report.overall is Verdict.DIVERGED
    row = only(report, TP0)
    assert row.marker_query_id == OTHER_Q
    assert f"names query {OTHER_Q}, the checkpoint is query {Q}" in row.detail
    assert report.next_step.startswith("Manual")


def test_unreadable_metadata_is_diverged_and_names_it() -> None:
    committed = {
        TP0: CommittedOffset(600, "spark-was-here"),
        TP1: CommittedOffset(601, BatchMarker(Q, 5).encode()),
    }
    report = run(committed, last_committed=5, last_planned=5)
    assert report.overall is Verdict.DIVERGED
    row = only(report, TP0)
    assert row.marker_batch is None
    assert "'spark-was-here'" in row.detail


def test_no_marker_when_the_group_has_nothing_for_a_committed_partition() -> None:
    committed: CommittedOffsets = {TP0: None}
    report = run(committed, last_committed=5, last_planned=5)
    assert report.overall is Verdict.NO_MARKER
    assert not report.ok
    assert [row.verdict for row in report.rows] == [Verdict.NO_MARKER, Verdict.NO_MARKER]
    assert "committed batch 5 (offset 600) but the group has no committed offset" in only(report, TP0).detail
    assert "group_id" in report.next_step
    assert "eos repair align" in report.next_step


def test_no_marker_when_the_offset_has_empty_metadata() -> None:
    committed = {tp: CommittedOffset(offset, "") for tp, offset in wal(5)[5].items()}
    report = run(committed, last_committed=5, last_planned=5)
    assert report.overall is Verdict.NO_MARKER
    assert "committed offset 600 without a batch marker" in only(report, TP0).detail


# -- edges -------------------------------------------------------------------------------------


def test_nothing_committed_and_empty_group_is_in_sync_with_nothing_to_verify() -> None:
    report = run({TP0: None}, last_committed=None, last_planned=None, offsets={})
    assert report.overall is Verdict.IN_SYNC
    assert report.nothing_to_verify
    assert "nothing to verify" in only(report, TP0).detail
    assert "no batch has been committed yet" in report.next_step


def test_fresh_checkpoint_and_empty_committed_map_has_no_rows() -> None:
    report = run({}, last_committed=None, last_planned=0, offsets=wal(0))
    assert report.rows == ()
    assert report.overall is Verdict.IN_SYNC
    assert report.nothing_to_verify


def test_first_batch_in_kafka_but_not_committed_is_ahead_safe() -> None:
    report = run(marked(wal(0)[0], 0), last_committed=None, last_planned=0, offsets=wal(0))
    assert report.overall is Verdict.KAFKA_AHEAD_SAFE
    assert "replays batch 0" in report.next_step


def test_marker_without_a_checkpoint_metadata_file_is_foreign() -> None:
    report = run(marked(wal(0)[0], 0), last_committed=None, last_planned=None, offsets={}, query_id=None)
    assert report.overall is Verdict.DIVERGED
    assert "the checkpoint is query (none)" in report.rows[0].detail


def test_partition_in_the_group_but_not_in_the_checkpoint_is_diverged() -> None:
    stray = TopicPartition(T, 7)
    committed = marked(wal(5)[5], 5)
    committed[stray] = CommittedOffset(10, BatchMarker(Q, 5).encode())
    report = run(committed, last_committed=5, last_planned=5)
    row = only(report, stray)
    assert row.verdict is Verdict.DIVERGED
    assert row.checkpoint_offset is None
    assert "offsets/5 does not list this partition" in row.detail


def test_partition_unknown_to_checkpoint_and_empty_in_the_group_needs_nothing() -> None:
    new = TopicPartition(T, 2)
    committed = marked(wal(5)[5], 5)
    committed[new] = None
    report = run(committed, last_committed=5, last_planned=5)
    assert report.overall is Verdict.IN_SYNC
    assert "not in offsets/5 and the group holds nothing" in only(report, new).detail


def test_severity_order_is_the_documented_one() -> None:
    order = [
        Verdict.IN_SYNC,
        Verdict.KAFKA_AHEAD_SAFE,
        Verdict.KAFKA_BEHIND,
        Verdict.NO_MARKER,
        Verdict.DIVERGED,
    ]
    assert [v.severity for v in order] == sorted(v.severity for v in order)
    assert len({v.severity for v in order}) == len(order)
    assert [v for v in Verdict if v.ok] == [Verdict.IN_SYNC, Verdict.KAFKA_AHEAD_SAFE]
    assert Verdict("KAFKA_BEHIND") is Verdict.KAFKA_BEHIND and Verdict.KAFKA_BEHIND == "KAFKA_BEHIND"


def test_overall_is_the_worst_row() -> None:
    # p0 in sync, p1 has no group offset at all: the group as a whole tells nothing safe.
    committed = marked(wal(5)[5], 5)
    committed[TP1] = None
    report = run(committed, last_committed=5, last_planned=5)
    assert report.overall is Verdict.NO_MARKER
    assert report.counts[Verdict.IN_SYNC] == 1 and report.counts[Verdict.NO_MARKER] == 1

    committed[TopicPartition(T, 9)] = CommittedOffset(1, BatchMarker(OTHER_Q, 5).encode())
    assert run(committed, last_committed=5, last_planned=5).overall is Verdict.DIVERGED


def test_markers_of_different_batches_make_the_overall_verdict_diverged() -> None:
    # Each row alone looks fine (IN_SYNC, KAFKA_BEHIND), but one transaction commits one marker.
    committed = {
        TP0: CommittedOffset(600, BatchMarker(Q, 5).encode()),
        TP1: CommittedOffset(401, BatchMarker(Q, 3).encode()),
    }
    report = run(committed, last_committed=5, last_planned=5)
    assert {row.verdict for row in report.rows} == {Verdict.IN_SYNC, Verdict.KAFKA_BEHIND}
    assert report.overall is Verdict.DIVERGED
    assert report.rewind_to_batch is None
    assert "different batches (3, 5)" in report.issues[0]


def test_wal_is_read_lazily_once_per_batch_for_many_partitions() -> None:
    partitions = 10_000
    calls: list[int] = []
    offsets = wal(41, 42, partitions=partitions)

    def offsets_for(batch: int) -> OffsetMap | None:
        calls.append(batch)
        return offsets.get(batch)

    report = verify(
        query_id=Q,
        last_committed=42,
        last_planned=42,
        planned_offsets=offsets_for,
        committed=marked(offsets[42], 42),
    )
    assert report.overall is Verdict.IN_SYNC
    assert len(report.rows) == partitions
    assert calls == [42]

    calls.clear()
    behind = verify(
        query_id=Q,
        last_committed=42,
        last_planned=42,
        planned_offsets=offsets_for,
        committed=marked(offsets[41], 41),
    )
    assert behind.overall is Verdict.KAFKA_BEHIND
    assert sorted(calls) == [41, 42]


def test_commits_without_offsets_file_raise_checkpoint_error() -> None:
    with pytest.raises(CheckpointError, match=r"commits/5 exists but offsets/5 could not be read"):
        run({}, last_committed=5, last_planned=5, offsets=wal(4))
    with pytest.raises(CheckpointError, match=r"last committed batch is 5 but its last planned batch is 4"):
        run({}, last_committed=5, last_planned=4)


# -- output ------------------------------------------------------------------------------------


def test_to_dict_is_json_serializable_and_machine_readable() -> None:
    report = run(marked(wal(4)[4], 4), last_committed=7, last_planned=7)
    data = json.loads(json.dumps(report.to_dict()))
    assert data["overall"] == "KAFKA_BEHIND"
    assert data["ok"] is False
    assert data["rewind_to_batch"] == 4
    assert data["counts"]["KAFKA_BEHIND"] == 2 and data["counts"]["IN_SYNC"] == 0
    assert data["rows"][0] == {
        "topic": T,
        "partition": 0,
        "verdict": "KAFKA_BEHIND",
        "checkpoint_batch": 7,
        "checkpoint_offset": 800,
        "group_offset": 500,
        "marker_batch": 4,
        "marker_query_id": Q,
        "wal_offset": 500,
        "detail": data["rows"][0]["detail"],
    }


def test_render_shows_summary_table_worst_first_and_next_step() -> None:
    committed = marked(wal(5)[5], 5)
    committed[TP1] = CommittedOffset(650, BatchMarker(Q, 5).encode())
    text = verification_text(run(committed, last_committed=5, last_planned=5))
    assert text.startswith(
        f"Verification: DIVERGED (query {Q}, last committed batch 5, last planned batch 5)"
    )
    assert "Partitions: 2 (IN_SYNC 1, DIVERGED 1)" in text
    table = text.splitlines()
    header = next(i for i, line in enumerate(table) if line.startswith("partition"))
    assert table[header + 2].split()[:2] == ["in-1", "DIVERGED"]
    assert table[header + 3].split()[:2] == ["in-0", "IN_SYNC"]
    assert "Next step: Manual" in text

    short = verification_text(run(committed, last_committed=5, last_planned=5), max_rows=1)
    assert "IN_SYNC   " not in short.split("Next step")[0].split("Partitions")[1]
    assert "... 1 more partition(s) not shown" in short


# -- against a checkpoint on a file system ----------------------------------------------------


def write_checkpoint(
    location: str, *, offsets: Mapping[int, OffsetMap], commits: list[int], query_id: str = Q
) -> None:
    """Write a Spark checkpoint (metadata, offsets/N, commits/N, sources/0/0) in Spark's format."""
    fs, root = fsspec.core.url_to_fs(location)

    def put(path: str, data: bytes) -> None:
        fs.makedirs(path.rsplit("/", 1)[0], exist_ok=True)
        fs.pipe_file(path, data)

    put(f"{root}/metadata", json.dumps({"id": query_id}).encode())
    first = min(offsets) if offsets else 0
    initial = {T: {str(tp.partition): 0 for tp in (offsets[first] if offsets else {TP0: 0})}}
    put(f"{root}/sources/0/0", b"\x00v1\n" + json.dumps(initial).encode())
    for batch, batch_offsets in offsets.items():
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1700000000000 + batch, "conf": {}}
        source: dict[str, dict[str, int]] = {}
        for tp, offset in batch_offsets.items():
            source.setdefault(tp.topic, {})[str(tp.partition)] = offset
        put(f"{root}/offsets/{batch}", f"v1\n{json.dumps(meta)}\n{json.dumps(source)}".encode())
    for batch in commits:
        put(f"{root}/commits/{batch}", b'v1\n{"nextBatchWatermarkMs":0}')


def test_verify_checkpoint_reads_a_local_checkpoint(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=wal(3, 4, 5, 6), commits=[3, 4, 5])
    reader = CheckpointReader(location)
    assert verify_checkpoint(reader, marked(wal(5)[5], 5)).overall is Verdict.IN_SYNC
    assert verify_checkpoint(reader, marked(wal(6)[6], 6)).overall is Verdict.KAFKA_AHEAD_SAFE
    behind = verify_checkpoint(reader, marked(wal(3)[3], 3))
    assert (behind.overall, behind.rewind_to_batch) == (Verdict.KAFKA_BEHIND, 3)
    purged = verify_checkpoint(reader, marked(wal(1)[1], 1))
    assert purged.overall is Verdict.KAFKA_BEHIND
    assert "offsets/1 is no longer in the checkpoint" in purged.rows[0].detail
    assert verify_checkpoint(reader, {TP0: None}).overall is Verdict.NO_MARKER


def test_verify_checkpoint_on_memory_filesystem_and_without_metadata() -> None:
    location = f"memory://verify-{uuid.uuid4().hex}/ckpt"
    write_checkpoint(location, offsets=wal(0), commits=[0])
    reader = CheckpointReader(location)
    assert verify_checkpoint(reader, marked(wal(0)[0], 0)).overall is Verdict.IN_SYNC

    empty = CheckpointReader(f"memory://verify-{uuid.uuid4().hex}/never-ran")
    report = verify_checkpoint(empty, {TP0: None})
    assert report.overall is Verdict.IN_SYNC and report.nothing_to_verify and report.query_id is None


# -- a partition without a marker, or left out of batch C+1, beside the others ------------------------
# Each verdict below is held against what the sink itself decides on the replay (decide_batch,
# decide_partition): a report that says "ok" must be one the sink resumes from.


def _sink_accepts_replay(committed: CommittedOffsets, *, batch: int, start: OffsetMap, end: OffsetMap,
                         executors: bool) -> bool:
    planned = PlannedBatch.of(query_id=Q, batch_id=batch, start=start, end=end)
    try:
        if executors:
            for tp in end:
                decide_partition(tp, planned, committed.get(tp), "sink")
        else:
            decide_batch(planned, committed, "sink")
    except InconsistentOffsetsError:
        return False
    return True


@pytest.mark.parametrize(("other_batch", "verdict"), [(3, Verdict.KAFKA_BEHIND), (6, Verdict.KAFKA_AHEAD_SAFE)])
def test_no_marker_beside_a_partition_at_another_batch_is_diverged(other_batch: int, verdict: Verdict) -> None:
    # Align's repair (offsets/C, marker C on every partition) would lose batches 4..5 of TP1, or write
    # batch 6 of TP1 twice; the worst row alone (NO_MARKER) would recommend it.
    offsets = wal(*range(0, 10))
    committed = {TP0: None, TP1: CommittedOffset(offsets[other_batch][TP1], BatchMarker(Q, other_batch).encode())}
    report = run(committed, last_committed=5, last_planned=6)
    assert [row.verdict for row in report.rows] == [Verdict.NO_MARKER, verdict]
    assert report.overall is Verdict.DIVERGED and not report.ok
    assert "in-0 hold no batch marker while other partitions carry batch" in report.issues[-1]
    assert "Manual" in report.next_step and "align --spec" not in report.next_step.split("Once")[0]


def test_no_marker_beside_partitions_at_the_last_committed_batch_stays_no_marker() -> None:
    # Align is the repair here: it gives TP0 what the checkpoint committed, as TP1 already holds.
    committed = {TP0: None, **marked({TP1: 601}, 5)}
    report = run(committed, last_committed=5, last_planned=5)
    assert report.overall is Verdict.NO_MARKER and report.issues == ()


@pytest.mark.parametrize("executors", [False, True])
def test_a_partition_new_in_batch_c_plus_1_left_out_beside_its_marker_is_diverged_for_the_driver_writer(
    executors: bool,
) -> None:
    # offsets/6 adds in-2; the group holds marker 6 for in-0 and in-1 and nothing for in-2.
    offsets = {**wal(*range(0, 6)), 6: wal(6, partitions=3)[6]}
    committed = marked({TP0: 700, TP1: 701}, 6)
    writers = writers_in_use(None, Writers.EXECUTORS if executors else Writers.DRIVER)
    report = verify(query_id=Q, last_committed=5, last_planned=6, planned_offsets=offsets,
                    committed={**committed, TopicPartition(T, 2): None}, writers=writers)
    accepted = _sink_accepts_replay(committed, batch=6, start=offsets[5], end=offsets[6], executors=executors)
    assert report.ok is accepted is executors
    if not executors:
        assert report.overall is Verdict.DIVERGED
        assert "in-2, which offsets/6 lists, hold nothing" in report.issues[-1]


@pytest.mark.parametrize("executors", [False, True])
def test_the_first_batch_on_some_partitions_only_is_diverged_for_the_driver_writer(executors: bool) -> None:
    offsets = wal(0)
    committed = marked({TP0: 100}, 0)
    writers = writers_in_use(None, Writers.EXECUTORS if executors else Writers.DRIVER)
    report = verify(query_id=Q, last_committed=None, last_planned=0, planned_offsets=offsets,
                    committed={**committed, TP1: None}, writers=writers)
    accepted = _sink_accepts_replay(committed, batch=0, start={}, end=offsets[0], executors=executors)
    assert report.ok is accepted is executors
