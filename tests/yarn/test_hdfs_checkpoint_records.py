"""The checkpoint reader and the eos records on real HDFS (the session's MiniYARNCluster, over WebHDFS), no Spark.

HDFS differs from a local checkpoint where these tests look: it cannot rename over an existing
file, and fsspec's WebHDFS reports modification times as naive local times.
"""

from __future__ import annotations

import datetime as dt
import os
import uuid

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.spec import Writers
from airflow_provider_eos.core.writers_choice import WritersChoice, read_writers_choice, record_writers_choice
from airflow_provider_eos.devstack.yarn import YarnClusterInfo
from airflow_provider_eos.usecases.liveness import last_commit_time

pytestmark = [pytest.mark.integration]


def hdfs_checkpoint(info: YarnClusterInfo, what: str) -> CheckpointReader:
    checkpoint = CheckpointReader(f"{info.namenode_url}/eos/{what}-{uuid.uuid4().hex[:8]}/checkpoint")
    assert not checkpoint.is_local
    return checkpoint



def test_a_later_runs_writers_choice_replaces_the_first_and_leaves_no_staged_file(on_yarn: YarnClusterInfo) -> None:
    checkpoint = hdfs_checkpoint(on_yarn, "writers")

    def choice(writers: Writers, query_id: str) -> WritersChoice:
        return WritersChoice(writers=writers, requested=Writers.AUTO, reason="test", query_id=query_id,
                             batch_id=0, decided_at=dt.datetime.now(dt.UTC))

    record_writers_choice(checkpoint, choice(Writers.EXECUTORS, "q1"))
    record_writers_choice(checkpoint, choice(Writers.DRIVER, "q1"))  # a later run of the same query
    recorded = read_writers_choice(checkpoint)
    assert recorded is not None and recorded.writers is Writers.DRIVER
    held = sorted(os.path.basename(p) for p in checkpoint.fs.ls(checkpoint.path("eos"), detail=False))
    assert held == ["writers.json"]


def test_the_last_commit_time_is_utc_on_a_worker_not_in_utc(on_yarn: YarnClusterInfo, new_york_time: None) -> None:
    checkpoint = hdfs_checkpoint(on_yarn, "commit-time")
    checkpoint.fs.makedirs(checkpoint.path("commits"), exist_ok=True)
    with checkpoint.fs.open(checkpoint.path("metadata"), "wb") as out:
        out.write(b'{"id":"q"}')
    before = dt.datetime.now(dt.UTC)
    with checkpoint.fs.open(checkpoint.path("commits", "0"), "wb") as out:
        out.write(b'v1\n{"nextBatchWatermarkMs":0}')
    after = dt.datetime.now(dt.UTC)
    # The NameNode runs on this machine: its clock is the test's (HDFS keeps milliseconds).
    got = last_commit_time(checkpoint)
    assert got is not None
    assert before - dt.timedelta(seconds=1) <= got <= after + dt.timedelta(seconds=1), (got, before)
    modification_ms = checkpoint.fs.info(checkpoint.path("commits", "0"))["modificationTime"]
    assert got == dt.datetime.fromtimestamp(modification_ms / 1000, tz=dt.UTC)
