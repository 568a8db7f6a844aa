"""Health verdicts that must not stop a healthy job, against the real broker and a real checkpoint.

* An idle stream's first input after the idle spell is not a stopped job: how long input has waited
  decides, not how old the last commit is (the window, else the brokers' record timestamps).
* An upstream producer's long transaction on an input partition is judged against the brokers'
  ``transaction.max.timeout.ms``, not the sink's timeout, and a hanging input never stops the driver.
* An ``available_now`` pipeline between runs (its driver's lease released) is idle, not UNHEALTHY.

The checkpoints are written by hand in Spark's format (tests/support/checkpoints.py: ``offsets/0`` of
partition 0 ends at 10); the records, the sink group's offsets and markers, the upstream transaction
and the lease file are real.
"""

from __future__ import annotations

import datetime as dt
import os
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver_lease import DriverLease, write_driver_lease
from airflow_provider_eos.core.health import HealthStatus, LagWindow, WatchMode, watch_outcome
from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.group_offsets import write_committed_offsets
from airflow_provider_eos.kafka.health_probe import probe
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.health import evaluate, health
from tests.support.checkpoints import write_checkpoint

pytestmark = pytest.mark.integration

_NOW_S = time.time


def _pipeline(tmp_path: Path, bootstrap: str, topic_factory, **fields) -> PipelineSpec:
    """A pipeline whose batch 0 read offsets 0..10 of its one input partition, committed ``age_s`` ago."""
    topic_in, topic_out = topic_factory("in", partitions=1), topic_factory("out", partitions=1)
    age_s = fields.pop("age_s", 600)
    spec = PipelineSpec(name="verdicts", kafka={"bootstrap.servers": bootstrap}, input_topics=[topic_in],
                        output_topic=topic_out, group_id=f"g-{uuid.uuid4().hex[:8]}",
                        transactional_id_prefix=f"verdicts-{uuid.uuid4().hex[:8]}",
                        checkpoint_location=str(tmp_path / "ck"), **fields)
    query = str(uuid.uuid4())
    # Created before the batch that read them: the brokers' record timestamps are in order, as a live topic's are.
    _produce_at(bootstrap, topic_in, 10, created_s_ago=age_s + 3600)
    write_checkpoint(tmp_path / "ck", topic=topic_in, partitions=1, query_id=query, offsets=[0], commits=[0])
    then = _NOW_S() - age_s
    os.utime(tmp_path / "ck" / "commits" / "0", (then, then))
    write_committed_offsets(AdminClient({"bootstrap.servers": bootstrap}), spec.group_id,
                            {TopicPartition(topic_in, 0): (10, BatchMarker(query, 0).encode())})
    return spec


def _produce_at(bootstrap: str, topic: str, count: int, created_s_ago: float = 0) -> None:
    """``count`` records whose create time is ``created_s_ago`` seconds back (the brokers' record timestamps)."""
    producer = Producer({"bootstrap.servers": bootstrap})
    stamp = int((_NOW_S() - created_s_ago) * 1000)
    for i in range(count):
        producer.produce(topic, value=b"r%d" % i, timestamp=stamp)
    assert producer.flush(30) == 0


def _commit_age(report) -> tuple[HealthStatus, str]:
    (found,) = [f for f in report.findings if f.signal == "commit_age"]
    return found.status, found.detail


# -- 1. input that arrives after an idle spell --------------------------------------------------


def test_input_after_an_idle_spell_is_not_a_stopped_job(tmp_path: Path, bootstrap: str, topic_factory) -> None:
    spec = _pipeline(tmp_path, bootstrap, topic_factory, trigger="10 seconds")  # stop after 4 min; commit 10 min old
    watch_start = int((_NOW_S() - 600) * 1000)
    window = LagWindow()
    window.add(probe(spec, timeout_s=20))
    assert evaluate(spec, window).is_healthy  # idle: nothing waits

    _produce_at(bootstrap, spec.input_topics[0], 3)  # the next trigger is <= 10 s away
    window.add(probe(spec, timeout_s=20))
    report = evaluate(spec, window)
    status, detail = _commit_age(report)
    assert status is HealthStatus.HEALTHY, detail
    assert "committed 10m" in detail and "saw no input waiting" in detail
    assert report.is_healthy and watch_outcome(report, WatchMode.WATCH, watch_start) is None

    # One sample alone (eos health's default): the brokers' record timestamps say the input is new.
    latest = window.latest
    assert latest is not None and latest.inputs[0].waiting_ms == 0
    assert evaluate(spec, LagWindow([latest])).is_healthy


