"""Planning a rewind: what it moves, in which order, and when it refuses."""

from __future__ import annotations

import json
from pathlib import Path

import fsspec
import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import RepairError
from airflow_provider_eos.core.presentation import rewind_plan_text
from airflow_provider_eos.core.repair import (
    RewindPlan,
    plan_rewind,
)
from tests.unit.repair.builders import (
    backups,
    expected_moves,
    tree,
    write_checkpoint,
)


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
    text = rewind_plan_text(plan, max_files=None)
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


def test_rewind_to_last_committed_moves_the_planned_batch_with_a_warning(tmp_path: Path) -> None:
    location = str(tmp_path / "ckpt")
    write_checkpoint(location, offsets=range(4), commits=range(3))
    plan = plan_rewind(CheckpointReader(location), 2)
    assert set(plan.paths) == {"offsets/3", "offsets/.3.crc"}
    assert "KAFKA_AHEAD_SAFE" in plan.warnings[0]
    assert "Warning: offsets/3 (planned, not committed)" in rewind_plan_text(plan)


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



def test_plan_json_reads_back_into_an_equal_plan(stateful: str) -> None:
    plan = plan_rewind(CheckpointReader(stateful), 3)
    data = json.loads(json.dumps(plan.model_dump(mode="json")))
    assert data == plan.to_dict()
    assert set(data) == {"repair", "root", "location", "to_batch", "is_noop", "stateful", "before", "after", "moves",
                         "warnings", "fingerprint"}
    assert data["repair"] == "rewind" and data["is_noop"] is False
    assert data["moves"][0] == {"path": plan.moves[0].path, "kind": "state", "number": plan.moves[0].number}
    read = RewindPlan.model_validate(data)
    assert read == plan and read.paths == plan.paths and read.last_committed_after == 3
    # The fingerprint is the plan's: read back, or planned again on the same checkpoint, it is the same.
    assert read.fingerprint == plan.fingerprint == plan_rewind(CheckpointReader(stateful), 3).fingerprint
    assert plan_rewind(CheckpointReader(stateful), 2).fingerprint != plan.fingerprint
