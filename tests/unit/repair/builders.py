"""Spark checkpoints written in Spark's on-disk format, and views of a folder before and after a repair."""

from __future__ import annotations

import json
import posixpath
import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

import fsspec

from airflow_provider_eos.core.markers import BatchMarker, CommittedOffset, CommittedOffsets
from airflow_provider_eos.core.repair import BACKUP_INFIX
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition

Q = "0b5c3e1a-8d2f-4e6a-9c1b-7f3e5a2d4c60"
T = "in"
TP0 = TopicPartition(T, 0)
TP1 = TopicPartition(T, 1)
NOW = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
STAMP = "20240102T030405Z"


def end_offsets(batch: int, partitions: int = 2) -> OffsetMap:
    """offsets/N used throughout: partition p of batch N ends at 100*(N+1) + p."""
    return {TopicPartition(T, p): 100 * (batch + 1) + p for p in range(partitions)}


def write_checkpoint(  # noqa: C901  # one if per optional checkpoint part a test asks for
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


def marked(offsets: Mapping[TopicPartition, int], batch: int, query_id: str = Q) -> CommittedOffsets:
    metadata = BatchMarker(query_id, batch).encode()
    return {tp: CommittedOffset(offset, metadata) for tp, offset in offsets.items()}
