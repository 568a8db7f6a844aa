"""Health while a long driver-writer batch spills: real broker, real Spark.

The driver writer's batch first runs its Spark job, whose tasks spill the output under the checkpoint,
and only then opens its transaction and produces; no commit shows until the end. A batch longer than
the stop threshold (four cycles) that keeps spilling is a job making progress: a watch that found it
UNHEALTHY would have ``stop_stream`` send SIGTERM to a healthy driver, and the next run replays the same
long batch. Here batch 1 has four input partitions whose tasks (one at a time, ``local[1]``) each take
16 s, against a stop threshold of 40 s (a 10 s transaction timeout, a 1 s trigger).
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from airflow_provider_eos.core.health import HealthStatus, LagWindow, WatchMode, watch_outcome
from airflow_provider_eos.core.presentation import health_text
from airflow_provider_eos.usecases import health as health_usecase
from airflow_provider_eos.usecases.clients import PipelineClients
from tests.support.kafka import client_settings
from tests.support.pipeline import PipelineHarness, kill_group, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.spark]

PARTITIONS = 4
#: Each slow task's sleep: four of them one after another make batch 1 last longer than the stop threshold.
TASK_S = 16


def _produce_one_per_partition(harness: PipelineHarness, value: bytes) -> None:
    producer = Producer(client_settings(harness.bootstrap))
    for partition in range(PARTITIONS):
        producer.produce(harness.input_topic, value=value, key=b"k%d" % partition, partition=partition)
    assert producer.flush(30) == 0


def test_a_driver_writer_batch_that_keeps_spilling_past_the_stop_threshold_is_not_unhealthy(bootstrap, tmp_path):
    harness = PipelineHarness(bootstrap, tmp_path, transform="tests.support.transforms:slow_values",
                              partitions=PARTITIONS, trigger="1 second", writers="driver", master="local[1]",
                              transaction_timeout_ms=10_000)
    spec = harness.spec
    checkpoint = harness.checkpoint()
    _produce_one_per_partition(harness, b"fast")
    watch_started_ms = int(time.time() * 1000)
    process, log_path = harness.start()
    try:
        assert wait_for(lambda: checkpoint.exists() and checkpoint.latest_committed_batch() == 0, 240), (
            log_path.read_text(errors="replace")[-4000:])
        _produce_one_per_partition(harness, b"slow:%d" % TASK_S)
        assert wait_for(lambda: checkpoint.latest_planned_batch() == 1, 60)

        # Sample as the sensor and its trigger do, every 4 s, while batch 1 runs.
        window = LagWindow(max_samples=20)
        reports = []
        while checkpoint.latest_committed_batch() == 0 and len(reports) < 30:
            window.add(health_usecase.sample(PipelineClients(spec, {})))
            if window.latest is not None and window.latest.last_committed == 0:
                reports.append(health_usecase.evaluate(spec, window))
            time.sleep(4)
        assert wait_for(lambda: checkpoint.latest_committed_batch() == 1, 120), (
            log_path.read_text(errors="replace")[-4000:])
    finally:
        kill_group(process)

    stop_after_ms = reports[-1].thresholds.stop_after_ms
    assert stop_after_ms == 40_000
    # The batch did outlast the stop threshold while the samples watched it.
    assert reports[-1].window_span_ms >= stop_after_ms, [r.window_span_ms for r in reports]
    unhealthy = [r for r in reports if r.status is HealthStatus.UNHEALTHY]
    assert not unhealthy, health_text(unhealthy[0])
    assert all(watch_outcome(r, WatchMode.WATCH, watch_started_ms) is None for r in reports)
    # And the batch it did not stop committed once: four fast records, four slow ones.
    assert sorted(harness.output_values()) == [b"fast"] * PARTITIONS + [b"slow:%d" % TASK_S] * PARTITIONS
