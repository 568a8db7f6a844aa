"""Executor writers against the real broker and real Spark (spark-submit subprocesses), docs/architecture.md.

Both writers give exact output; ``auto`` picks executors for an aligned plan and the driver for a
shuffle or a stateful plan, and says why; ``writers: executors`` refuses a plan it cannot run;
every input partition commits each batch, also one whose rows were all filtered out. The
writing tests run on both executor writers (``executor_writer``: the Python workers' tasks and the
JVM writer's), and records with and without headers keep theirs.
"""

from __future__ import annotations

import json
from dataclasses import fields

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.spec import Writers
from airflow_provider_eos.core.writers_choice import read_writers_choice
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets
from airflow_provider_eos.spark.partition_writer import TaskStats
from tests.support.kafka import client_settings, consume_all
from tests.support.pipeline import JobResult, PipelineHarness, assert_exactly_once, json_events

pytestmark = [pytest.mark.integration, pytest.mark.spark]

#: Both executor writers: the executor JVM (the jvm/ module, the default) and PySpark's Python workers.
#: CI runs the default; the Python writer is a long proof here (`make test-long`). In CI it runs the
#: switch between writers below, the mixed headers (test_headers_through_writers) and its own crash
#: points (tests/chaos/test_executor_crash_points.py), which take it through a plain run.
DEFAULT_IN_CI = pytest.mark.parametrize("executor_writer", [pytest.param("python", marks=pytest.mark.long), "jvm"])


def writers_lines(result: JobResult) -> list[str]:
    return [line.split("EOS-WRITERS ", 1)[1] for line in result.log.splitlines() if "EOS-WRITERS " in line]


def task_lines(result: JobResult) -> list[dict]:
    return result.batch_lines("EOS-TASK")


def group_markers(harness: PipelineHarness) -> dict[int, tuple[int, int]]:
    """Kafka partition -> (committed offset, marker batch id) of the sink group."""
    checkpoint = harness.checkpoint()
    planned = checkpoint.planned_offsets(checkpoint.latest_planned_batch())
    committed = read_committed_offsets(AdminClient({"bootstrap.servers": harness.bootstrap}), harness.spec.group_id,
                                       planned, transaction_timeout_ms=harness.spec.transaction_timeout_ms)
    return {tp.partition: (c.offset, c.marker.batch_id) for tp, c in committed.items() if c is not None}


@DEFAULT_IN_CI
def test_auto_runs_json_enrich_on_executor_writers_exactly_once(bootstrap, tmp_path, executor_writer):
    harness = PipelineHarness(bootstrap, tmp_path, partitions=3, executor_writer=executor_writer)
    records, valid_ids, malformed = json_events(1500, malformed_every=37)
    harness.produce_input(records, aborted_every=2)

    result = harness.run()
    assert result.returncode == 0, result.log[-3000:]
    assert_exactly_once(harness, valid_ids, malformed)
    assert [line.split()[0] for line in writers_lines(result)] == ["executors"], writers_lines(result)
    choice = read_writers_choice(harness.checkpoint())
    assert choice is not None and choice.writers is Writers.EXECUTORS and choice.requested is Writers.AUTO
    tasks = task_lines(result)
    batches = result.batch_lines()
    assert tasks and {t["writer"] for t in tasks} == {executor_writer}, tasks[:2]
    # Both writers' lines carry the Python writer's fields, and a task's times nest: init within open within
    # produce, and of the open, what the task waited for at its first row (until the opening ended, not until the
    # busy machine woke the task up: measured so, it once came out longer than the opening).
    assert all(t.keys() == {f.name for f in fields(TaskStats)} for t in tasks), tasks[0]
    produced = [t for t in tasks if t["action"] == "produce"]
    assert all(0 <= t["init_ms"] <= t["open_ms"] <= t["produce_ms"] and 0 <= t["open_wait_ms"] <= t["open_ms"]
               for t in produced), produced
    # One task per input partition with data in every batch; each task's counts add up to the batch's.
    for batch in batches:
        own = [t for t in tasks if t["batch_id"] == batch["batch_id"]]
        assert {t["partition"] for t in own} <= {0, 1, 2} and len(own) == batch["extra"]["tasks"] >= 1
        assert sum(t["rows_out"] for t in own) == batch["rows_out"]
        assert sum(t["rows_dlq"] for t in own) == batch["rows_dlq"]
    progress = result.batch_lines("EOS-PROGRESS")
    assert sum(p["rows_out"] + p["rows_dlq"] for p in progress) == len(records)
    # The dead letters carry the same headers as with the driver writer.
    headers = dict(harness.dlq_records()[0].headers())
    assert headers["eos.dlq.reason"] and headers["eos.source.topic"] == harness.input_topic.encode()

    again = harness.run()
    assert again.returncode == 0, again.log[-3000:]
    assert_exactly_once(harness, valid_ids, malformed)


