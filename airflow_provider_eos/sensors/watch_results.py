"""How a health watch's outcome ends the sensor's task: its result, or the failure Airflow acts on.

``healthy`` and ``driver_stopped`` (and ``timeout`` of a watch) return the report; ``unhealthy`` and
``driver_failed`` fail without retry; ``timeout`` of a wait is a sensor timeout (``soft_fail``
applies); an error fails retryably unless no retry can change it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from logging import Logger
from typing import Any

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException, AirflowSensorTimeout

from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.health import WatchMode, WatchOutcome

__all__ = ["result_of", "task_failure"]


def task_failure(err: EosError) -> AirflowException:
    """An ``EosError`` as the task's failure: retried only when its type says a retry can change it."""
    return (AirflowException if err.retryable else AirflowFailException)(str(err))


def result_of(event: Mapping[str, Any], log: Logger,
              push: Callable[[dict[str, Any] | None], None]) -> dict[str, Any] | None:
    """The task's result for a watch's outcome (a trigger event's payload), or its failure raised.

    :param push: pushes the report as the task's result before a failure (Airflow pushes a returned one).
    """
    outcome = WatchOutcome(event["outcome"])
    mode = WatchMode(event["watch"])
    report: dict[str, Any] | None = event.get("report")
    table: str = event.get("table") or "(no health report: no sample succeeded)"
    message: str = event.get("message", "")
    if outcome in (WatchOutcome.HEALTHY, WatchOutcome.DRIVER_STOPPED) or (
        outcome is WatchOutcome.TIMEOUT and mode is WatchMode.WATCH
    ):
        log.info("%s\n%s", message, table)
        return report
    push(report)
    if outcome in (WatchOutcome.UNHEALTHY, WatchOutcome.DRIVER_FAILED):
        raise AirflowFailException(f"{message}:\n{table}")
    if outcome is WatchOutcome.TIMEOUT:
        raise AirflowSensorTimeout(f"{message}\n{table}")
    # An event of a trigger serialized before the key existed is retryable, as every error was then.
    retryable = event.get("retryable", True)
    raise (AirflowException if retryable else AirflowFailException)(f"{message}\n{table}")
