"""The recovery gate on a worker that did not submit the driver: the lease in the checkpoint decides (issue 26)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver import DriverHandle, driver_token
from airflow_provider_eos.core.driver_lease import DriverLease, write_driver_lease
from airflow_provider_eos.core.spec import PipelineSpec
from tests.support.task_instances import SubmittedDriverTI

pytestmark = pytest.mark.airflow

RUN_ID = "manual__2026-11-27"


class _TaskInstance(SubmittedDriverTI):
    """The run's driver task failed."""

    def get_task_states(self, **_: Any) -> dict:
        return {RUN_ID: {"submit_stream": "failed"}}


def _setup(tmp_path: Path, *, released: bool, age_s: float, ttl_s: int = 30,
           timeout_s: float = 1) -> tuple[Any, dict]:
    from airflow_provider_eos.operators.driver import ConfirmDriverGoneOperator

    spec = PipelineSpec(name="orders", kafka={"bootstrap.servers": "b:9092"}, input_topics=["in"],
                        output_topic="out", group_id="g", transactional_id_prefix="orders",
                        checkpoint_location=str(tmp_path / "checkpoint"), driver_lease_ttl_s=ttl_s)
    spec_file = tmp_path / "orders.yaml"
    spec_file.write_text(yaml.safe_dump(spec.to_dict()))
    now = dt.datetime.now(dt.UTC)
    token = driver_token("orders", "eos_pipeline__orders", RUN_ID)
    # Submitted from another worker: its process table is nothing this one can read.
    handle = DriverHandle(pipeline="orders", token=token, host="celery-worker-7", submitted_at=now - dt.timedelta(
        minutes=5), boot_id="another-boot", pid_namespace=1, uid=50000)
    write_driver_lease(CheckpointReader(spec.checkpoint_location), DriverLease(
        token=token, host="celery-worker-7", pid=4242, started_at=now - dt.timedelta(minutes=4),
        renewed_at=now - dt.timedelta(seconds=age_s), ttl_s=ttl_s, sequence=12, released=released))
    operator = ConfirmDriverGoneOperator(task_id="confirm_driver_gone", spec_path=str(spec_file),
                                         submit_task_ids=["submit_stream"], stopped_by="stop_stream",
                                         timeout_s=timeout_s)
    return operator, {"ti": _TaskInstance(handle), "run_id": RUN_ID}


def test_a_released_lease_lets_recovery_run_from_a_worker_that_cannot_see_the_driver(tmp_path: Path) -> None:
    operator, context = _setup(tmp_path, released=True, age_s=2)
    seen = operator.execute(context)
    assert seen["liveness"] == "GONE", seen["evidence"]
    assert "process table: no evidence" in seen["evidence"] and "driver lease: GONE" in seen["evidence"]


def test_a_fresh_lease_keeps_recovery_from_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    operator, context = _setup(tmp_path, released=False, age_s=2)
    # A live driver renews its lease through any wait; here nobody renews it, so the wait is kept
    # shorter than the lease's expiry (the wait's derivation is tested below).
    monkeypatch.setattr(operator, "lease_wait_s", lambda given_s: given_s)
    with pytest.raises(AirflowFailException, match="driver lease: ALIVE"):
        operator.execute(context)


def test_the_wait_follows_the_specs_lease_ttl(tmp_path: Path) -> None:
    operator, _ = _setup(tmp_path, released=False, age_s=2, ttl_s=150, timeout_s=120)
    assert operator.lease_wait_s(120) == 150 + 10 + 15  # ttl + clock margin + the wait's own margin
    assert operator.lease_wait_s(600) == 600  # a longer given wait is kept
    (tmp_path / "short").mkdir()
    short, _ = _setup(tmp_path / "short", released=False, age_s=2, ttl_s=30, timeout_s=120)
    assert short.lease_wait_s(120) == 120


def test_a_crashed_drivers_lease_expires_within_the_wait_whatever_the_timeout(tmp_path: Path) -> None:
    # The driver was SIGKILLed just after renewing (ttl 3 s): its lease says ALIVE for 13 s more. A
    # timeout_s of 1 refused recovery; the wait now lasts until the lease can have expired.
    operator, context = _setup(tmp_path, released=False, age_s=0, ttl_s=3, timeout_s=1)
    seen = operator.execute(context)
    assert seen["liveness"] == "GONE" and "expired" in seen["evidence"], seen["evidence"]