@DEFAULT_IN_CI
def test_a_partition_whose_rows_are_all_filtered_out_still_commits(bootstrap, tmp_path, executor_writer):
    harness = PipelineHarness(bootstrap, tmp_path, partitions=2, writers="executors", executor_writer=executor_writer,
                              transform="tests.support.transforms:drop_every_other_partition")
    records, _, _ = json_events(600)
    harness.produce_input(records)

    result = harness.run()
    assert result.returncode == 0, result.log[-3000:]
    kept = [v for k, v in _by_partition(harness).items() if k == 0 for v in v]
    assert sorted(harness.output_values()) == sorted(kept)
    tasks = task_lines(result)
    assert any(t["partition"] == 1 and t["rows_out"] == 0 and t["action"] == "produce" for t in tasks), tasks
    last = harness.checkpoint().latest_committed_batch()
    end = harness.checkpoint().planned_offsets(last)
    assert group_markers(harness) == {tp.partition: (offset, last) for tp, offset in end.items()}


@DEFAULT_IN_CI
def test_a_header_without_a_key_fails_the_batch_naming_it(bootstrap, tmp_path, executor_writer):
    harness = PipelineHarness(bootstrap, tmp_path, writers="executors", executor_writer=executor_writer,
                              transform="tests.support.transforms:headers_with_a_null_key")
    records, _, _ = json_events(20)
    harness.produce_input(records)

    result = harness.run()
    assert result.returncode != 0
    # Named as the transform's row, not as a Kafka error (the JVM writer said `_JVM`, a NullPointerException).
    assert "returned a row whose headers hold a header whose key is null" in result.log, result.log[-3000:]
    assert "_JVM" not in result.log and "NullPointerException" not in result.log
    assert harness.output_values() == []


def _by_partition(harness: PipelineHarness) -> dict[int, list[bytes]]:
    from tests.support.kafka import consume_all

    found: dict[int, list[bytes]] = {}
    for message in consume_all(harness.bootstrap, harness.input_topic):
        found.setdefault(message.partition(), []).append(message.value())
    return found


@pytest.mark.long  # CI: test_plan_reader names the exchange; auto picks the driver in test_fraud_alerts
def test_executors_refuse_a_shuffle_naming_it_and_auto_runs_it_on_the_driver(bootstrap, tmp_path):
    harness = PipelineHarness(bootstrap, tmp_path, writers="executors",
                              transform="tests.support.transforms:repartitioned")
    records, _, _ = json_events(400)
    harness.produce_input(records)

    refused = harness.run()
    assert refused.returncode != 0
    assert "writers: executors cannot run this query" in refused.log and "Exchange" in refused.log, refused.log[-3000:]
    assert "writers: driver" in refused.log
    assert harness.output_values() == []

    harness.with_overrides(writers="auto")
    result = harness.run()
    assert result.returncode == 0, result.log[-3000:]
    line = writers_lines(result)[0]
    assert line.startswith("driver reason=ShuffleExchangeExec "), line
    assert sorted(harness.output_values()) == sorted(v for _, v in records)
    assert json.loads(line.split(" ", 2)[2])["writers"] == "driver"


