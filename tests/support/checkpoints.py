"""Write Spark checkpoints by hand, in Spark's on-disk format, for tests that need no Spark run.

The format is the one ``core/checkpoint/formats.py`` documents (and tests/unit/test_checkpoint.py
checks against files Spark wrote): ``metadata``, ``sources/0/0`` with its 0x00 prefix,
``offsets/N`` v1 (version line, batch metadata line, Kafka source offset line, no trailing
newline), ``commits/N`` v1, and Hadoop ``.<name>.crc`` sidecars.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition


def batch_end_offsets(topic: str, batch: int, partitions: int) -> OffsetMap:
    """``offsets/N`` used by the helpers: partition ``p`` of batch ``N`` ends at ``10*(N+1) + p``."""
    return {TopicPartition(topic, p): 10 * (batch + 1) + p for p in range(partitions)}


def write_checkpoint(
    root: Path,
    *,
    topic: str,
    partitions: int,
    query_id: str,
    offsets: Iterable[int],
    commits: Iterable[int],
) -> Path:
    """Write a stateless checkpoint of one Kafka source reading ``topic``.

    :param root: the checkpoint folder (created).
    :param offsets: batches with an ``offsets/`` file.
    :param commits: batches with a ``commits/`` file.
    :return: ``root``.
    """

    def put(relative: str, data: bytes) -> None:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        (path.parent / f".{path.name}.crc").write_bytes(b"crc\x00" + path.name.encode())

    put("metadata", json.dumps({"id": query_id}).encode())
    initial = {topic: {str(p): 0 for p in range(partitions)}}
    put("sources/0/0", b"\x00v1\n" + json.dumps(initial, separators=(",", ":")).encode())
    # Planned just now, as a job that ran: a batch planned longer ago than offsets.retention.minutes is the
    # expiry tests' own case (the sink and verify then distrust an empty group).
    planned_ms = int(time.time() * 1000)
    for batch in offsets:
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": planned_ms + batch, "conf": {}}
        ends = {topic: {str(tp.partition): o for tp, o in batch_end_offsets(topic, batch, partitions).items()}}
        line = json.dumps(ends, separators=(",", ":"))
        put(f"offsets/{batch}", f"v1\n{json.dumps(meta, separators=(',', ':'))}\n{line}".encode())
    for batch in commits:
        put(f"commits/{batch}", b'v1\n{"nextBatchWatermarkMs":0}')
    return root


def date_batch_back(root: Path, batch: int, age_ms: int) -> None:
    """Move ``offsets/batch``'s planning time (``batchTimestampMs``) ``age_ms`` back, as if the job had stopped then.

    Its Hadoop checksum goes too: the local file system checks a file against one that is there.
    """
    path = root / "offsets" / str(batch)
    version, metadata, *sources = path.read_text().split("\n")
    planned = json.loads(metadata)
    planned["batchTimestampMs"] = int(time.time() * 1000) - age_ms
    path.write_text("\n".join([version, json.dumps(planned, separators=(",", ":")), *sources]))
    (path.parent / f".{batch}.crc").unlink(missing_ok=True)


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path, for before/after comparisons."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
