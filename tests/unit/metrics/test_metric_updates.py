"""The job metrics' changes per batch and per Spark progress (core/metrics/updates.py)."""

from __future__ import annotations

import json

import pytest

from airflow_provider_eos.core.metrics.catalog import JOB_METRICS, MetricKind, job_metric
from airflow_provider_eos.core.metrics.updates import (
    BatchReport,
    MetricUpdate,
    Op,
    TransactionCounts,
    batch_updates,
    checkpoint_updates,
    executor_task_tally,
    failure_updates,
    input_lag_updates,
    progress_updates,
)
from airflow_provider_eos.core.topic_partition import TopicPartition


def _by_metric(updates: list[MetricUpdate]) -> dict[str, list[MetricUpdate]]:
    found: dict[str, list[MetricUpdate]] = {}
    for update in updates:
        found.setdefault(update.metric, []).append(update)
    return found


def _report(task_reports: list[dict] | None = None, **overrides: object) -> BatchReport:
    tally = executor_task_tally(task_reports or [])
    fields = dict(pipeline="orders", batch_id=7, writers="executors", action="produce", rows_out=90, rows_dlq=10,
                  produce_ms=1500, commit_ms=250, finished_at=1_800_000_000.5,
                  transactions=TransactionCounts(begun=1, committed=1) + tally.transactions, tasks=tally)
    return BatchReport(**{**fields, **overrides})


def test_every_counter_ends_in_total_and_every_job_metric_has_the_pipeline_label() -> None:
    for metric in JOB_METRICS:
        assert metric.name.startswith("eos_"), metric
        assert metric.labels[0] == "pipeline", metric
        assert metric.name.endswith("_total") == (metric.kind is MetricKind.COUNTER), metric
    assert job_metric("eos_produce_seconds").series == (
        "eos_produce_seconds_bucket", "eos_produce_seconds_sum", "eos_produce_seconds_count")
    with pytest.raises(KeyError, match="no job metric 'eos_batch_total'"):
        job_metric("eos_batch_total")


def test_tasks_that_committed_and_attempts_that_failed_make_the_transactions() -> None:
    reports = [
        {"action": "produce", "attempt": 0, "topic": "in", "partition": 0, "rows_out": 40, "rows_dlq": 2,
         "producer_replaced": False},
        # attempts 0 and 1 failed before attempt 2 committed; its producer had been fenced and was replaced
        {"action": "produce", "attempt": 2, "topic": "in", "partition": 1, "rows_out": 50, "rows_dlq": 0,
         "producer_replaced": True},
        # a replayed partition: committed earlier, skipped now
        {"action": "skip_replay", "attempt": 0, "topic": "in", "partition": 2, "rows_out": 0, "rows_dlq": 0,
         "producer_replaced": False},
    ]
    tally = executor_task_tally(reports)
    assert tally.transactions == TransactionCounts(begun=4, committed=2, aborted=2)
    assert (tally.fences, tally.retries) == (1, 2)
    assert tally.partition_records == {("in", 0): 42, ("in", 1): 50}


def test_a_retry_finding_its_partition_committed_by_this_batch_counts_the_earlier_attempts_commit() -> None:
    """Attempt 0 committed and its executor died before reporting; attempt 1 found marker N and skipped."""
    lost_report = {"batch_id": 5, "attempt": 1, "topic": "in", "partition": 0, "action": "skip_replay",
                   "rows_out": 0, "rows_dlq": 0, "producer_replaced": False, "producer_created": True}
    tally = executor_task_tally([lost_report])
    assert tally.transactions == TransactionCounts(begun=1, committed=1, aborted=0)
    assert tally.retries == 1
    # Its rows went with attempt 0's report: the retry does not know them.
    assert tally.partition_records == {}
    # Two attempts before it: one committed, the other began a transaction the next init aborted.
    tally = executor_task_tally([{**lost_report, "attempt": 2}])
    assert tally.transactions == TransactionCounts(begun=2, committed=1, aborted=1)


def test_a_produced_batch_moves_every_batch_metric() -> None:
    report = _report([{"action": "produce", "attempt": 1, "topic": "in", "partition": 3, "rows_out": 90,
                       "rows_dlq": 10, "producer_replaced": False}])
    found = _by_metric(batch_updates(report))
    (batches,) = found["eos_batches_total"]
    assert dict(batches.labels) == {"pipeline": "orders", "writers": "executors", "action": "produce"}
    assert (batches.op, batches.value) == (Op.INC, 1)
    assert found["eos_last_committed_batch"][0].value == 7
    assert found["eos_last_commit_timestamp_seconds"][0].value == 1_800_000_000.5
    assert [u.value for u in found["eos_records_out_total"]] == [90]
    assert [u.value for u in found["eos_records_dlq_total"]] == [10]
    # the driver's one transaction plus the task's committed one and its failed first attempt
    assert [u.value for u in found["eos_transactions_begun_total"]] == [3]
    assert [u.value for u in found["eos_transactions_committed_total"]] == [2]
    assert [u.value for u in found["eos_transactions_aborted_total"]] == [1]
    assert [u.value for u in found["eos_write_task_retries_total"]] == [1]
    assert [(u.op, u.value) for u in found["eos_produce_seconds"]] == [(Op.OBSERVE, 1.5)]
    assert [(u.op, u.value) for u in found["eos_commit_seconds"]] == [(Op.OBSERVE, 0.25)]
    (partition,) = found["eos_partition_records_out_total"]
    assert dict(partition.labels) == {"pipeline": "orders", "topic": "in", "partition": "3"}
    assert partition.value == 100