@DEFAULT_IN_CI
def test_records_with_and_without_headers_keep_theirs_exactly(bootstrap, tmp_path, executor_writer):
    """A mix in every batch: a third of the records carry headers (one with a null value), the rest none."""
    harness = PipelineHarness(bootstrap, tmp_path, partitions=2, writers="executors", executor_writer=executor_writer,
                              transform=None, max_offsets_per_trigger=200)
    expected = {}
    producer = Producer({**client_settings(harness.bootstrap), "transactional.id": f"{harness.name}-headers"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(900):
        key, value = f"user{i % 7}".encode(), f"value-{i}".encode()
        headers = [("trace-id", f"t{i}".encode()), ("empty", None)] if i % 3 == 0 else []
        producer.produce(harness.input_topic, key=key, value=value, headers=headers or None)
        expected[value] = (key, headers)
    producer.commit_transaction(60)

    result = harness.run()
    assert result.returncode == 0, result.log[-3000:]
    assert len(result.batch_lines()) >= 2 and all(t["action"] == "produce" for t in task_lines(result))
    found = consume_all(harness.bootstrap, harness.output_topic)
    assert sorted(m.value() for m in found) == sorted(expected), "every record once, nothing else"
    assert {m.value(): (m.key(), list(m.headers() or [])) for m in found} == expected
    # Keys land where both writers and Java producers put them (murmur2), so ordering per key holds.
    by_key = {}
    for m in found:
        by_key.setdefault(m.key(), set()).add(m.partition())
    assert all(len(partitions) == 1 for partitions in by_key.values()), by_key


@pytest.mark.long  # CI: the JVM writer commits the markers the Python plan encodes (test_jvm_writer)
def test_switching_executor_writers_between_runs_stays_exactly_once(bootstrap, tmp_path):
    """Both writers commit the same bytes (the markers as the broker holds confluent-kafka's commits), so a
    pipeline may move from one executor writer to the other and back between runs."""
    harness = PipelineHarness(bootstrap, tmp_path, partitions=2, writers="executors", max_offsets_per_trigger=250)
    valid, bad = [], []
    for run, executor_writer in enumerate(("python", "jvm", "python")):
        records, valid_ids, malformed = json_events(600, malformed_every=53, prefix=f"r{run}-")
        valid += valid_ids
        bad += malformed
        harness.produce_input(records)
        harness.with_overrides(executor_writer=executor_writer)
        result = harness.run()
        assert result.returncode == 0, result.log[-3000:]
        tasks = task_lines(result)
        assert tasks and {t["writer"] for t in tasks} == {executor_writer}, tasks[:2]
        assert all(t.keys() == {f.name for f in fields(TaskStats)} for t in tasks), tasks[0]
        assert all(t["action"] == "produce" for t in tasks), tasks
        assert_exactly_once(harness, valid, bad)


@pytest.mark.long  # CI: the take-over against the real broker, Spark aside (tests/integration/test_writers_takeover.py)
def test_writers_switched_between_runs_take_over_and_stay_exactly_once(bootstrap, tmp_path):
    """executors -> driver -> executors between runs of one query: each run fences the other writer's ids,
    records itself, and the output stays exact."""
    harness = PipelineHarness(bootstrap, tmp_path, partitions=2, writers="executors", max_offsets_per_trigger=250)
    valid, bad = [], []
    for run, writers in enumerate(("executors", "driver", "executors")):
        records, valid_ids, malformed = json_events(400, malformed_every=53, prefix=f"r{run}-")
        valid += valid_ids
        bad += malformed
        harness.produce_input(records)
        harness.with_overrides(writers=writers)
        result = harness.run()
        assert result.returncode == 0, result.log[-3000:]
        choice = read_writers_choice(harness.checkpoint())
        assert choice is not None and choice.writers is Writers(writers)
        takes_over = {1: "taking over from the executor writers", 2: "taking over from the driver writer"}.get(run)
        assert takes_over is None or takes_over in result.log, result.log[-3000:]
        assert_exactly_once(harness, valid, bad)
