"""Stand-ins for the Airflow task instance the driver operators read their run's driver from."""

from __future__ import annotations

from typing import Any

from airflow_provider_eos.core.driver import DRIVER_XCOM_KEY, DriverHandle


class SubmittedDriverTI:
    """A pipeline DAG's task instance whose ``submit_stream`` recorded ``handle`` (XCom ``driver``)."""

    dag_id = "eos_pipeline__orders"

    def __init__(self, handle: DriverHandle) -> None:
        self.handle = handle

    def xcom_pull(self, task_ids: str, key: str = "return_value") -> Any:
        return self.handle.model_dump(mode="json") if key == DRIVER_XCOM_KEY and task_ids == "submit_stream" else None
