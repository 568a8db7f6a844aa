"""Repairs: rewinding a checkpoint (files moved to a backup, never deleted) and aligning the group."""

from __future__ import annotations

import json
import posixpath
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

import fsspec
import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.repair import (
    BACKUP_INFIX,
    MANIFEST_NAME,
    backup_dir_for,
    execute_rewind,
    plan_align,
    plan_rewind,
    rewind,
)
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition
from airflow_provider_eos.core.verification import Verdict, verify_checkpoint

Q = "0b5c3e1a-8d2f-4e6a-9c1b-7f3e5a2d4c60"
T = "in"
TP0 = TopicPartition(T, 0)
TP1 = TopicPartition(T, 1)
NOW = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
STAMP = "20240102T030405Z"


def end_offsets(batch: int, partitions: int = 2) -> OffsetMap:
    """offsets/N used throughout: partition p of batch N ends at 100*(N+1) + p."""
    return {TopicPartition(T, p): 100 * (batch + 1) + p for p in range(partitions)}


def write_checkpoint(
    location: str,
    *,
    offsets: Iterable[int],
    commits: Iterable[int],
    query_id: str = Q,
    partitions: int = 2,
    crc: bool = True,
    hdfs_state_versions: Iterable[int] = (),
    rocksdb_state_versions: Iterable[int] = (),
    operator_metadata_batches: Iterable[int] = (),
) -> None:
    """Write a Spark checkpoint in Spark's on-disk format.

    ``metadata``, ``sources/0/0``, ``offsets/N`` (v1, metadata line, Kafka source line),
    ``commits/N``, Hadoop ``.N.crc`` sidecars, and optionally state:
    HDFS-backed operator 0 (``state/0/<p>/<v>.delta`` with ``.crc``, a snapshot at the middle
    version, ``_metadata/metadata``, ``_metadata/v2/<batch>``) and RocksDB operator 1
    (``state/1/<p>/<v>.zip`` / ``<v>.changelog`` and ``SSTs/``, ``logs/``).
    """
    fs, root = fsspec.core.url_to_fs(location)

    def put(path: str, data: bytes) -> None:
        fs.makedirs(posixpath.dirname(f"{root}/{path}"), exist_ok=True)
        fs.pipe_file(f"{root}/{path}", data)
        if crc:
            directory, name = posixpath.split(path)
            fs.pipe_file(f"{root}/{directory}/.{name}.crc", b"crc\x00" + name.encode())

    put("metadata", json.dumps({"id": query_id}).encode())
    initial = {T: {str(p): 0 for p in range(partitions)}}
    put("sources/0/0", b"\x00v1\n" + json.dumps(initial).encode())
    for batch in offsets:
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_700_000_000_000 + batch, "conf": {}}
        source = {T: {str(tp.partition): o for tp, o in end_offsets(batch, partitions).items()}}
        put(f"offsets/{batch}", f"v1\n{json.dumps(meta)}\n{json.dumps(source)}".encode())
    for batch in commits:
        put(f"commits/{batch}", b'v1\n{"nextBatchWatermarkMs":0}')

    hdfs = sorted(hdfs_state_versions)
    rocks = sorted(rocksdb_state_versions)
    for p in range(2) if hdfs else ():
        for version in hdfs:
            put(f"state/0/{p}/{version}.delta", f"delta {version}".encode())
        put(f"state/0/{p}/{hdfs[len(hdfs) // 2]}.snapshot", b"snapshot")
    if hdfs:
        put("state/0/_metadata/metadata", b'v1\n{"operatorInfo":{}}')
    for batch in operator_metadata_batches:
        put(f"state/0/_metadata/v2/{batch}", b"v2\n{}")
    for p in range(2) if rocks else ():
        for version in rocks:
            put(f"state/1/{p}/{version}.zip", b"zip")
            put(f"state/1/{p}/{version}.changelog", b"changelog")
        put(f"state/1/{p}/SSTs/000008-{uuid.uuid4()}.sst", b"sst")
        put(f"state/1/{p}/logs/000009-{uuid.uuid4()}.log", b"log")


def tree(location: str) -> dict[str, bytes]:
    """Every file under ``location`` with its content, keyed by relative path."""
    fs, root = fsspec.core.url_to_fs(location)
    root = root.rstrip("/")
    if not fs.exists(root):
        return {}
    return {path[len(root) + 1 :]: fs.cat_file(path) for path in fs.find(root)}


