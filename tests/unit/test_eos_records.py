"""The package's records under ``<checkpoint>/eos``: how a record replaces the one there.

A local checkpoint stages the record and renames it into place; anything else (HDFS, object
stores) rewrites it in place. The same on real HDFS: tests/yarn/test_hdfs_checkpoint_records.py.
"""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path

import fsspec
import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader, eos_records
from airflow_provider_eos.core.checkpoint.eos_records import read_eos_record, read_through_rewrite, write_eos_record
from airflow_provider_eos.core.errors import CheckpointError
from airflow_provider_eos.core.spec import Writers
from airflow_provider_eos.core.writers_choice import WritersChoice, read_writers_choice, record_writers_choice


def choice(writers: Writers) -> WritersChoice:
    return WritersChoice(writers=writers, requested=Writers.AUTO, reason="test", query_id="q1", batch_id=0,
                         decided_at=dt.datetime.now(dt.UTC))


@pytest.fixture
def memory_checkpoint() -> Iterator[CheckpointReader]:
    root = f"/eos-records-{uuid.uuid4().hex}"
    try:
        yield CheckpointReader(f"memory://{root}")
    finally:
        fsspec.filesystem("memory").rm(root, recursive=True)


def test_a_later_choice_replaces_the_record_on_a_local_checkpoint(tmp_path: Path) -> None:
    checkpoint = CheckpointReader(str(tmp_path))
    record_writers_choice(checkpoint, choice(Writers.EXECUTORS))
    record_writers_choice(checkpoint, choice(Writers.DRIVER))
    recorded = read_writers_choice(checkpoint)
    assert recorded is not None and recorded.writers is Writers.DRIVER
    assert sorted(p.name for p in (tmp_path / "eos").iterdir()) == ["writers.json"]


def test_a_rename_that_leaves_the_staged_record_is_a_checkpoint_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As fsspec's WebHDFS did on HDFS: the NameNode answered "false" and mv returned as if done.
    checkpoint = CheckpointReader(str(tmp_path))
    write_eos_record(checkpoint, "writers.json", "first", writer="q1")
    monkeypatch.setattr(checkpoint.fs, "mv", lambda source, target, **kwargs: None)
    with pytest.raises(CheckpointError) as caught:
        write_eos_record(checkpoint, "writers.json", "second", writer="q1")
    assert f"{tmp_path}/eos/writers.json.q1.tmp" in caught.value.message
    assert f"{tmp_path}/eos/writers.json " in caught.value.message
    assert caught.value.fix


def test_a_rename_that_raises_is_a_checkpoint_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkpoint = CheckpointReader(str(tmp_path))

    def refuse(source: str, target: str, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", target)

    monkeypatch.setattr(checkpoint.fs, "mv", refuse)
    with pytest.raises(CheckpointError, match=r"writers\.json.*Permission denied"):
        write_eos_record(checkpoint, "writers.json", "text", writer="q1")


def test_elsewhere_the_record_is_rewritten_in_place(
    memory_checkpoint: CheckpointReader, monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_rename(source: str, target: str, **kwargs: object) -> None:
        raise AssertionError(f"renamed {source} onto {target}: HDFS cannot rename over a file")

    monkeypatch.setattr(memory_checkpoint.fs, "mv", no_rename)
    write_eos_record(memory_checkpoint, "writers.json", "first", writer="q1")
    write_eos_record(memory_checkpoint, "writers.json", "second", writer="q2")
    assert read_eos_record(memory_checkpoint, "writers.json", "the writers record") == "second"
    assert memory_checkpoint.fs.ls(memory_checkpoint.path("eos"), detail=False) == [
        memory_checkpoint.path("eos", "writers.json")]


def test_a_record_read_inside_a_rewrite_in_place_is_read_again_until_whole(
    memory_checkpoint: CheckpointReader, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # HDFS rewrites writers.json in place at each run's first batch: a reader meets it empty, then
    # as a missing block (WebHDFS' RuntimeError, an OSError through the reader), then whole.
    record_writers_choice(memory_checkpoint, choice(Writers.EXECUTORS))
    real = memory_checkpoint.fs.cat_file
    reads = iter([b"", RuntimeError("Block could not be located")])

    def rewriting(path: str, *args: object, **kwargs: object) -> bytes:
        step = next(reads, None)
        if isinstance(step, Exception):
            raise step
        return real(path, *args, **kwargs) if step is None else step

    monkeypatch.setattr(memory_checkpoint.fs, "cat_file", rewriting)
    recorded = read_writers_choice(memory_checkpoint)
    assert recorded is not None and recorded.writers is Writers.EXECUTORS


def test_a_record_that_stays_malformed_is_its_own_checkpoint_error_after_the_rereads(
    memory_checkpoint: CheckpointReader, monkeypatch: pytest.MonkeyPatch,
) -> None:
    write_eos_record(memory_checkpoint, "writers.json", "{}", writer="q1")
    real = memory_checkpoint.fs.cat_file
    reads: list[str] = []

    def counted(path: str, *args: object, **kwargs: object) -> bytes:
        reads.append(path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(memory_checkpoint.fs, "cat_file", counted)
    monkeypatch.setattr(eos_records, "RECORD_REWRITE_REREAD", eos_records.RECORD_REWRITE_REREAD.bounded(timeout_s=0.3))
    with pytest.raises(CheckpointError, match=r"writers\.json is not this package's record") as caught:
        read_writers_choice(memory_checkpoint)
    assert caught.value.fix and not caught.value.retryable
    assert len(reads) > 1, "read again before it is called malformed"


def test_a_local_record_is_read_once(tmp_path: Path) -> None:
    checkpoint = CheckpointReader(str(tmp_path))
    calls: list[int] = []

    def malformed() -> None:
        calls.append(1)
        raise CheckpointError("half a record", fix="none")

    with pytest.raises(CheckpointError, match="half a record"):
        read_through_rewrite(checkpoint, malformed, what="read a record")
    assert calls == [1], "renamed into place, a local record is never half-written: no reread"
