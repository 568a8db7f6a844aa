"""The input of an ``available_now`` run, recorded by its submit task and read by the run's ``wait_healthy`` watch.

The submit task reads each input partition's end before spark-submit starts the job
(:func:`~airflow_provider_eos.usecases.health.run_input`) and pushes it as the XCom
:data:`~airflow_provider_eos.core.health.RUN_INPUT_XCOM_KEY`; the health sensor whose
``driver_task_id`` names that task pulls it, so that input arriving after the job ended is not
mistaken for input the job left behind (:mod:`airflow_provider_eos.core.health.run_input`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.health import RUN_INPUT_XCOM_KEY, RunInput

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["pull_run_input", "record_run_input"]


def record_run_input(ti: Any, spec: PipelineSpec, log: logging.Logger) -> None:
    """Push the input an ``available_now`` run of ``spec`` has to process; nothing for a processing-time spec.

    Best effort: a failed read is logged and nothing is pushed, and the watch then judges by the live
    lag, as for a driver task that records none. The job itself reads Kafka wherever it runs: a worker
    that cannot must not keep it from starting.

    :param ti: the submit task's instance (its ``xcom_push``).
    :param spec: the pipeline, with the job's connection settings.
    :param log: the task's logger.
    """
    if spec.trigger_interval_ms is not None:
        return
    from airflow_provider_eos.usecases.clients import PipelineClients
    from airflow_provider_eos.usecases.health import run_input

    try:
        found = run_input(PipelineClients(spec))
    except EosError as err:
        log.warning("Could not read the input's end offsets before the run (%s); the run's wait_healthy watch "
                    "judges by the live lag instead", err)
        return
    ti.xcom_push(key=RUN_INPUT_XCOM_KEY, value=found.model_dump(mode="json"))
    log.info("The run's input ends at %s", ", ".join(f"{row.tp}@{row.end}" for row in found.ends) or "nothing")


def pull_run_input(context: Mapping[str, Any], task_id: str | None, log: logging.Logger) -> RunInput | None:
    """The input the run of ``task_id`` recorded (:func:`record_run_input`); ``None`` when none or unreadable.

    :param context: the pulling task's context (its ``ti``).
    :param task_id: the task of this run that ran the driver; ``None``: none is named.
    :param log: the task's logger.
    """
    if not task_id:
        return None
    value = context["ti"].xcom_pull(task_ids=task_id, key=RUN_INPUT_XCOM_KEY)
    if value is None:
        return None
    try:
        return RunInput.model_validate(value)
    except ValidationError as err:
        log.warning("The XCom %s of %s is not a run's input (%s); judging by the live lag", RUN_INPUT_XCOM_KEY,
                    task_id, err)
        return None