def backups(location: str) -> list[str]:
    fs, root = fsspec.core.url_to_fs(location)
    parent, name = posixpath.split(root.rstrip("/"))
    return sorted(
        p for p in fs.ls(parent, detail=False) if posixpath.basename(p).startswith(name + BACKUP_INFIX)
    )


@pytest.fixture
def stateful(tmp_path: Path) -> str:
    """Batches 0..7 planned, 0..6 committed, HDFS and RocksDB state versions 1..8."""
    location = str(tmp_path / "ckpt")
    write_checkpoint(
        location,
        offsets=range(8),
        commits=range(7),
        hdfs_state_versions=range(1, 9),
        rocksdb_state_versions=range(1, 9),
        operator_metadata_batches=range(8),
    )
    return location


# -- planning ----------------------------------------------------------------------------------


def expected_moves(to_batch: int) -> set[str]:
    """What rewinding the ``stateful`` checkpoint to ``to_batch`` must move (incl. sidecars)."""
    files: set[str] = set()

    def with_crc(path: str) -> None:
        directory, name = posixpath.split(path)
        files.update({path, f"{directory}/.{name}.crc"})

    for batch in range(to_batch + 1, 8):
        with_crc(f"offsets/{batch}")
        with_crc(f"state/0/_metadata/v2/{batch}")
    for batch in range(to_batch + 1, 7):
        with_crc(f"commits/{batch}")
    for version in range(to_batch + 2, 9):
        for p in range(2):
            with_crc(f"state/0/{p}/{version}.delta")
            with_crc(f"state/1/{p}/{version}.zip")
            with_crc(f"state/1/{p}/{version}.changelog")
            if version == 5:  # the snapshot written at the middle version
                with_crc(f"state/0/{p}/{version}.snapshot")
    return files


def test_plan_lists_later_batches_state_versions_and_sidecars(stateful: str) -> None:
    before = tree(stateful)
    plan = plan_rewind(CheckpointReader(stateful), 3)

    assert set(plan.paths) == expected_moves(3)
    assert len(plan.paths) == len(set(plan.paths))
    # State version 4 is what batch 3 committed, so it and everything older stays.
    assert "state/0/0/4.delta" not in plan.paths and "state/0/0/5.delta" in plan.paths
    assert not any("SSTs/" in p or "logs/" in p or p.endswith("_metadata/metadata") for p in plan.paths)
    assert not any(p.startswith(("sources/", "metadata")) for p in plan.paths)
    assert (plan.last_committed_before, plan.last_planned_before) == (6, 7)
    assert (plan.last_committed_after, plan.last_planned_after) == (3, 3)
    assert plan.stateful and not plan.is_noop
    # Planning is a dry run: nothing changed.
    assert tree(stateful) == before
    assert backups(stateful) == []


def test_plan_orders_state_first_then_newest_batch_commits_before_offsets_sidecar_first(
    stateful: str,
) -> None:
    paths = list(plan_rewind(CheckpointReader(stateful), 5).paths)
    first_log = next(i for i, p in enumerate(paths) if p.startswith(("commits/", "offsets/")))
    assert all(p.startswith("state/") for p in paths[:first_log])
    assert all(not p.startswith("state/") for p in paths[first_log:])
    assert paths[first_log:] == [
        "offsets/.7.crc",
        "offsets/7",
        "commits/.6.crc",
        "commits/6",
        "offsets/.6.crc",
        "offsets/6",
    ]


def test_plan_render_and_to_dict_show_before_and_after(stateful: str) -> None:
    plan = plan_rewind(CheckpointReader(stateful), 3)
    text = plan.render(max_files=None)
    assert text.startswith(f"Rewind checkpoint {plan.root} to batch 3 (plan; nothing changed yet)")
    lines = text.splitlines()
    assert any(line.split() == ["last", "committed", "batch", "6", "3"] for line in lines)
    assert any(line.split() == ["last", "planned", "batch", "7", "3"] for line in lines)
    assert any(line.split() == ["offsets/", "batches", "0..7", "0..3"] for line in lines)
    assert any(line.split() == ["commits/", "batches", "0..6", "0..3"] for line in lines)
    assert f"Moves {len(plan.moves)} file(s), sidecars included: 8 in offsets/, 6 in commits/, " in text
    assert lines.index("  offsets/4") < lines.index("  offsets/7")  # log files listed first
    data = json.loads(json.dumps(plan.to_dict()))
    assert data["before"] == {
        "last_committed": 6,
        "last_planned": 7,
        "oldest_planned": 0,
        "oldest_committed": 0,
    }
    assert data["after"] == {"last_committed": 3, "last_planned": 3}
    assert {m["path"] for m in data["moves"]} == expected_moves(3)


