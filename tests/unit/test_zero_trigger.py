"""A ``0 seconds`` trigger is Spark's own default, ProcessingTime(0): a processing-time pipeline whose batches
run back to back. Every place that reads the interval is held to that here: the job's trigger, the DAG's path,
the health thresholds, the recovery's quiet period, the pre-flight timeout rules and the run's input record.
"""

from __future__ import annotations

import logging

import pytest

from airflow_provider_eos.core.health import HealthThresholds
from airflow_provider_eos.core.preflight import Status, evaluate
from airflow_provider_eos.core.transactions.safety import default_quiet_period_ms
from tests.support.health_samples import spec
from tests.unit.preflight.builders import good_facts
from tests.unit.preflight.builders import spec as preflight_spec

ZERO = ("0 seconds", "0 milliseconds", "0 minutes", "interval 0 seconds")


@pytest.mark.parametrize("trigger", ZERO)
def test_a_zero_interval_is_a_processing_time_trigger_of_zero(trigger: str) -> None:
    # `is None` decides available_now everywhere (the DAG's choose_path, the job, the run's input): 0 is not None.
    assert spec(trigger=trigger).trigger_interval_ms == 0


def test_the_job_asks_spark_for_processing_time_zero() -> None:
    from airflow_provider_eos.spark.job import _apply_trigger

    class Writer:
        def trigger(self, **kwargs: object) -> dict[str, object]:
            return kwargs

    assert _apply_trigger(Writer(), spec(trigger="0 seconds")) == {"processingTime": "0 milliseconds"}
    assert _apply_trigger(Writer(), spec()) == {"availableNow": True}


def test_the_health_thresholds_follow_the_batch_budget_or_the_transaction_timeout() -> None:
    # No interval to wait for: a commit is due once per batch, whose length the budget (or timeout) bounds.
    for fields in ({}, {"batch_budget_ms": 30_000}, {"transaction_timeout_ms": 20_000}):
        zero = HealthThresholds.from_spec(spec(trigger="0 seconds", **fields))
        assert zero == HealthThresholds.from_spec(spec(trigger="1 millisecond", **fields))
        assert zero == HealthThresholds.from_spec(spec(trigger="available_now", **fields))
    assert HealthThresholds.from_spec(spec(trigger="0 seconds")).stop_after_ms == 240_000


def test_the_recovery_quiet_period_is_the_transaction_timeout() -> None:
    assert default_quiet_period_ms(60_000, 0) == 60_000 == default_quiet_period_ms(60_000, None)


def test_the_preflight_timeout_rules_pass_a_zero_interval() -> None:
    report = evaluate(preflight_spec(trigger="0 seconds")(good_facts()))
    assert report.finding("EOS101").status is Status.PASS and "trigger 0" in report.finding("EOS101").message
    assert report.finding("EOS103").status is Status.PASS
    assert report.finding("EOS312").status is Status.PASS
    assert "at trigger" not in report.finding("EOS312").message  # no time span to give for 0


def test_a_zero_interval_run_records_no_input(monkeypatch: pytest.MonkeyPatch) -> None:
    # A processing-time run is watched while it runs: the submit task reads nothing for it.
    from airflow_provider_eos.operators import run_input

    class TaskInstance:
        def xcom_push(self, key: str, value: object) -> None:
            raise AssertionError(f"pushed {key}")

    monkeypatch.setattr("airflow_provider_eos.usecases.health.run_input", lambda clients: pytest.fail("read"))
    run_input.record_run_input(TaskInstance(), spec(trigger="0 seconds"), logging.getLogger("test"))
