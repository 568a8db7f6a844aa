"""A real Prometheus scrapes a running job's driver: the sink's metrics, Spark's own, and the stall rule firing.

The job runs each writer (the executor writers in the JVM, the default; the driver writer) with a 1 s
trigger; the tests' fault plug-in stalls batch 2 inside an open transaction past the 10 s transaction
timeout (the driver writer's own, or one task's). While it stalls, Prometheus (scraping and
evaluating every second) holds exactly what batches 0 and 1 did, and ``EosBatchStalled`` (the
package's rule: a transaction open for more than half the timeout) fires for the pipeline. Then the
broker aborts the transaction, batch 2 fails, and the driver serves its last metrics long enough
for the failure to be scraped: with the executor writers, what batch 2's other task committed
before the failure is counted too, so the records counters equal what Kafka holds.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_provider_eos.core.metrics.catalog import JOB_METRICS
from airflow_provider_eos.core.metrics.spark_conf import SPARK_PROMETHEUS_PATH
from airflow_provider_eos.devstack.broker_config import free_port
from tests.support.pipeline import PipelineHarness, json_events, kill_group, wait_for
from tests.support.prometheus import PrometheusApi, Target, prometheus, used_metrics

pytestmark = [pytest.mark.integration, pytest.mark.spark]


def _value(api: PrometheusApi, expr: str) -> float | None:
    result = api.query(expr)
    return float(result[0]["value"][1]) if result else None


def _firing(api: PrometheusApi, alert: str, pipeline: str) -> bool:
    return any(a["labels"].get("alertname") == alert and a["labels"].get("pipeline") == pipeline
               and a["state"] == "firing" for a in api.alerts())


# CI: the default writer (the executor writers in the JVM); the Python executor writer (its finished tasks'
# reports of the failed batch come by an accumulator) and the driver writer's counts (its own producer's
# transactions) in `make test-long`.
@pytest.mark.parametrize(("writers", "executor_writer"), [
    ("executors", "jvm"),
    pytest.param("executors", "python", marks=pytest.mark.long),
    pytest.param("driver", "jvm", marks=pytest.mark.long),
])
def test_prometheus_scrapes_the_drivers_metrics_and_the_stall_rule_fires(
    bootstrap: str, tmp_path: Path, writers: str, executor_writer: str,
) -> None:
    metrics_port, ui_port = free_port(), free_port()
    harness = PipelineHarness(bootstrap, tmp_path, writers=writers, trigger="1 second", max_offsets_per_trigger=300,
                              transaction_timeout_ms=10_000, executor_writer=executor_writer)
    harness.with_overrides(metrics={"prometheus_port": metrics_port, "prometheus_host": "127.0.0.1",
                                    "failure_linger_s": 30},
                           spark_conf={**harness.spec.spark_conf, "spark.ui.port": str(ui_port)})
    pipeline = harness.spec.name
    records, _, _ = json_events(1200, malformed_every=41)
    harness.produce_input(records)
    targets = [Target("eos", f"127.0.0.1:{metrics_port}"),
               Target("spark", f"127.0.0.1:{ui_port}", SPARK_PROMETHEUS_PATH)]
    with prometheus(tmp_path / "prometheus", targets) as api:
        process, log_path = harness.start(fault="slow_transaction@2")
        try:
            assert wait_for(lambda: _firing(api, "EosBatchStalled", pipeline), 150), (
                api.alerts(), log_path.read_text(errors="replace")[-3000:])
            log = log_path.read_text(errors="replace")
            batches = [json.loads(line.split("EOS-BATCH ", 1)[1]) for line in log.splitlines() if "EOS-BATCH " in line]
            assert [b["batch_id"] for b in batches] == [0, 1], batches

            # While batch 2 stalls, the scraped values are exactly what batches 0 and 1 did.
            assert wait_for(lambda: _value(api, "eos_last_committed_batch") == 1, 10)
            where = f'{{pipeline="{pipeline}"}}'
            assert _value(api, f"sum(eos_records_out_total{where})") == sum(b["rows_out"] for b in batches)
            assert _value(api, f"sum(eos_records_dlq_total{where})") == sum(b["rows_dlq"] for b in batches)
            assert _value(api, f'eos_batches_total{{pipeline="{pipeline}",action="produce",writers="{writers}"}}') == 2
            # One transaction per batch, or one per input partition with input (two partitions)
            committed = sum(2 if writers == "executors" else 1 for _ in batches)
            assert _value(api, f"sum(eos_transactions_committed_total{where})") == committed
            assert _value(api, f"eos_transaction_timeout_seconds{where}") == 10
            assert _value(api, f"eos_open_transaction_age_seconds{where}") > 5
            assert _value(api, f"sum(eos_input_lag_records{where})") > 0
            assert _value(api, f'eos_writer_info{{pipeline="{pipeline}",writers="{writers}"}}') == 1
            if writers == "executors":
                per_partition = _value(api, f"sum(eos_partition_records_out_total{where})")
                assert per_partition == sum(b["rows_out"] + b["rows_dlq"] for b in batches)
            assert _value(api, f"eos_produce_seconds_count{where}") == 2

            # The broker aborts the stalled transaction at its timeout, so batch 2's commit fails; the driver
            # serves its last metrics a while (failure_linger_s) and the failure is scraped.
            assert wait_for(lambda: _value(api, f"sum(eos_batch_failures_total{where})") == 1, 60), (
                log_path.read_text(errors="replace")[-3000:])
            failed = api.query(f"eos_batch_failures_total{where}")
            # Typed alike on every writer: the JVM task's failure reaches the driver as the same error, and a
            # Python worker's, wrapped in Spark's PythonException, is counted as the error its text names.
            assert [f["metric"]["kind"] for f in failed] == ["TransactionTimedOutError"], failed
            # The failure's series is born at 1 and the driver exits: the critical alert fires all the same.
            assert wait_for(lambda: _firing(api, "EosSinkFailing", pipeline), 15), api.alerts()
            # What batch 2 committed before it failed is counted now or never (a replay skips it): the executor
            # writers' other task committed its partition, the stalled one's transaction did not commit.
            output, dead = len(harness.output_values()), len(harness.dlq_records())
            assert wait_for(lambda: _value(api, f"sum(eos_records_out_total{where})") == output, 10), (
                output, api.query(f"eos_records_out_total{where}"), log_path.read_text(errors="replace")[-3000:])
            assert _value(api, f"sum(eos_records_dlq_total{where})") == dead
            assert _value(api, f"sum(eos_transactions_aborted_total{where})") == 1
            if writers == "executors":
                assert output > sum(b["rows_out"] for b in batches)
                assert _value(api, f"sum(eos_transactions_committed_total{where})") == committed + 1
                assert _value(api, f"sum(eos_transactions_begun_total{where})") == committed + 2
                assert _value(api, f"sum(eos_partition_records_out_total{where})") == output + dead
            assert _value(api, f"eos_open_transaction_age_seconds{where}") == 0

            # Every metric the rules and the dashboard use exists in Prometheus, scraped from the driver.
            stored = api.series_names("eos_")
            executors_only = set() if writers == "executors" else {"eos_partition_records_out_total"}
            used = used_metrics() - executors_only
            missing = {name for name in used if not ({name, f"{name}_bucket"} & stored)}
            assert not missing, (missing, sorted(stored))
            assert {s for m in JOB_METRICS if m.name not in executors_only for s in m.series} <= stored
            # Spark's own streaming metrics, from the driver's UI, beside ours.
            assert api.targets_up() == {"eos": "up", "spark": "up"}
            spark_streaming = {name for name in api.series_names("metrics_eos_driver_") if "streaming" in name}
            assert spark_streaming, sorted(api.series_names("metrics_"))[:40]
        finally:
            kill_group(process)