# -- executing ---------------------------------------------------------------------------------


def test_execute_moves_into_backup_deletes_nothing_and_rewinds(stateful: str) -> None:
    before = tree(stateful)
    reader = CheckpointReader(stateful)
    plan = plan_rewind(reader, 3)
    result = execute_rewind(plan, reader, now=NOW)

    assert result.executed
    assert result.backup_dir == f"{plan.root}{BACKUP_INFIX}{STAMP}"
    assert backups(stateful) == [result.backup_dir]
    assert set(result.moved) == expected_moves(3)

    after = tree(stateful)
    backup = tree(result.backup_dir)
    manifest = json.loads(backup.pop(MANIFEST_NAME))
    # Nothing deleted: every original file is in the checkpoint or the backup, unchanged, once.
    assert len(after) + len(backup) == len(before)
    assert {**after, **backup} == before
    assert set(backup) == expected_moves(3)
    assert manifest["complete"] is True
    assert set(manifest["moved"]) == expected_moves(3)
    assert manifest["to_batch"] == 3

    fresh = CheckpointReader(stateful)
    assert (fresh.latest_committed_batch(), fresh.latest_planned_batch()) == (3, 3)
    assert fresh.planned_offsets(3) == end_offsets(3)
    assert "To undo" in result.render()


def test_second_execute_is_a_noop(stateful: str) -> None:
    reader = CheckpointReader(stateful)
    plan = plan_rewind(reader, 3)
    execute_rewind(plan, reader, now=NOW)
    after_first = tree(stateful)

    again = execute_rewind(plan, reader, now=datetime(2024, 1, 2, 3, 9, 9, tzinfo=UTC))
    assert not again.executed and again.is_noop and again.moved == ()
    assert tree(stateful) == after_first
    assert len(backups(stateful)) == 1
    assert "already ends at batch 3: nothing moved" in again.render()
    assert plan_rewind(reader, 3).is_noop


def test_rewind_defaults_to_dry_run(stateful: str) -> None:
    before = tree(stateful)
    reader = CheckpointReader(stateful)
    result = rewind(reader, 2)
    assert not result.executed and not result.is_noop
    assert result.render().startswith("Dry run: nothing moved.")
    assert tree(stateful) == before and backups(stateful) == []

    done = rewind(reader, 2, execute=True, now=NOW)
    assert done.executed and reader.latest_committed_batch() == 2


def test_execute_refuses_when_the_checkpoint_changed_since_planning(stateful: str) -> None:
    reader = CheckpointReader(stateful)
    plan = plan_rewind(reader, 3)
    fs = reader.fs
    fs.pipe_file(reader.path("commits", "7"), b'v1\n{"nextBatchWatermarkMs":0}')  # the query ran on
    before = tree(stateful)
    with pytest.raises(RepairError, match=r"changed since the rewind was planned.*nothing was moved") as err:
        execute_rewind(plan, reader, now=NOW)
    assert "plan the rewind again" in (err.value.fix or "")
    assert tree(stateful) == before and backups(stateful) == []


