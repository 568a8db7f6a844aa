"""The checkpoint reader against hand-made files that mirror what Spark writes byte for byte.

``data/checkpoints/kafka_v1``: Spark 3.x/4.0 layout (v1 offset log), batches 0 and 1 committed,
batch 2 planned; ``payments-1`` appears in batch 2. ``kafka_v2``: Spark 4.1+ v2 offset log
(``<source id>:<json>`` lines, in map order), v2 commit log, a ``state/`` directory.
``malformed``: one broken file per failure mode.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

from airflow_provider_eos.core.checkpoint import (
    CheckpointReader,
    CheckpointSnapshot,
    normalize_location,
)
from airflow_provider_eos.core.checkpoint.reader import NAIVE_LOCAL_TIME_PROTOCOLS, _as_utc
from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.topic_partition import TopicPartition

DATA = Path(__file__).parent / "data" / "checkpoints"
V1 = DATA / "kafka_v1"
V2 = DATA / "kafka_v2"
BAD = DATA / "malformed"

O0, O1, O2 = (TopicPartition("orders.v1-raw", p) for p in range(3))
P0, P1 = TopicPartition("payments", 0), TopicPartition("payments", 1)
C0, C1 = TopicPartition("clicks", 0), TopicPartition("clicks", 1)
VW0 = TopicPartition("views", 0)


def error_of(call, *args: object) -> CheckpointError:  # type: ignore[no-untyped-def]
    with pytest.raises(CheckpointError) as info:
        call(*args)
    assert info.value.fix, "every checkpoint error carries a fix"
    return info.value


# -- v1 layout ---------------------------------------------------------------------------------


@pytest.fixture
def v1() -> CheckpointReader:
    return CheckpointReader(str(V1))


def test_v1_identity_and_listing(v1: CheckpointReader) -> None:
    assert v1.exists()
    assert v1.query_id() == "5f0c2b7e-9a41-4c3e-8d2a-1b6f3e9c7a10"
    # .0.crc, .metadata.crc and the .3.<uuid>.tmp leftover are not batches.
    assert v1.offset_batches() == [0, 1, 2]
    assert v1.commit_batches() == [0, 1]
    assert v1.latest_planned_batch() == 2
    assert v1.latest_committed_batch() == 1
    assert not v1.state_dir_exists()
    assert v1.offset_log_version(2) == 1
    assert v1.source_ids(2) == ["0"]


def test_v1_planned_offsets(v1: CheckpointReader) -> None:
    assert v1.planned_offsets(0) == {O0: 100, O1: 100, O2: 105, P0: 40}
    assert v1.planned_offsets(2) == {O0: 300, O1: 260, O2: 305, P0: 75, P1: 12}
    assert list(v1.planned_offsets(2)) == sorted(v1.planned_offsets(2)), "sorted for stable tables"


def test_v1_initial_offsets_skip_leading_zero_byte(v1: CheckpointReader) -> None:
    assert (V1 / "sources" / "0" / "0").read_bytes()[:1] == b"\x00"
    assert v1.initial_offsets() == {O0: 0, O1: 0, O2: 5, P0: 0}


def test_v1_start_offsets(v1: CheckpointReader) -> None:
    assert v1.start_offsets(0) == v1.initial_offsets()
    assert v1.start_offsets(1) == v1.planned_offsets(0)
    start = v1.start_offsets(2)
    assert start == v1.planned_offsets(1)
    # The partition added in batch 2 has no recorded start: absent, not guessed.
    assert P1 not in start
    assert P1 in v1.planned_offsets(2)


def test_v1_metadata(v1: CheckpointReader) -> None:
    meta = v1.batch_metadata(1)
    assert meta["batchTimestampMs"] == 1767225610045
    assert meta["batchWatermarkMs"] == 0
    assert meta["conf"]["spark.sql.shuffle.partitions"] == "4"
    assert v1.commit_metadata(1) == {"nextBatchWatermarkMs": 0}


def test_v1_snapshot(v1: CheckpointReader) -> None:
    snap = v1.snapshot()
    assert isinstance(snap, CheckpointSnapshot)
    assert snap.query_id == "5f0c2b7e-9a41-4c3e-8d2a-1b6f3e9c7a10"
    assert (snap.last_committed, snap.last_planned) == (1, 2)
    assert snap.committed_offsets == v1.planned_offsets(1)
    assert snap.planned_offsets == v1.planned_offsets(2)
    assert snap.batch_in_flight
    assert snap.last_commit_time is not None
    assert snap.last_commit_time.tzinfo is not None
    expected = dt.datetime.fromtimestamp(os.path.getmtime(V1 / "commits" / "1"), tz=dt.UTC)
    assert snap.last_commit_time == expected


def test_missing_batch_names_file(v1: CheckpointReader) -> None:
    err = error_of(v1.planned_offsets, 7)
    assert str(V1 / "offsets" / "7") in str(err)
    assert "missing" in str(err)
    err = error_of(v1.commit_metadata, 2)
    assert str(V1 / "commits" / "2") in str(err)


def test_unknown_source_lists_known_ones(v1: CheckpointReader) -> None:
    err = error_of(v1.planned_offsets, 1, 3)
    assert "'3'" in str(err)
    assert "['0']" in str(err)


def test_start_of_batch_whose_previous_offsets_are_gone(tmp_path: Path) -> None:
    root = tmp_path / "cp"
    shutil.copytree(V1, root)
    (root / "offsets" / "1").unlink()
    err = error_of(CheckpointReader(str(root)).start_offsets, 2)
    assert str(root / "offsets" / "1") in str(err)
    assert "minBatchesToRetain" in err.fix


def test_negative_batch_id(v1: CheckpointReader) -> None:
    assert "-1" in str(error_of(v1.start_offsets, -1))


# -- v2 layout ---------------------------------------------------------------------------------


@pytest.fixture
def v2() -> CheckpointReader:
    return CheckpointReader(str(V2))


def test_v2_offsets_are_mapped_by_source_id_not_position(v2: CheckpointReader) -> None:
    # offsets/0 lists source "1" before source "0".
    assert v2.offset_log_version(0) == 2
    assert v2.source_ids(0) == ["1", "0"]
    assert v2.planned_offsets(0) == {C0: 7, C1: 9}
    assert v2.planned_offsets(0, 1) == {VW0: 20}
    assert v2.planned_offsets(0, "1") == {VW0: 20}
    assert v2.planned_offsets(1, 0) == {C0: 15, C1: 9}


def test_v2_void_offset_names_source(v2: CheckpointReader) -> None:
    err = error_of(v2.planned_offsets, 1, 1)
    assert "'-'" in str(err)
    assert "'1'" in str(err)


def test_v2_metadata_commits_and_state(v2: CheckpointReader) -> None:
    assert v2.batch_metadata(1)["batchWatermarkMs"] == 1767225590000
    assert v2.batch_metadata(1)["sourceMetadataInfo"] == {}
    commit = v2.commit_metadata(0)
    assert commit["nextBatchWatermarkMs"] == 1767225590000
    assert "stateUniqueIds" in commit
    assert v2.state_dir_exists()
    assert v2.initial_offsets(1) == {VW0: 10}
    assert v2.start_offsets(0, 1) == {VW0: 10}
    assert v2.start_offsets(1) == {C0: 7, C1: 9}


def test_v2_snapshot(v2: CheckpointReader) -> None:
    snap = v2.snapshot()
    assert (snap.last_committed, snap.last_planned) == (1, 1)
    assert snap.committed_offsets == snap.planned_offsets == {C0: 15, C1: 9}
    assert not snap.batch_in_flight


# -- malformed files ---------------------------------------------------------------------------


@pytest.fixture
def bad() -> CheckpointReader:
    return CheckpointReader(str(BAD))


def test_metadata_without_id(bad: CheckpointReader) -> None:
    err = error_of(bad.query_id)
    assert str(BAD / "metadata") in str(err)
    assert "no id here" in str(err)


@pytest.mark.parametrize(
    ("batch", "named"),
    [
        (0, "'x1'"),  # bad version line
        (1, '{"t":{"0":'),  # truncated JSON
        (3, "'-'"),  # no offset for the source
        (4, "1795314203805"),  # a rate source's offset, not Kafka's
        (5, "'zero'"),  # partition key not a number
        (6, "-2"),  # unresolved earliest
        (7, "no-colon-here"),  # v2 line without source id
        (8, "'v1'"),  # truncated after the version
    ],
)
def test_malformed_offsets_name_file_and_value(bad: CheckpointReader, batch: int, named: str) -> None:
    err = error_of(bad.planned_offsets, batch)
    assert str(BAD / "offsets" / str(batch)) in str(err)
    assert named in str(err)


def test_future_offsets_version_asks_for_upgrade(bad: CheckpointReader) -> None:
    err = error_of(bad.planned_offsets, 2)
    assert "v9" in str(err)
    assert "upgrade" in err.fix


def test_malformed_commits(bad: CheckpointReader) -> None:
    err = error_of(bad.commit_metadata, 0)
    assert str(BAD / "commits" / "0") in str(err)
    assert "nextBatchWatermarkMs:0" in str(err)
    assert "v3" in str(error_of(bad.commit_metadata, 1))
    # Spark reads a commit file without a JSON line as an empty object; so do we.
    assert bad.commit_metadata(2) == {}


def test_malformed_initial_offsets(bad: CheckpointReader) -> None:
    err = error_of(bad.initial_offsets)
    assert str(BAD / "sources" / "0" / "0") in str(err)
    assert "not json" in str(err)


def test_snapshot_of_malformed_checkpoint_fails_loudly(bad: CheckpointReader) -> None:
    assert "metadata" in str(error_of(bad.snapshot))


# -- absent and partial checkpoints ------------------------------------------------------------


def test_absent_checkpoint(tmp_path: Path) -> None:
    reader = CheckpointReader(str(tmp_path / "never-ran"))
    assert not reader.exists()
    assert reader.offset_batches() == []
    assert reader.commit_batches() == []
    assert reader.latest_planned_batch() is None
    assert reader.latest_committed_batch() is None
    assert not reader.state_dir_exists()
    err = error_of(reader.snapshot)
    assert "never-ran" in str(err)
    assert "checkpoint_location" in err.fix
    assert str(tmp_path / "never-ran" / "metadata") in str(error_of(reader.query_id))


def test_first_batch_in_flight(tmp_path: Path) -> None:
    root = tmp_path / "cp"
    (root / "offsets").mkdir(parents=True)
    (root / "sources" / "0").mkdir(parents=True)
    shutil.copy(V1 / "metadata", root / "metadata")
    shutil.copy(V1 / "offsets" / "0", root / "offsets" / "0")
    shutil.copy(V1 / "sources" / "0" / "0", root / "sources" / "0" / "0")
    snap = CheckpointReader(str(root)).snapshot()
    assert snap.last_committed is None
    assert snap.committed_offsets is None
    assert snap.last_commit_time is None
    assert snap.last_planned == 0
    assert snap.batch_in_flight


def test_directories_and_odd_names_are_not_batches(tmp_path: Path) -> None:
    root = tmp_path / "cp"
    shutil.copytree(V1, root)
    (root / "offsets" / "9").mkdir()
    (root / "offsets" / "_spark_metadata").write_text("x")
    (root / "offsets" / "10.bak").write_text("x")
    (root / "offsets" / "\u0661").write_text("x")  # an Arabic-Indic digit is not a batch id
    assert CheckpointReader(str(root)).offset_batches() == [0, 1, 2]


def test_new_batch_visible_to_same_reader(tmp_path: Path) -> None:
    root = tmp_path / "cp"
    shutil.copytree(V1, root)
    reader = CheckpointReader(str(root))
    assert reader.latest_committed_batch() == 1
    (root / "commits" / "2").write_text('v1\n{"nextBatchWatermarkMs":0}')
    assert reader.latest_committed_batch() == 2


def test_initial_offsets_without_leading_zero_and_legacy_bare_json(tmp_path: Path) -> None:
    root = tmp_path / "cp"
    (root / "sources" / "0").mkdir(parents=True)
    (root / "sources" / "1").mkdir(parents=True)
    (root / "sources" / "0" / "0").write_text('v1\n{"t":{"0":3}}')
    (root / "sources" / "1" / "0").write_bytes(b'\x00{"t":{"1":4}}')  # Spark 2.1.0
    reader = CheckpointReader(str(root))
    assert reader.initial_offsets() == {TopicPartition("t", 0): 3}
    assert reader.initial_offsets(1) == {TopicPartition("t", 1): 4}


def test_crlf_and_trailing_newline_are_tolerated(tmp_path: Path) -> None:
    root = tmp_path / "cp"
    (root / "offsets").mkdir(parents=True)
    (root / "offsets" / "0").write_bytes(b'v1\r\n{"batchWatermarkMs":0}\r\n{"t":{"0":3}}\n')
    assert CheckpointReader(str(root)).planned_offsets(0) == {TopicPartition("t", 0): 3}


def test_v1_empty_metadata_line(tmp_path: Path) -> None:
    root = tmp_path / "cp"
    (root / "offsets").mkdir(parents=True)
    (root / "offsets" / "0").write_text('v1\n\n{"t":{"0":3}}')
    reader = CheckpointReader(str(root))
    assert reader.batch_metadata(0) == {}
    assert reader.planned_offsets(0) == {TopicPartition("t", 0): 3}


# -- locations ---------------------------------------------------------------------------------


def test_relative_and_file_url_locations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(DATA)
    assert CheckpointReader("kafka_v1").root == str(V1)
    assert CheckpointReader("kafka_v1/").root == str(V1)
    assert CheckpointReader(f"file://{V1}").query_id() == "5f0c2b7e-9a41-4c3e-8d2a-1b6f3e9c7a10"
    # Spark prints local checkpoint locations as Hadoop-style "file:/path".
    assert CheckpointReader(f"file:{V1}").offset_batches() == [0, 1, 2]


@pytest.mark.parametrize(
    ("given", "normalized"),
    [
        ("s3a://bucket/cp/orders", "s3://bucket/cp/orders"),
        ("S3A://bucket/cp", "s3://bucket/cp"),
        ("s3n://bucket/cp", "s3://bucket/cp"),
        ("s3://bucket/cp", "s3://bucket/cp"),
        ("gs://bucket/cp", "gs://bucket/cp"),
        ("/tmp/s3a://odd", "/tmp/s3a://odd"),
        ("relative/path", "relative/path"),
    ],
)
def test_normalize_location(given: str, normalized: str) -> None:
    assert normalize_location(given) == normalized


def test_missing_filesystem_implementation_is_a_checkpoint_error() -> None:
    try:
        import s3fs  # noqa: F401
    except ImportError:
        err = error_of(CheckpointReader, "s3a://bucket/checkpoints/orders")
        assert "s3a://bucket/checkpoints/orders" in str(err)
        assert "s3fs" in err.fix
    else:
        # s3fs present: the s3a URL must resolve to the s3 filesystem.
        reader = CheckpointReader("s3a://bucket/checkpoints/orders", {"anon": True})
        assert "s3" in reader.fs.protocol
        assert reader.root == "bucket/checkpoints/orders"


@pytest.fixture
def memory_checkpoint() -> Iterator[str]:
    fs = fsspec.filesystem("memory")
    root = f"/eos-test-{uuid.uuid4().hex}"
    for local in V1.rglob("*"):
        if local.is_file():
            fs.pipe_file(f"{root}/{local.relative_to(V1).as_posix()}", local.read_bytes())
    try:
        yield f"memory://{root}"
    finally:
        fs.rm(root, recursive=True)


def test_memory_url(memory_checkpoint: str) -> None:
    reader = CheckpointReader(memory_checkpoint)
    assert reader.exists()
    assert reader.query_id() == "5f0c2b7e-9a41-4c3e-8d2a-1b6f3e9c7a10"
    assert reader.offset_batches() == [0, 1, 2]
    assert reader.commit_batches() == [0, 1]
    assert reader.initial_offsets() == {O0: 0, O1: 0, O2: 5, P0: 0}
    snap = reader.snapshot()
    assert snap.planned_offsets == {O0: 300, O1: 260, O2: 305, P0: 75, P1: 12}
    assert snap.last_commit_time is not None and snap.last_commit_time.tzinfo is not None
    # Errors name the URL the operator configured, scheme included.
    err = error_of(reader.planned_offsets, 9)
    assert f"{memory_checkpoint}/offsets/9" in str(err)


def test_fs_and_root_let_repair_code_move_files(memory_checkpoint: str) -> None:
    reader = CheckpointReader(memory_checkpoint)
    reader.fs.mv(reader.path("commits", "1"), reader.path("backup-commits-1"))
    assert reader.latest_committed_batch() == 0
    assert reader.path("offsets", "2") == f"{reader.root}/offsets/2"


def test_storage_options_reach_filesystem(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, object] = {}
    real = fsspec.core.url_to_fs

    def spy(url: str, **options: object):  # type: ignore[no-untyped-def]
        seen.update(options, url=url)
        return real("memory://x")

    monkeypatch.setattr(fsspec.core, "url_to_fs", spy)
    CheckpointReader("s3a://bucket/cp", {"key": "k", "client_kwargs": {"endpoint_url": "http://minio"}})
    assert seen == {"url": "s3://bucket/cp", "key": "k", "client_kwargs": {"endpoint_url": "http://minio"}}



def test_webhdfs_commit_time_is_utc_whatever_the_local_time_zone(
    new_york_time: None, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # fsspec's WebHDFS itself (no NameNode: its GETFILESTATUS answer is given): its modified() is
    # a naive local time, which read as UTC put the last commit hours off on this worker.
    committed = dt.datetime(2026, 1, 15, 12, 0, 0, 250_000, tzinfo=dt.UTC)
    reader = CheckpointReader("webhdfs://namenode.example:9870/eos/ck", {"user": "eos"})
    status = {"type": "FILE", "length": 30, "modificationTime": int(committed.timestamp() * 1000)}
    monkeypatch.setattr(reader.fs, "info", lambda path: reader.fs._process_info({**status, "name": path}))
    assert reader.commit_time(0) == committed


def test_a_naive_time_from_a_local_time_filesystem_is_converted_from_local_time(new_york_time: None) -> None:
    naive = dt.datetime(2026, 7, 1, 8, 0)  # 08:00 in New York in summer (EDT, UTC-4)
    assert _as_utc(naive, "f", naive_is_local=True) == dt.datetime(2026, 7, 1, 12, 0, tzinfo=dt.UTC)
    assert _as_utc(naive.isoformat(), "f", naive_is_local=True) == dt.datetime(2026, 7, 1, 12, 0, tzinfo=dt.UTC)
    # Elsewhere (memory, object stores) a naive time means UTC, and an aware one is kept.
    assert _as_utc(naive, "f") == dt.datetime(2026, 7, 1, 8, 0, tzinfo=dt.UTC)
    aware = dt.datetime(2026, 7, 1, 8, 0, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert _as_utc(aware, "f", naive_is_local=True) == dt.datetime(2026, 7, 1, 6, 0, tzinfo=dt.UTC)
    assert {"webhdfs", "swebhdfs"} <= NAIVE_LOCAL_TIME_PROTOCOLS


def test_local_commit_time_is_the_file_mtime_in_a_non_utc_zone(new_york_time: None, v1: CheckpointReader) -> None:
    expected = dt.datetime.fromtimestamp(os.path.getmtime(V1 / "commits" / "1"), tz=dt.UTC)
    assert v1.commit_time(1) == expected


def test_missing_commit_file_has_no_time(v1: CheckpointReader) -> None:
    err = error_of(v1.commit_time, 7)
    assert "commits/7" in str(err) and "missing" in str(err)