def test_input_left_waiting_past_stop_after_is_unhealthy_in_one_sample(
    tmp_path: Path, bootstrap: str, topic_factory
) -> None:
    spec = _pipeline(tmp_path, bootstrap, topic_factory, trigger="10 seconds")
    _produce_at(bootstrap, spec.input_topics[0], 3, created_s_ago=300)  # waiting for 5 min, stop after 4
    sample = probe(spec, timeout_s=20)
    assert sample.inputs[0].waiting_ms == 240_000  # older than stop_after_ms (the probe asks at warn and stop)
    report = evaluate(spec, LagWindow([sample]))
    status, detail = _commit_age(report)
    assert status is HealthStatus.UNHEALTHY, detail
    assert "the oldest for at least 4m00s" in detail and not report.is_healthy


# -- 2. an upstream producer's transaction on an input partition ---------------------------------


def test_an_upstream_transaction_longer_than_the_sinks_timeout_is_not_hanging_and_never_stops_the_driver(
    tmp_path: Path, bootstrap: str, topic_factory, kafka_broker
) -> None:
    # The sink's transactions last at most 5 s; an upstream producer (120 s timeout) holds one open.
    spec = _pipeline(tmp_path, bootstrap, topic_factory, trigger="1 second", transaction_timeout_ms=5_000, age_s=0)
    upstream = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"upstream-{uuid.uuid4().hex[:6]}",
                         "transaction.timeout.ms": 120_000})
    upstream.init_transactions(30)
    upstream.begin_transaction()
    for i in range(5):
        upstream.produce(spec.input_topics[0], value=b"x%d" % i)
    upstream.flush(30)
    start_ms = int(_NOW_S() * 1000)
    window = LagWindow()
    try:
        for i in range(3):
            if i:
                time.sleep(3.2)  # the window spans more than the sink's 5 s timeout
            window.add(probe(spec, timeout_s=20))
    finally:
        upstream.abort_transaction(30)

    report = evaluate(spec, window)
    assert report.is_healthy, [f.detail for f in report.problems]
    assert watch_outcome(report, WatchMode.WATCH, start_ms) is None
    (gap,) = [g for g in report.gaps if g.role == "input"]
    assert (gap.lso, gap.hwm, gap.state) == (10, 15, "pinned")
    latest = window.latest
    assert latest is not None
    # The probe read the brokers' maximum (the health principal here may describe the brokers' configuration).
    assert latest.transaction_max_timeout_ms == kafka_broker.transaction_max_timeout_ms

    # Past the input's limit it is reported, with the advice that helps, and still does not stop the driver.
    hung = evaluate(spec, window, thresholds={"input_hang_after_ms": 5_000})
    (found,) = hung.problems
    assert found.signal == "input_hanging" and found.subject == f"{spec.input_topics[0]}-0 (input)"
    assert "kafka-transactions.sh" in found.detail and "eos abort" not in found.detail
    assert not hung.is_healthy and watch_outcome(hung, WatchMode.WATCH, start_ms - 3_600_000) is None


# -- 3. available_now between runs ---------------------------------------------------------------


def _lease(spec: PipelineSpec, *, released: bool, started_s_ago: float) -> None:
    now = dt.datetime.now(dt.UTC)
    write_driver_lease(CheckpointReader(spec.checkpoint_location), DriverLease(
        token="eos-run-1", host="worker-1", pid=4242, started_at=now - dt.timedelta(seconds=started_s_ago),
        renewed_at=now, ttl_s=30, sequence=7, released=released))


def test_the_health_check_of_an_available_now_pipeline_between_runs_is_idle(
    tmp_path: Path, bootstrap: str, topic_factory
) -> None:
    # The last run committed an hour ago and released its lease; input arrived since, an hour old too.
    spec = _pipeline(tmp_path, bootstrap, topic_factory, trigger="available_now", age_s=3600)
    _produce_at(bootstrap, spec.input_topics[0], 250, created_s_ago=3500)
    _lease(spec, released=True, started_s_ago=3700)
    clients = PipelineClients(spec)

    between = health(clients, samples=2, interval_s=0.5)
    assert between.report.is_healthy, [f.detail for f in between.report.problems]
    assert "idle between runs" in _commit_age(between.report)[1]
    assert [row.detail for row in between.report.partitions] == [
        "idle between runs: 250 record(s) wait for the next run"]
    assert between.report.verification is not None and between.report.verification.verdict == "IN_SYNC"

    # A run that is active (its lease holds) is judged as any job: just started, it has its chance ...
    _lease(spec, released=False, started_s_ago=5)
    starting = health(clients).report
    assert starting.is_healthy and "this run's driver started" in _commit_age(starting)[1]
    # ... but an hour into the run with the hour-old input unread, it is not making progress.
    _lease(spec, released=False, started_s_ago=3600)
    stuck = health(clients).report
    assert _commit_age(stuck)[0] is HealthStatus.UNHEALTHY and not stuck.is_healthy