def test_interrupted_rewind_keeps_what_it_moved_and_resumes_by_planning_again(
    stateful: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = tree(stateful)
    reader = CheckpointReader(stateful)
    plan = plan_rewind(reader, 3)
    real_mv = reader.fs.mv
    calls = {"n": 0}

    def flaky_mv(source: str, target: str, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 5:
            raise OSError("disk on fire")
        real_mv(source, target, **kwargs)

    monkeypatch.setattr(reader.fs, "mv", flaky_mv)
    with pytest.raises(RepairError, match=r"disk on fire\); 4 of \d+ file\(s\) were already moved") as err:
        execute_rewind(plan, reader, now=NOW)
    assert "plan and execute the rewind again" in (err.value.fix or "")
    (first,) = backups(stateful)
    partial = tree(first)
    assert json.loads(partial.pop(MANIFEST_NAME))["complete"] is False
    assert len(partial) == 4
    monkeypatch.setattr(reader.fs, "mv", real_mv)

    resumed = rewind(reader, 3, execute=True, now=datetime(2024, 1, 2, 3, 5, 0, tzinfo=UTC))
    assert resumed.executed and len(resumed.moved) == len(plan.moves) - 4
    second = tree(resumed.backup_dir)
    second.pop(MANIFEST_NAME)
    assert {**tree(stateful), **partial, **second} == before
    assert len(tree(stateful)) + len(partial) + len(second) == len(before)
    assert reader.latest_committed_batch() == 3


def test_backup_folder_name_collision_gets_a_suffix(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(4), commits=range(4))
    (tmp_path / f"ckpt{BACKUP_INFIX}{STAMP}").mkdir()
    result = rewind(CheckpointReader(location), 1, execute=True, now=NOW)
    assert result.backup_dir == str(tmp_path / f"ckpt{BACKUP_INFIX}{STAMP}-1")
    assert set(tree(result.backup_dir)) - {MANIFEST_NAME} == {
        "offsets/2",
        "offsets/.2.crc",
        "offsets/3",
        "offsets/.3.crc",
        "commits/2",
        "commits/.2.crc",
        "commits/3",
        "commits/.3.crc",
    }


def test_rewind_on_memory_filesystem() -> None:
    location = f"memory://repair-{uuid.uuid4().hex}/ckpt"
    write_checkpoint(location, offsets=range(5), commits=range(5), crc=False, hdfs_state_versions=range(1, 6))
    before = tree(location)
    reader = CheckpointReader(location)
    result = rewind(reader, 2, execute=True, now=NOW)
    assert (
        result.backup_dir == f"/repair-{location.split('repair-')[1].split('/')[0]}/ckpt{BACKUP_INFIX}{STAMP}"
    )
    backup = tree("memory://" + result.backup_dir)
    backup.pop(MANIFEST_NAME)
    assert {**tree(location), **backup} == before
    assert set(backup) == {
        "offsets/3",
        "offsets/4",
        "commits/3",
        "commits/4",
        *(f"state/0/{p}/{v}.delta" for p in range(2) for v in (4, 5)),
    }
    assert reader.latest_committed_batch() == 2


def test_stateless_query_moves_only_logs(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(3), commits=range(3), crc=False)
    plan = plan_rewind(CheckpointReader(location), 0)
    assert not plan.stateful
    assert set(plan.paths) == {"offsets/1", "offsets/2", "commits/1", "commits/2"}


def test_spark4_checksum_sidecars_and_checkpoint_v2_state_names_are_recognised(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(4), commits=range(4), crc=False)
    fs, root = fsspec.core.url_to_fs(location)
    store = f"{root}/state/0/0"
    fs.makedirs(store, exist_ok=True)
    for name in [
        "1.delta",
        "2.delta",
        "3_0a1b.zip",
        "4_9f8e.changelog",
        "4_9f8e.changelog.crc",
        "5.delta.crc",
    ]:
        fs.pipe_file(f"{store}/{name}", b"x")
    plan = plan_rewind(CheckpointReader(location), 2)
    assert {p for p in plan.paths if p.startswith("state/")} == {
        "state/0/0/4_9f8e.changelog",
        "state/0/0/4_9f8e.changelog.crc",
        "state/0/0/5.delta.crc",
    }


# -- edges and refusals ------------------------------------------------------------------------


def test_rewind_to_last_committed_with_nothing_later_is_a_noop(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(3), commits=range(3), hdfs_state_versions=range(1, 4))
    reader = CheckpointReader(location)
    plan = plan_rewind(reader, 2)
    assert plan.is_noop and plan.paths == () and plan.warnings == ()
    assert "to batch 2: nothing to do" in plan.render()
    result = execute_rewind(plan, reader, now=NOW)
    assert not result.executed and backups(location) == []


def test_rewind_to_last_committed_moves_the_planned_batch_with_a_warning(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(4), commits=range(3))
    plan = plan_rewind(CheckpointReader(location), 2)
    assert set(plan.paths) == {"offsets/3", "offsets/.3.crc"}
    assert "KAFKA_AHEAD_SAFE" in plan.warnings[0]
    assert "Warning: offsets/3 (planned, not committed)" in plan.render()


def test_rewind_before_the_first_batch_moves_every_batch_and_all_state(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(3), commits=range(2), hdfs_state_versions=range(1, 3))
    before = tree(location)
    reader = CheckpointReader(location)
    result = rewind(reader, -1, execute=True, now=NOW)
    assert (result.plan.last_committed_after, result.plan.last_planned_after) == (None, None)
    assert reader.offset_batches() == [] and reader.commit_batches() == []
    remaining = tree(location)
    assert not any(p.endswith((".delta", ".snapshot")) for p in remaining)
    assert {"metadata", "sources/0/0", "state/0/_metadata/metadata"} <= set(remaining)
    backup = tree(result.backup_dir)
    backup.pop(MANIFEST_NAME)
    assert {**remaining, **backup} == before


def test_refuses_to_rewind_forward_naming_the_values(stateful: str) -> None:
    with pytest.raises(
        RepairError, match=r"cannot rewind forward to batch 7: the last committed batch .* is 6"
    ):
        plan_rewind(CheckpointReader(stateful), 7)


def test_refuses_a_batch_below_minus_one(stateful: str) -> None:
    with pytest.raises(RepairError, match=r"cannot rewind to batch -2") as err:
        plan_rewind(CheckpointReader(stateful), -2)
    assert "--to-batch -1" in (err.value.fix or "")


def test_refuses_when_nothing_was_committed(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=[0], commits=[])
    with pytest.raises(RepairError, match=r"cannot rewind forward to batch 0: .* is none"):
        plan_rewind(CheckpointReader(location), 0)


def test_refuses_below_the_oldest_retained_offsets(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(3, 10), commits=range(3, 10))
    reader = CheckpointReader(location)
    with pytest.raises(RepairError, match=r"to batch 3: offsets/2 is gone .*offsets/3") as err:
        plan_rewind(reader, 3)
    assert "earliest batch the retained offsets/ and commits/ allow is 4" in (err.value.fix or "")
    with pytest.raises(RepairError, match=r"to batch 1: offsets/1, commits/1, offsets/0 are gone"):
        plan_rewind(reader, 1)
    with pytest.raises(RepairError, match=r"before the first batch: offsets/0 was purged .*offsets/3"):
        plan_rewind(reader, -1)
    assert set(plan_rewind(reader, 4).paths) >= {"offsets/9", "commits/5"}


def test_refuses_when_state_of_the_target_batch_was_purged(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(10), commits=range(10), hdfs_state_versions=range(7, 11))
    with pytest.raises(
        RepairError, match=r"state store state/0/0 keeps no version at or below 5 \(lowest: 7\)"
    ):
        plan_rewind(CheckpointReader(location), 4)
    assert plan_rewind(CheckpointReader(location), 6).paths  # version 7 is retained


def test_backup_dir_needs_a_parent() -> None:
    assert backup_dir_for("/data/ckpt", NOW) == f"/data/ckpt{BACKUP_INFIX}{STAMP}"
    assert backup_dir_for("/data/ckpt", datetime(2024, 1, 2, 3, 4, 5)) == f"/data/ckpt{BACKUP_INFIX}{STAMP}"
    with pytest.raises(RepairError, match=r"checkpoint root 'bucket' has no parent folder"):
        backup_dir_for("bucket", NOW)


# -- align -------------------------------------------------------------------------------------


def marked(offsets: Mapping[TopicPartition, int], batch: int, query_id: str = Q) -> CommittedOffsets:
    metadata = BatchMarker(query_id, batch).encode()
    return {tp: CommittedOffset(offset, metadata) for tp, offset in offsets.items()}


@pytest.fixture
def committed5(tmp_path: Path) -> CheckpointReader:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(7), commits=range(6))
    return CheckpointReader(location)


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
    text = plan.render()
    assert "2 of 2 partition(s) change" in text
    assert any(line.split()[:5] == ["in-1", "42", '""', "601", marker] for line in text.splitlines())


def test_align_is_a_noop_when_in_sync(committed5: CheckpointReader) -> None:
    plan = plan_align(committed5, marked(end_offsets(5), 5))
    assert plan.verdict is Verdict.IN_SYNC
    assert plan.is_noop and plan.changes == ()
    assert "nothing to do" in plan.render()


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
    assert "other-0" in plan.render()


def test_align_refuses_without_a_committed_batch(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=[0], commits=[])
    with pytest.raises(RepairError, match=r"has no committed batch, so there is nothing to align"):
        plan_align(CheckpointReader(location), {TP0: None})
