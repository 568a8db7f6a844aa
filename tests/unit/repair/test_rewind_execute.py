"""Executing a rewind: files moved to a backup, never deleted; idempotent and resumable."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.presentation import rewind_plan_text, rewind_text
from airflow_provider_eos.core.repair import (
    BACKUP_INFIX,
    MANIFEST_NAME,
    RewindPlan,
    RewindResult,
    backup_dir_for,
    execute_rewind,
    plan_rewind,
    rewind,
)
from tests.unit.repair.builders import (
    NOW,
    STAMP,
    backups,
    end_offsets,
    expected_moves,
    tree,
    write_checkpoint,
)


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
    assert "To undo" in rewind_text(result)


def test_second_execute_is_a_noop(stateful: str) -> None:
    reader = CheckpointReader(stateful)
    plan = plan_rewind(reader, 3)
    execute_rewind(plan, reader, now=NOW)
    after_first = tree(stateful)

    again = execute_rewind(plan, reader, now=datetime(2024, 1, 2, 3, 9, 9, tzinfo=UTC))
    assert not again.executed and again.is_noop and again.moved == ()
    assert tree(stateful) == after_first
    assert len(backups(stateful)) == 1
    assert "already ends at batch 3: nothing moved" in rewind_text(again)
    assert plan_rewind(reader, 3).is_noop


def test_rewind_defaults_to_dry_run(stateful: str) -> None:
    before = tree(stateful)
    reader = CheckpointReader(stateful)
    result = rewind(reader, 2)
    assert not result.executed and not result.is_noop
    assert rewind_text(result).startswith("Dry run: nothing moved.")
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


def test_rewind_to_last_committed_with_nothing_later_is_a_noop(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(3), commits=range(3), hdfs_state_versions=range(1, 4))
    reader = CheckpointReader(location)
    plan = plan_rewind(reader, 2)
    assert plan.is_noop and plan.paths == () and plan.warnings == ()
    assert "to batch 2: nothing to do" in rewind_plan_text(plan)
    result = execute_rewind(plan, reader, now=NOW)
    assert not result.executed and backups(location) == []


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


def test_backup_dir_needs_a_parent() -> None:
    assert backup_dir_for("/data/ckpt", NOW) == f"/data/ckpt{BACKUP_INFIX}{STAMP}"
    assert backup_dir_for("/data/ckpt", datetime(2024, 1, 2, 3, 4, 5)) == f"/data/ckpt{BACKUP_INFIX}{STAMP}"
    with pytest.raises(RepairError, match=r"checkpoint root 'bucket' has no parent folder"):
        backup_dir_for("bucket", NOW)



def test_result_json_is_the_plan_flat_plus_what_moved_and_reads_back(stateful: str) -> None:
    reader = CheckpointReader(stateful)
    plan = plan_rewind(reader, 5)
    result = execute_rewind(plan, reader, now=NOW)
    data = json.loads(json.dumps(result.to_dict()))
    assert "plan" not in data
    assert {key: data[key] for key in plan.to_dict()} == plan.to_dict()
    assert (data["executed"], data["backup_dir"], data["moved"]) == (True, result.backup_dir, list(result.moved))
    assert RewindResult.model_validate(data) == result
    manifest = json.loads(tree(result.backup_dir)[MANIFEST_NAME])
    assert set(manifest) == set(plan.to_dict()) | {"complete", "moved", "moving", "restore"}
    assert RewindPlan.model_validate(manifest) == plan
