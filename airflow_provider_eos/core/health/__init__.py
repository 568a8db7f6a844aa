"""Health of a running pipeline, judged from what exists without the job's cooperation (docs/architecture.md).

A *sample* (:class:`HealthSample`, :mod:`.samples`) is one look at the pipeline: per input
partition the last stable offset (LSO, ``read_committed`` end), the high watermark (HWM), the
log start offset and the sink group's committed offset with its batch marker; LSO and HWM of
the output and dead-letter partitions; the checkpoint's newest ``commits/N`` and its time; the
transactions the coordinators list under the transactional id prefix; and the verification
verdict. The Kafka and checkpoint I/O that takes a sample lives in
:mod:`airflow_provider_eos.kafka.health_probe`; everything here is pure.

Samples accumulate in a bounded sliding :class:`LagWindow` (:mod:`.window`, oldest dropped
first), and :func:`evaluate` (:mod:`.evaluate`) turns the window into a :class:`HealthReport`
(:mod:`.report`; its text and card in :mod:`airflow_provider_eos.core.presentation`). Five signals:

1. lag per input partition, by the Burrow-style rules OK / WARN / STALL / STOP / REWIND, one
   small function each (:mod:`.lag_rules`);
2. the age of the newest commit, 3. hanging partitions (LSO < HWM, unmoving), 4. lingering
   transactions under the prefix, 5. the verification verdict (:mod:`.findings`).

The overall :class:`HealthStatus` is the worst finding: HEALTHY < DEGRADED < UNHEALTHY.
:attr:`HealthReport.is_healthy` is true unless UNHEALTHY (DEGRADED pipelines make progress).
What a sensor makes of a report is :mod:`.watch`. Every value here is a pydantic model:
``model_dump(mode="json")`` is its JSON form and ``model_validate`` reads it back.
"""

from __future__ import annotations

from airflow_provider_eos.core.health.evaluate import evaluate
from airflow_provider_eos.core.health.findings import Finding, OpenTransaction, PartitionGap
from airflow_provider_eos.core.health.lag_rules import PartitionLag
from airflow_provider_eos.core.health.report import HealthReport
from airflow_provider_eos.core.health.run_input import RUN_INPUT_XCOM_KEY, InputEnd, RunInput, input_left_behind
from airflow_provider_eos.core.health.samples import (
    HealthSample,
    InFlightBatch,
    InputPartitionSample,
    OutputPartitionSample,
    VerificationSample,
)
from airflow_provider_eos.core.health.statuses import HealthError, HealthStatus, LagStatus
from airflow_provider_eos.core.health.thresholds import HealthThresholds
from airflow_provider_eos.core.health.watch import (
    DRIVER_TASK_FAILED_STATES,
    DRIVER_TASK_SUCCEEDED_STATES,
    WATCH_OUTCOME_XCOM_KEY,
    WatchMode,
    WatchOutcome,
    ends_at_timeout,
    no_input_waiting,
    run_input_read,
    stops_the_driver,
    watch_outcome,
)
from airflow_provider_eos.core.health.window import DEFAULT_MAX_SAMPLES, LagWindow

__all__ = [
    "DEFAULT_MAX_SAMPLES",
    "DRIVER_TASK_FAILED_STATES",
    "DRIVER_TASK_SUCCEEDED_STATES",
    "RUN_INPUT_XCOM_KEY",
    "WATCH_OUTCOME_XCOM_KEY",
    "Finding",
    "HealthError",
    "HealthReport",
    "HealthSample",
    "HealthStatus",
    "HealthThresholds",
    "InFlightBatch",
    "InputEnd",
    "InputPartitionSample",
    "LagStatus",
    "LagWindow",
    "OpenTransaction",
    "OutputPartitionSample",
    "PartitionGap",
    "PartitionLag",
    "RunInput",
    "VerificationSample",
    "WatchMode",
    "WatchOutcome",
    "ends_at_timeout",
    "evaluate",
    "input_left_behind",
    "no_input_waiting",
    "run_input_read",
    "stops_the_driver",
    "watch_outcome",
]
