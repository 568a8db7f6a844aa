"""The recovery gate on a worker that did not submit the driver: the lease in the checkpoint decides (issue 26)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.driver import DRIVER_XCOM_KEY, DriverHandle, driver_token
from airflow_provider_eos.core.driver_lease import DriverLease, write_driver_lease
from airflow_provider_eos.core.spec import PipelineSpec

pytestmark = pytest.mark.airflow

RUN_ID = "manual__2026-11-27"


class _TaskInstance:
    dag_id = "eos_pipeline"

    def __init__(self, handle: DriverHandle) -> None:
        self.handle = handle

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        return self.handle.model_dump(mode="json") if key == DRIVER_XCOM_KEY and task_ids == "submit_stream" else None

    def get_task_states(self, **_: Any) -> dict:
        return {RUN_ID: {"submit_stream": "failed"}}


def _setup(tmp_path: Path, *, released: bool, age_s: float) -> tuple[Any, dict]:
    from airflow_provider_eos.operators.driver import ConfirmDriverGoneOperator

    spec = PipelineSpec(name="orders", kafka={"bootstrap.servers": "b:9092"}, input_topics=["in"],
                        output_topic="out", group_id="g", transactional_id_prefix="orders",
                        checkpoint_location=str(tmp_path / "checkpoint"))
    spec_file = tmp_path / "orders.yaml"
    spec_file.write_text(yaml.safe_dump(spec.to_dict()))
    now = dt.datetime.now(dt.UTC)
    token = driver_token("orders", "eos_pipeline", RUN_ID)
    # Submitted from another worker: its process table is nothing this one can read.
    handle = DriverHandle(pipeline="orders", token=token, host="celery-worker-7", submitted_at=now - dt.timedelta(
        minutes=5), boot_id="another-boot", pid_namespace=1, uid=50000)
    write_driver_lease(CheckpointReader(spec.checkpoint_location), DriverLease(
        token=token, host="celery-worker-7", pid=4242, started_at=now - dt.timedelta(minutes=4),
        renewed_at=now - dt.timedelta(seconds=age_s), ttl_s=30, sequence=12, released=released))
    operator = ConfirmDriverGoneOperator(task_id="confirm_driver_gone", spec_path=str(spec_file),
                                         submit_task_ids=["submit_stream"], stopped_by="stop_stream", timeout_s=1)
    return operator, {"ti": _TaskInstance(handle), "run_id": RUN_ID}


def test_a_released_lease_lets_recovery_run_from_a_worker_that_cannot_see_the_driver(tmp_path: Path) -> None:
    operator, context = _setup(tmp_path, released=True, age_s=2)
    seen = operator.execute(context)
    assert seen["liveness"] == "GONE", seen["evidence"]
    assert "process table: no evidence" in seen["evidence"] and "driver lease: GONE" in seen["evidence"]


def test_a_fresh_lease_keeps_recovery_from_running(tmp_path: Path) -> None:
    from airflow.providers.common.compat.sdk import AirflowFailException

    operator, context = _setup(tmp_path, released=False, age_s=2)
    with pytest.raises(AirflowFailException, match="driver lease: ALIVE"):
        operator.execute(context)
