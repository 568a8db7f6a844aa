"""The health sensor and its trigger against a checkpoint whose storage fails, on the real broker.

A storage failure while a sample reads the checkpoint (WebHDFS' errors, which the checkpoint
reader turns into ``OSError``; ``requests``' and s3fs' errors are ``OSError`` already) used to
escape both: the sensor failed with no ``watch_outcome``, the trigger died without an event, and
``stop_stream``, reading no outcome as "a person marked the watch failed", stopped a healthy
driver. And ``eos/writers.json``, rewritten in place off a local checkpoint at each run's first
batch, read empty by a sample was a non-retryable ``CheckpointError`` that ended the watch.

Real parts: the broker, the sink group's offsets, the sensor, the trigger and ``stop_stream``'s
operator; the checkpoint's filesystem is fsspec's (local, or ``memory://`` for a checkpoint that
is not local), with the failure put into its reads.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fsspec
import pendulum
import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, AirflowSkipException
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from airflow_provider_eos.core.health import WATCH_OUTCOME_XCOM_KEY, stops_the_driver
from airflow_provider_eos.core.spec import Writers
from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
from airflow_provider_eos.triggers.health import StreamingQueryHealthTrigger
from tests.support.checkpointed_pipeline import LAST_COMMITTED, CheckpointedPipeline, checkpointed_pipeline

pytestmark = pytest.mark.integration


class _TaskInstance:
    """What the sensor pushes, and what stop_stream pulls of it."""

    dag_id, task_id = "eos_pipeline__orders", "watch_stream"

    def __init__(self) -> None:
        self.pushed: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        self.pushed[key] = value

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        return self.pushed.get(key) if task_ids == "watch_stream" else None


@pytest.fixture
def pipeline(bootstrap: str, topic_factory: Callable[..., str], tmp_path: Path) -> CheckpointedPipeline:
    """A healthy pipeline at rest: batches 0..3 committed, the group at batch 3, all input read, writers recorded."""
    made = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem="storage", trigger="10 seconds")
    made.produce_input_of(LAST_COMMITTED)
    made.commit_group(LAST_COMMITTED)
    made.record_writers(Writers.EXECUTORS)
    return made


def _watch(spec_path: Path, **kwargs: Any) -> StreamingQueryHealthSensor:
    return StreamingQueryHealthSensor(task_id="watch_stream", spec_path=str(spec_path), watch="watch", **kwargs)


def _trigger(spec_path: Path, **kwargs: Any) -> StreamingQueryHealthTrigger:
    return StreamingQueryHealthTrigger(spec_path=str(spec_path), watch="watch",
                                       committed_after=pendulum.now("UTC").isoformat(), **kwargs)


def _first_event(trigger: StreamingQueryHealthTrigger) -> dict[str, Any]:
    async def first() -> dict[str, Any]:
        return (await asyncio.wait_for(anext(trigger.run()), 120)).payload

    return asyncio.run(first())


def _stop_stream(spec_path: Path, ti: _TaskInstance) -> None:
    from airflow_provider_eos.operators.driver import StopPipelineDriverOperator

    stop = StopPipelineDriverOperator(task_id="stop_stream", spec_path=str(spec_path),
                                      submit_task_ids=["submit_stream"], watch_task_id="watch_stream")
    stop.execute({"ti": ti, "run_id": "r"})


def _namenode_error(real: Callable[..., Any]) -> Callable[..., Any]:
    """``cat_file`` failing for the writers record as fsspec's WebHDFS fails for a RemoteException it cannot type."""
    def cat_file(self: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        if str(path).endswith("eos/writers.json"):
            raise RuntimeError(f"Block could not be located. Path={path}, offset=0")
        return real(self, path, *args, **kwargs)

    return cat_file


def _unreachable(real: Callable[..., Any]) -> Callable[..., Any]:
    """``ls`` failing as an object store or WebHDFS over ``requests`` fails when its endpoint drops the connection."""
    def ls(self: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        if "/commits" in str(path):
            raise ConnectionError(104, "Connection reset by peer")
        return real(self, path, *args, **kwargs)

    return ls


@pytest.mark.parametrize(("method", "fault", "named"), [
    ("cat_file", _namenode_error, "Block could not be located"),
    ("ls", _unreachable, "Connection reset by peer"),
], ids=["namenode-error", "connection-reset"])
def test_a_storage_failure_is_a_retryable_error_outcome_and_stop_stream_leaves_the_stream_running(
        pipeline: CheckpointedPipeline, monkeypatch: pytest.MonkeyPatch, method: str,
        fault: Callable[[Callable[..., Any]], Callable[..., Any]], named: str) -> None:
    monkeypatch.setattr(LocalFileSystem, method, fault(getattr(LocalFileSystem, method)))

    ti = _TaskInstance()
    with pytest.raises(AirflowException) as raised:
        _watch(pipeline.spec_path)._check({"ti": ti, "run_id": "r"})
    assert not isinstance(raised.value, AirflowFailException), "the storage may answer when Airflow retries"
    message = str(raised.value)
    assert f"reading the checkpoint at {str(pipeline.checkpoint)!r} failed" in message and named in message, message
    assert ti.pushed[WATCH_OUTCOME_XCOM_KEY] == "error" and not stops_the_driver(ti.pushed[WATCH_OUTCOME_XCOM_KEY])
    with pytest.raises(AirflowSkipException, match="the driver is left running"):
        _stop_stream(pipeline.spec_path, ti)

    payload = _first_event(_trigger(pipeline.spec_path, poke_interval=0.1, max_probe_failures=2))
    assert payload["outcome"] == "error" and payload["retryable"] is True, payload
    assert payload["message"].startswith("2 health samples in a row failed") and named in payload["message"], payload


@pytest.fixture
def memory_pipeline(pipeline: CheckpointedPipeline) -> Iterator[CheckpointedPipeline]:
    """The same pipeline with its checkpoint on ``memory://``: not local, so its records are rewritten in place."""
    memory = fsspec.filesystem("memory")
    root = f"/health-storage-{uuid.uuid4().hex[:8]}"
    memory.put(str(pipeline.checkpoint), root, recursive=True)
    spec = pipeline.spec.with_overrides(checkpoint_location=f"memory://{root}")
    pipeline.spec_path.write_text(spec.to_json())
    try:
        yield pipeline
    finally:
        memory.rm(root, recursive=True)


def test_a_writers_record_caught_while_rewritten_in_place_is_read_again_within_the_sample(
        memory_pipeline: CheckpointedPipeline, monkeypatch: pytest.MonkeyPatch) -> None:
    # HDFS rewrites eos/writers.json in place at each run's first batch; a read inside the rewrite
    # meets an empty file. Each sample below meets it twice, then the record whole.
    real = MemoryFileSystem.cat_file
    empty_reads: dict[str, int] = {}

    def rewriting(self: Any, path: str, *args: Any, **kwargs: Any) -> Any:
        if str(path).endswith("eos/writers.json"):
            empty_reads[str(path)] = empty_reads.get(str(path), 0) + 1
            if empty_reads[str(path)] % 3:
                return b""
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "cat_file", rewriting)

    ti = _TaskInstance()
    report = _watch(memory_pipeline.spec_path)._check({"ti": ti, "run_id": "r"})
    assert report.writers is not None and report.writers.writers is Writers.EXECUTORS, report.writers
    assert report.last_committed == LAST_COMMITTED and report.is_healthy, report.to_dict()
    assert WATCH_OUTCOME_XCOM_KEY not in ti.pushed and sum(empty_reads.values()) >= 3, empty_reads

    timeout_at = pendulum.now("UTC").add(seconds=4).isoformat()
    payload = _first_event(_trigger(memory_pipeline.spec_path, poke_interval=1, timeout_at=timeout_at))
    assert payload["outcome"] == "timeout", payload
    assert "the last sample failed" not in payload["message"] and payload["report"] is not None, payload
