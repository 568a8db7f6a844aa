"""Health signals against the real broker: a stuck group, commits that do not move, an open
transaction that lingers and pins an output partition, and ``eos health``'s exit codes.

The checkpoints are written by hand in Spark's format (batches 0..3; ``offsets/N`` of partition
``p`` ends at ``10*(N+1) + p``); the input records, the sink group's offsets and markers and the
open transactions are real.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.health import HealthStatus, LagStatus, LagWindow
from airflow_provider_eos.core.presentation import health_text
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka import health_probe
from airflow_provider_eos.kafka.transaction_actions import fence
from airflow_provider_eos.usecases import health as health_usecase
from tests.integration.test_transactions_recovery import open_transaction_and_sigkill
from tests.support.checkpointed_pipeline import LAST_COMMITTED, CheckpointedPipeline, checkpointed_pipeline

pytestmark = pytest.mark.integration

EOS = Path(sys.executable).with_name("eos")


@pytest.fixture
def make_pipeline(tmp_path: Path, bootstrap: str, topic_factory) -> Callable[..., CheckpointedPipeline]:
    def make(*, transaction_timeout_ms: int = 60_000) -> CheckpointedPipeline:
        return checkpointed_pipeline(
            bootstrap,
            topic_factory,
            tmp_path,
            stem="health",
            dlq_topic=topic_factory("health-dlq", partitions=1),
            trigger="1 second",
            transaction_timeout_ms=transaction_timeout_ms,
        )

    return make


def window_of(spec: PipelineSpec, samples: int, gap_s: float, between=None) -> LagWindow:
    window = LagWindow()
    for index in range(samples):
        if index:
            time.sleep(gap_s)
            if between is not None:
                between(index)
        window.add(health_probe.probe(spec))
    return window


def eos(*args: str) -> subprocess.CompletedProcess[str]:
    assert EOS.exists(), f"the eos entry point is not installed next to {sys.executable}"
    return subprocess.run([str(EOS), *args], capture_output=True, text=True, timeout=300, check=False)


# -- lag rules on a real group -----------------------------------------------------------------


def test_group_lagging_and_not_committing_is_stop(make_pipeline) -> None:
    pipeline = make_pipeline()
    pipeline.produce_input({0: 100, 1: 100})
    pipeline.commit_group(LAST_COMMITTED)  # IN_SYNC with the checkpoint, 60 records behind per partition

    window = window_of(pipeline.spec, samples=3, gap_s=1.2)
    report = health_usecase.evaluate(pipeline.spec, window, thresholds={"stop_after_ms": 2_000})

    assert {row.tp.partition: (row.status, row.lag, row.commits) for row in report.partitions} == {
        0: (LagStatus.STOP, 60, 0),
        1: (LagStatus.STOP, 59, 0),
    }
    assert report.verification is not None and report.verification.verdict == "IN_SYNC"
    assert report.status is HealthStatus.UNHEALTHY and not report.is_healthy
    latest = window.latest
    assert latest is not None
    assert {(i.tp.partition, i.lso, i.committed, i.marker_batch, i.log_start) for i in latest.inputs} == {
        (0, 100, 40, 3, 0),
        (1, 100, 41, 3, 0),
    }
    assert {(o.tp.topic, o.role, o.lso, o.hwm) for o in latest.outputs} == {
        (pipeline.output_topic, "output", 0, 0),
        (pipeline.spec.dlq_topic, "dlq", 0, 0),
    }
    assert "STOP" in health_text(report)


def test_commits_that_do_not_move_the_offset_are_stall(make_pipeline) -> None:
    pipeline = make_pipeline()
    pipeline.produce_input({0: 100, 1: 100})
    pipeline.commit_group(LAST_COMMITTED)

    # Between samples the "sink" commits batches 4 and 5, but with batch 3's offsets.
    window = window_of(
        pipeline.spec, samples=3, gap_s=0.2, between=lambda i: pipeline.commit_group(LAST_COMMITTED + i, LAST_COMMITTED)
    )
    report = health_usecase.evaluate(pipeline.spec, window)

    assert {row.tp.partition: (row.status, row.commits, row.marker_batch) for row in report.partitions} == {
        0: (LagStatus.STALL, 2, 5),
        1: (LagStatus.STALL, 2, 5),
    }
    assert report.status is HealthStatus.UNHEALTHY
    # The markers name batches the checkpoint never planned: verification says so too.
    assert report.verification is not None and report.verification.verdict == "DIVERGED"


def test_caught_up_group_is_healthy(make_pipeline) -> None:
    pipeline = make_pipeline()
    pipeline.produce_input({0: 40, 1: 41})  # exactly offsets/3
    pipeline.commit_group(LAST_COMMITTED)

    report = health_usecase.evaluate(pipeline.spec, window_of(pipeline.spec, samples=2, gap_s=0.2))

    assert report.status is HealthStatus.HEALTHY, health_text(report)
    assert [row.lag for row in report.partitions] == [0, 0]
    assert report.last_committed == LAST_COMMITTED and report.commit_age_ms is not None


# -- open transactions -------------------------------------------------------------------------


@pytest.mark.compat
def test_open_transaction_under_the_prefix_older_than_the_timeout_is_lingering(make_pipeline) -> None:
    pipeline = make_pipeline(transaction_timeout_ms=3_000)
    txn_id = pipeline.spec.transactional_id(0)
    # A driver killed mid-batch; its producer registered a long timeout, so the broker keeps the
    # transaction open, but no batch of this pipeline (3s timeout) legitimately lasts that long.
    open_transaction_and_sigkill(pipeline.bootstrap, txn_id, pipeline.output_topic, 0, timeout_ms=600_000)
    try:
        young = health_probe.probe(pipeline.spec)
        report = health_usecase.evaluate(pipeline.spec, LagWindow([young]), thresholds={"lingering_after_ms": 600_000})
        assert [(t.transactional_id, t.state, t.lingering) for t in report.transactions] == [(txn_id, "Ongoing", False)]
        assert not [f for f in report.findings if f.signal == "lingering"]

        time.sleep(3.5)
        report = health_usecase.evaluate(pipeline.spec, LagWindow([health_probe.probe(pipeline.spec)]))
        (row,) = report.transactions
        assert row.lingering and row.limit_ms == 3_000 and row.age_ms is not None and row.age_ms > 3_000
        assert row.partitions == (TopicPartition(pipeline.output_topic, 0),)
        (found,) = [f for f in report.findings if f.signal == "lingering"]
        assert found.status is HealthStatus.UNHEALTHY and found.subject == txn_id
        assert report.status is HealthStatus.UNHEALTHY
        assert "Open transactions under the prefix" in health_text(report)
    finally:
        fence(pipeline.spec, txn_id)


def test_output_partition_with_an_open_transaction_shows_a_gap_that_hangs_when_it_does_not_move(
    make_pipeline,
) -> None:
    pipeline = make_pipeline()
    txn_id = pipeline.spec.transactional_id(0)
    open_transaction_and_sigkill(pipeline.bootstrap, txn_id, pipeline.output_topic, 0, timeout_ms=600_000)
    try:
        window = window_of(pipeline.spec, samples=3, gap_s=0.8)
        gaps = {(g.tp.topic, g.tp.partition): g for g in health_usecase.evaluate(pipeline.spec, window).gaps}
        pinned = gaps[(pipeline.output_topic, 0)]
        # The producer wrote 3 records; the LSO stays before them.
        assert (pinned.role, pinned.lso, pinned.hwm, pinned.gap, pinned.state) == ("output", 0, 3, 3, "pinned")
        assert gaps[(pipeline.output_topic, 1)].state == "ok"

        report = health_usecase.evaluate(pipeline.spec, window, thresholds={"hang_after_ms": 1_000})
        hanging = {(g.tp.topic, g.tp.partition): g.state for g in report.gaps}
        assert hanging[(pipeline.output_topic, 0)] == "hanging"
        (found,) = [f for f in report.findings if f.signal == "hanging"]
        assert found.subject == f"{pipeline.output_topic}-0 (output)" and report.status is HealthStatus.UNHEALTHY
    finally:
        fence(pipeline.spec, txn_id)

    # Once aborted (the coordinator writes the abort markers asynchronously), the gap closes.
    deadline = time.monotonic() + 30
    while True:
        after = health_probe.probe(pipeline.spec)
        out = next(o for o in after.outputs if o.tp == TopicPartition(pipeline.output_topic, 0))
        if out.lso == out.hwm or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert out.lso == out.hwm == 4  # 3 aborted records and the abort marker


# -- eos health --------------------------------------------------------------------------------


def test_eos_health_exit_codes_text_and_json(make_pipeline, tmp_path: Path) -> None:
    pipeline = make_pipeline()
    pipeline.produce_input({0: 40, 1: 41})
    pipeline.commit_group(LAST_COMMITTED)

    healthy = eos("health", "--spec", str(pipeline.spec_path))
    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert f"Health of pipeline '{pipeline.spec.name}': HEALTHY" in healthy.stdout
    assert "Last stable offset vs high watermark" in healthy.stdout

    pipeline.commit_group(1)  # the output of batches 2 and 3 is missing: KAFKA_BEHIND
    behind = eos("health", "--spec", str(pipeline.spec_path), "--json")
    assert behind.returncode == 1, behind.stdout + behind.stderr
    data: dict[str, Any] = json.loads(behind.stdout)
    assert data["status"] == "UNHEALTHY" and data["is_healthy"] is False
    assert data["verification"]["verdict"] == "KAFKA_BEHIND"
    assert any(f["signal"] == "verification" and f["status"] == "UNHEALTHY" for f in data["findings"])

    pipeline.commit_group(LAST_COMMITTED)
    pipeline.produce_input({0: 10})
    stopped = eos(
        "health", "--spec", str(pipeline.spec_path), "--json", "--samples", "3", "--interval", "1",
        "--threshold", "stop_after_ms=1500",
    )
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    rows = {row["partition"]: row["status"] for row in json.loads(stopped.stdout)["partitions"]}
    assert rows == {0: "STOP", 1: "OK"}

    missing = eos("health", "--spec", str(tmp_path / "nope.yaml"), "--json")
    assert missing.returncode == 2 and json.loads(missing.stdout)["error"] == "SpecError"
    bad = eos("health", "--spec", str(pipeline.spec_path), "--threshold", "stop_after=5")
    assert bad.returncode == 2 and "unknown health threshold" in bad.stderr
