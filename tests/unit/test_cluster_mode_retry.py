"""A retried submit in YARN cluster deploy mode waits for the earlier try's live driver, as in client mode (note 37).

The earlier driver is a YARN application master on a NodeManager: this worker's process table
cannot see it (UNKNOWN, nothing is signalled), its lease in the checkpoint can. The real
operator's wait, on a lease in a local checkpoint. On Airflow 3.3 the provider's durable tracking
reconnects to the earlier try's live application instead of submitting: then there is nothing to wait for.
"""

from __future__ import annotations

import datetime as dt
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver import DriverHandle, driver_token
from airflow_provider_eos.core.driver_lease import DriverLease, write_driver_lease
from airflow_provider_eos.spark.driver_processes import this_host_identity

pytestmark = pytest.mark.airflow

RUN_ID = "manual__cluster_retry"
TOKEN = driver_token("orders", "eos_pipeline__orders", RUN_ID)


def _lease(*, sequence: int, released: bool = False) -> DriverLease:
    now = dt.datetime.now(dt.UTC)
    # Written by the application master, on a NodeManager: not this worker.
    return DriverLease(token=TOKEN, host="nm-3", pid=4242, app_id="application_1_0001",
                       started_at=now - dt.timedelta(minutes=3), renewed_at=now, ttl_s=30, sequence=sequence,
                       released=released)


def _retry(monkeypatch: pytest.MonkeyPatch, wait_s: float) -> tuple[Any, list[Any]]:
    """The operator of the retry, its driver recorded (cluster deploy mode, from this worker), and the signals sent."""
    import airflow_provider_eos.spark.driver_processes as driver_processes
    from airflow_provider_eos.operators import previous_driver
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    signalled: list[Any] = []
    monkeypatch.setattr(driver_processes, "_signal", lambda processes, sig: signalled.append((processes, sig)))
    # The wait follows the lease's ttl (ttl + 25 s); a second is enough to see it wait here.
    monkeypatch.setattr(previous_driver, "lease_expiry_wait_s", lambda ttl_s, given_s: wait_s)
    now = dt.datetime.now(dt.UTC)
    operator = EosSparkSubmitOperator(task_id="submit_stream", spec_path="unused.yaml")
    operator._driver = DriverHandle(pipeline="orders", token=TOKEN, master="yarn", deploy_mode="cluster",
                                    submitted_at=now, earliest_start=now - dt.timedelta(minutes=5),
                                    manager_url="http://127.0.0.1:9", **this_host_identity().model_dump())
    return operator, signalled


def test_a_cluster_mode_retry_refuses_while_the_earlier_driver_renews_its_lease(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    checkpoint = CheckpointReader(str(tmp_path / "checkpoint"))
    write_driver_lease(checkpoint, _lease(sequence=7))
    operator, signalled = _retry(monkeypatch, wait_s=3)
    began = time.monotonic()
    with pytest.raises(AirflowFailException) as refused:
        operator._wait_for_previous_driver(checkpoint.location, 30)
    assert time.monotonic() - began >= 2, "it refused without waiting"
    message = str(refused.value)
    assert "refusing to start a second driver" in message and "driver lease: ALIVE" in message, message
    assert f"kill its application (tagged {TOKEN}) in the cluster manager (http://127.0.0.1:9)" in message, message
    assert "SIGTERM" not in message, message
    assert signalled == [], "a signal was sent although no process of this host is the driver"


def test_a_cluster_mode_retry_goes_ahead_once_the_earlier_driver_released_its_lease(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkpoint = CheckpointReader(str(tmp_path / "checkpoint"))
    write_driver_lease(checkpoint, _lease(sequence=7))
    operator, signalled = _retry(monkeypatch, wait_s=30)
    threading.Timer(1.0, lambda: write_driver_lease(checkpoint, _lease(sequence=8, released=True))).start()
    began = time.monotonic()
    operator._wait_for_previous_driver(checkpoint.location, 30)
    assert 1.0 <= time.monotonic() - began < 20, "it did not wait for the earlier driver's end"
    assert signalled == []


class _TaskStateStore:
    def __init__(self, **stored: str) -> None:
        self.stored = stored

    def get(self, key: str, default: Any = None) -> Any:
        return self.stored.get(key, default)


@pytest.mark.parametrize(("stored", "status", "resumed"), [
    ({"spark_job_id": "application_1_0001"}, "RUNNING", "application_1_0001"),
    ({"spark_job_id": "application_1_0001"}, "FAILED", None),  # the provider submits anew: the wait decides
    ({}, None, None),
])
def test_the_wait_is_left_out_only_when_the_provider_reconnects_to_a_live_application(
        monkeypatch: pytest.MonkeyPatch, stored: dict[str, str], status: str | None, resumed: str | None) -> None:
    import json

    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    monkeypatch.setenv("AIRFLOW_CONN_EOS_SPARK", json.dumps({"conn_type": "spark", "host": "yarn", "extra": {
        "deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": "127.0.0.1:9"}}))
    operator = EosSparkSubmitOperator(task_id="submit_stream", spec_path="unused.yaml", conn_id="eos_spark")
    assert operator.external_id_key == "spark_job_id"  # the provider's key of the application id in task state
    asked: list[str] = []
    monkeypatch.setattr(operator, "get_job_status", lambda app_id, context: asked.append(app_id) or status)
    context: dict[str, Any] = {"task_state_store": _TaskStateStore(**stored)}
    assert operator._resumed_application(context) == resumed
    assert asked == list(stored.values())
    # Without task state (Airflow 3.1, or a test run) or with durable=False every try submits: the wait decides.
    assert operator._resumed_application({}) is None
    operator.durable = False
    assert operator._resumed_application(context) is None