def test_a_skipped_replay_counts_as_a_batch_but_observes_no_produce_or_commit_time() -> None:
    found = _by_metric(batch_updates(_report(action="skip_replay", rows_out=0, rows_dlq=0,
                                             transactions=TransactionCounts())))
    assert dict(found["eos_batches_total"][0].labels)["action"] == "skip_replay"
    assert "eos_produce_seconds" not in found and "eos_commit_seconds" not in found
    assert found["eos_transactions_committed_total"][0].value == 0


def test_a_failed_batch_counts_its_error_type_and_its_aborted_transaction() -> None:
    found = _by_metric(failure_updates("orders", "ProducerFencedError", TransactionCounts(begun=1, aborted=1),
                                       "driver"))
    assert dict(found["eos_batch_failures_total"][0].labels) == {"pipeline": "orders", "kind": "ProducerFencedError"}
    assert found["eos_transactions_aborted_total"][0].value == 1


def test_an_update_whose_labels_differ_from_the_catalog_is_refused() -> None:
    with pytest.raises(ValueError, match="labels"):
        MetricUpdate("eos_batches_total", (("pipeline", "p"),), 1, Op.INC)


def test_sparks_progress_gives_end_offsets_rows_and_batch_time_per_partition_but_not_the_lag() -> None:
    progress = {
        "batchId": 4, "numInputRows": 300, "durationMs": {"triggerExecution": 2500},
        "sources": [{
            "description": "KafkaV2[Subscribe[orders-in]]",
            "startOffset": {"orders-in": {"0": 100, "1": 50}},
            "endOffset": {"orders-in": {"0": 250, "1": 200}},
            # JSON text, as PySpark's progress objects keep it
            "latestOffset": json.dumps({"orders-in": {"0": 400, "1": 200}}),
        }],
    }
    found = _by_metric(progress_updates("orders", progress))
    assert [u.value for u in found["eos_input_rows_total"]] == [300]
    assert [u.value for u in found["eos_batch_duration_seconds"]] == [2.5]
    end = {dict(u.labels)["partition"]: u.value for u in found["eos_input_end_offset"]}
    assert end == {"0": 250, "1": 200}
    # Spark's latestOffset is as of the batch's planning and comes only with a finished batch: the driver
    # reads the lag itself (input_lag_updates).
    assert "eos_input_lag_records" not in found


def test_the_lag_is_the_last_stable_offset_less_the_last_committed_batchs_end() -> None:
    committed = {TopicPartition("in", 0): 250, TopicPartition("in", 1): 200, TopicPartition("in", 2): 10}
    # partition 2 could not be read; partition 3 is new since the last committed batch
    stable = {TopicPartition("in", 0): 958, TopicPartition("in", 1): 200, TopicPartition("in", 3): 40}
    found = input_lag_updates("orders", stable, committed)
    assert [(dict(u.labels), u.op, u.value) for u in found] == [
        ({"pipeline": "orders", "topic": "in", "partition": "0"}, Op.SET, 708),
        ({"pipeline": "orders", "topic": "in", "partition": "1"}, Op.SET, 0),
    ]
    # A log truncated below the committed end (a recreated topic) is no negative lag.
    assert input_lag_updates("orders", {TopicPartition("in", 0): 5}, committed)[0].value == 0


def test_a_starting_driver_exports_the_checkpoints_newest_commit() -> None:
    found = _by_metric(checkpoint_updates("orders", 41, 1_800_000_000.0))
    assert [(u.op, u.value) for u in found["eos_last_committed_batch"]] == [(Op.SET, 41)]
    assert [(u.op, u.value) for u in found["eos_last_commit_timestamp_seconds"]] == [(Op.SET, 1_800_000_000.0)]


def test_a_progress_without_kafka_offsets_gives_no_partition_series() -> None:
    found = _by_metric(progress_updates("orders", {"numInputRows": 0, "sources": [{"endOffset": "not json"}]}))
    assert set(found) == {"eos_input_rows_total"}


def test_a_failed_executors_write_counts_what_its_finished_tasks_committed_and_its_failed_task() -> None:
    """Batch 2: partition 1's task committed 200 + 7 records; partition 0's task failed (no attempt succeeded)."""
    finished = [{"action": "produce", "attempt": 0, "topic": "in", "partition": 1, "spark_partition": 1,
                 "rows_out": 200, "rows_dlq": 7, "producer_replaced": False}]
    tally = executor_task_tally(finished, failed_tasks=1)
    assert tally.transactions == TransactionCounts(begun=2, committed=1, aborted=1)
    assert (tally.rows_out, tally.rows_dlq) == (200, 7)
    found = _by_metric(failure_updates("orders", "TransactionTimedOutError", TransactionCounts(), "executors", tally))
    assert [u.value for u in found["eos_batch_failures_total"]] == [1]
    assert [u.value for u in found["eos_records_out_total"]] == [200]
    assert [u.value for u in found["eos_records_dlq_total"]] == [7]
    assert [u.value for u in found["eos_transactions_begun_total"]] == [2]
    assert [u.value for u in found["eos_transactions_committed_total"]] == [1]
    assert [u.value for u in found["eos_transactions_aborted_total"]] == [1]
    (partition,) = found["eos_partition_records_out_total"]
    assert (dict(partition.labels)["partition"], partition.value) == ("1", 207)
    # Nothing about a batch that committed: the failed batch is not the last committed one.
    assert "eos_last_committed_batch" not in found and "eos_batches_total" not in found


def test_a_failed_batch_without_tasks_counts_the_driver_producers_transactions_alone() -> None:
    found = _by_metric(failure_updates("orders", "SinkError", TransactionCounts(begun=1, committed=1), "executors"))
    assert [u.value for u in found["eos_transactions_committed_total"]] == [1]
    assert [u.value for u in found["eos_records_out_total"]] == [0]
    assert "eos_partition_records_out_total" not in found
