"""The driver token and the judgement of whether a driver is gone (pure)."""

from __future__ import annotations

import datetime as dt

from airflow_provider_eos.core.driver import (
    DriverHandle,
    DriverProcess,
    Liveness,
    driver_token,
    is_driver_token,
    observe_driver,
)

NOW = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)


def _handle(**overrides: object) -> DriverHandle:
    values = {"pipeline": "orders", "token": driver_token("orders", "eos_pipeline", "manual__1"),
              "host": "worker-1", "submitted_at": NOW}
    return DriverHandle(**{**values, **overrides})


def test_token_is_stable_per_run_and_differs_between_runs_dags_and_pipelines() -> None:
    token = driver_token("Orders Enrich", "eos_pipeline", "manual__2026-11-23T12:00:00+00:00")
    assert token == driver_token("Orders Enrich", "eos_pipeline", "manual__2026-11-23T12:00:00+00:00")
    assert is_driver_token(token) and token.startswith("eos-orders-enrich-")
    others = {
        driver_token("Orders Enrich", "eos_pipeline", "manual__2026-11-23T12:00:01+00:00"),
        driver_token("Orders Enrich", "other_dag", "manual__2026-11-23T12:00:00+00:00"),
        driver_token("payments", "eos_pipeline", "manual__2026-11-23T12:00:00+00:00"),
    }
    assert token not in others and len(others) == 3


def test_no_process_with_the_token_on_the_drivers_host_is_positive_evidence_of_gone() -> None:
    seen = observe_driver(_handle(), this_host="worker-1", processes=[], observed_at=NOW)
    assert seen.gone and seen.liveness is Liveness.GONE
    assert "worker-1" in seen.evidence and _handle().token in seen.evidence


def test_a_process_with_the_token_means_alive_and_is_listed() -> None:
    process = DriverProcess(pid=4242, command="/venv/bin/python /x/eos_job.py --spec s.yaml")
    seen = observe_driver(_handle(), this_host="worker-1", processes=[process], observed_at=NOW)
    assert seen.liveness is Liveness.ALIVE and not seen.gone
    assert "pid 4242" in seen.evidence and seen.processes == (process,)


def test_another_host_an_unreadable_process_table_or_cluster_mode_give_no_evidence() -> None:
    elsewhere = observe_driver(_handle(), this_host="worker-2", processes=[], observed_at=NOW)
    unreadable = observe_driver(_handle(), this_host="worker-1", processes=None, observed_at=NOW)
    cluster = observe_driver(_handle(deploy_mode="cluster", master="yarn"), this_host="worker-1", processes=[],
                             observed_at=NOW)
    for seen in (elsewhere, unreadable, cluster):
        assert seen.liveness is Liveness.UNKNOWN and not seen.gone
    assert "'worker-1'" in elsewhere.evidence and "'worker-2'" in elsewhere.evidence
    assert "cluster manager" in cluster.evidence


def test_only_the_python_driver_is_recognised_as_the_driver() -> None:
    python = "/v/bin/python3 /p/airflow_provider_eos/jobs/eos_job.py --spec s"
    assert DriverProcess(pid=1, command=python).is_python_driver
    jvm = "/usr/lib/jvm/java-17/bin/java -cp x org.apache.spark.deploy.SparkSubmit /p/eos_job.py --spec s"
    assert not DriverProcess(pid=2, command=jvm).is_python_driver
    assert not DriverProcess(pid=3, command="python -m pyspark.daemon").is_python_driver
    # While spark-submit starts, its launcher scripts carry the application on their command line.
    launcher = "bash /v/pyspark/bin/spark-class org.apache.spark.deploy.SparkSubmit /p/jobs/eos_job.py --spec s"
    assert not DriverProcess(pid=4, command=launcher).is_python_driver


def test_handle_round_trips_through_json_as_xcom_stores_it() -> None:
    handle = _handle()
    assert DriverHandle.model_validate(handle.model_dump(mode="json")) == handle
