"""The trigger behind :class:`~airflow_provider_eos.sensors.health.StreamingQueryHealthSensor`.

It polls the pipeline's health every ``poke_interval`` seconds in the triggerer, keeping the
sliding window of samples (:class:`~airflow_provider_eos.core.health.LagWindow`) between polls,
and fires exactly one event. Its payload is a plain dict:

``outcome``
    ``healthy`` (``wait_healthy``: a batch committed after ``committed_after`` and the
    pipeline is not UNHEALTHY), ``unhealthy`` (``watch``: the pipeline is UNHEALTHY),
    ``timeout`` (``timeout_at`` passed), ``error`` (``max_probe_failures`` samples in a row
    failed), ``driver_failed`` (the task running the watched driver, ``driver_task``, failed:
    there is no stream left to watch, and recovery is waiting for the watch to end) or
    ``driver_stopped`` (``watch``: ``driver_task`` succeeded, the driver ended cleanly, and the
    report is UNHEALTHY by nothing but lag or commit age: nothing to watch, stop or recover).
``watch``, ``message``
    the mode and one sentence saying what happened.
``retryable``
    for ``error``: whether a retry of the task can help, the failed sample's error type's
    :attr:`~airflow_provider_eos.core.errors.EosError.retryable` (a missing ACL: no); true otherwise.
``report``, ``table``
    the newest :class:`~airflow_provider_eos.core.health.HealthReport` as ``to_dict()`` and as
    rendered text (``None`` if no sample succeeded).

Sampling is blocking I/O (admin requests, checkpoint listing), so it runs in a worker thread
(``asyncio.to_thread``) and never blocks the triggerer's event loop. What asks the Task SDK over
the triggerer's comms channel runs through asgiref's ``sync_to_async`` instead, as in Airflow's own
triggers (the standard provider's ``WorkflowTrigger``): the driver task's state, and the
connections, resolved once before the first sample (their secrets go to the masker the same way).
On Airflow 3.1 and 3.2 the channel's ``send`` is ``async_to_sync``, which from a thread
``asyncio.to_thread`` started cannot find the triggerer's event loop and desynchronizes the channel
("Response read out of order!"). Each sample first asks whether any broker answers (the probe every
use case runs, :meth:`~airflow_provider_eos.usecases.clients.PipelineClients.require_kafka`): with
the cluster down, a sample fails within ``kafka_connect_timeout_s`` with the sentence naming the
brokers, and the ``error`` event after ``max_probe_failures`` of them carries it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

import pendulum
from airflow.triggers.base import BaseTrigger, TriggerEvent
from asgiref.sync import sync_to_async

from airflow_provider_eos.airflow_stats import emit
from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.health import (
    DEFAULT_MAX_SAMPLES,
    DRIVER_TASK_FAILED_STATES,
    DRIVER_TASK_SUCCEEDED_STATES,
    HealthReport,
    HealthSample,
    LagWindow,
    RunInput,
    WatchMode,
    WatchOutcome,
    watch_outcome,
)
from airflow_provider_eos.core.metrics.task_metrics import health_metrics
from airflow_provider_eos.core.presentation import health_text
from airflow_provider_eos.usecases.clients import DEFAULT_CONNECT_TIMEOUT_S, PipelineClients

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["DRIVER_STATE_EVERY_S", "StreamingQueryHealthTrigger", "driver_task_state", "event_payload",
           "healthy_message", "outcome_message"]


#: How often a watch reads its driver task's state between samples: a driver task that failed (a SIGKILLed
#: driver, a task marked failed) ends the watch, and so starts the pipeline's recovery, within this, not a
#: whole ``poke_interval`` (30 s in the pipeline DAG) later. One Task SDK read: the sample's Kafka and
#: checkpoint reads keep their own interval (design note 81).
DRIVER_STATE_EVERY_S = 5.0


def _to_ms(moment: str) -> int:
    return int(pendulum.parse(moment).timestamp() * 1000)


def _now_ms() -> int:
    return int(pendulum.now("UTC").timestamp() * 1000)


def driver_task_state(driver_task: Mapping[str, str] | None) -> str | None:
    """The scheduler's state of the task that runs the driver (blocking); ``None`` when not known.

    Read through the Task SDK, as the standard provider's workflow trigger reads other tasks'
    states; a failed read keeps the watch going (the health samples still decide). In a trigger,
    call it through ``sync_to_async`` (see the module).
    """
    if not driver_task:
        return None
    try:
        from airflow.sdk.execution_time.task_runner import RuntimeTaskInstance

        states = RuntimeTaskInstance.get_task_states(
            dag_id=driver_task["dag_id"], run_ids=[driver_task["run_id"]], task_ids=[driver_task["task_id"]]
        )
    except Exception as err:  # the comms channel or the API: never end a watch on a failed read
        logging.getLogger(__name__).warning("could not read the state of %s: %s", driver_task["task_id"], err)
        return None
    state = states.get(driver_task["run_id"], {}).get(driver_task["task_id"])
    return None if state is None else str(state)


def healthy_message(
    report: HealthReport, committed_after: str, committed_after_ms: int, run_input: RunInput | None = None
) -> str:
    """Why a ``wait_healthy`` ended healthy: a batch committed after its start, or the run's input all read."""
    if report.committed_since(committed_after_ms):
        return f"batch {report.last_committed} committed after {committed_after}; {report.status.value}"
    if run_input is not None:
        ends = ", ".join(f"{row.tp}@{row.end}" for row in run_input.ends) or "no partition"
        return (f"the driver task succeeded and the group read all the run's input (its ends when the run "
                f"started: {ends}): nothing to commit after {committed_after}, input that arrived since is the "
                f"next run's; pipeline {report.pipeline} is {report.status.value}")
    return (f"the driver task succeeded and no input waits (zero lag on every input partition): nothing to "
            f"commit after {committed_after}; pipeline {report.pipeline} is {report.status.value}")


def outcome_message(outcome: WatchOutcome, report: HealthReport, committed_after: str,
                    run_input: RunInput | None = None) -> str:
    """The sentence a sensor's check ends with (the trigger words its timeout and errors itself)."""
    if outcome is WatchOutcome.HEALTHY:
        return healthy_message(report, committed_after, _to_ms(committed_after), run_input)
    if outcome is WatchOutcome.UNHEALTHY:
        return f"pipeline {report.pipeline} is UNHEALTHY"
    if outcome is WatchOutcome.DRIVER_FAILED:
        return f"the task running the driver of pipeline {report.pipeline} failed: the stream no longer runs"
    if outcome is WatchOutcome.DRIVER_STOPPED:
        return (f"the task running the driver of pipeline {report.pipeline} succeeded: the driver stopped cleanly "
                f"(a requested stop), nothing is left to watch and nothing to recover; pipeline "
                f"{report.pipeline} is {report.status.value}")
    return f"the watch of pipeline {report.pipeline} ended without an unhealthy report"


def event_payload(
    outcome: WatchOutcome, mode: WatchMode, message: str, report: HealthReport | None, *, retryable: bool = True
) -> dict[str, Any]:
    """The payload of the trigger's event (also used by the sensor's synchronous check).

    :param outcome: how the watch ended.
    :param mode: the watch mode.
    :param message: one sentence saying what happened.
    :param report: the newest report, if any.
    :param retryable: for an ``error``, whether a retry of the task can change it.
    """
    return {
        "outcome": outcome.value,
        "watch": mode.value,
        "message": message,
        "retryable": retryable,
        "report": None if report is None else report.to_dict(),
        "table": None if report is None else health_text(report),
    }


class StreamingQueryHealthTrigger(BaseTrigger):
    """Poll a pipeline's health until it is healthy (``wait_healthy``), unhealthy (``watch``) or time is up.

    :param spec_path: the pipeline spec file (must be readable by the triggerer).
    :param watch: ``wait_healthy`` or ``watch`` (see :class:`~airflow_provider_eos.core.health.WatchMode`).
    :param committed_after: ISO time a commit must be newer than for ``wait_healthy``.
    :param timeout_at: ISO time at which to fire a ``timeout`` event; ``None``: never (a ``watch``
        beside its driver's task, which ends with that task).
    :param poke_interval: seconds between samples.
    :param window: the serialized window so far (:meth:`LagWindow.to_dict`); ``None``: empty.
    :param max_samples: samples the window keeps.
    :param thresholds: overrides of the thresholds derived from the spec (milliseconds).
    :param kafka_conn_id: an Airflow ``kafka`` connection replacing the spec's connection settings.
    :param checkpoint_conn_id: an Airflow connection with the checkpoint storage credentials.
    :param max_probe_failures: failed samples in a row before an ``error`` event.
    :param driver_task: ``{"dag_id", "run_id", "task_id"}`` of the task that runs the driver;
        its state is read through the Task SDK before each sample and, between samples, every
        :data:`DRIVER_STATE_EVERY_S` (its failure ends the watch at once; for
        ``wait_healthy``, its success lets the run's input all read count as healthy). ``None``: not watched.
    :param kafka_connect_timeout_s: how long each sample waits for any broker to answer before it
        fails with ``KafkaUnreachableError`` (the operators' parameter of the same name).
    :param run_input: the input of the driver task's run as it recorded it
        (:class:`~airflow_provider_eos.core.health.RunInput` in JSON): once the driver task succeeded,
        ``wait_healthy`` compares the group with it rather than with input that arrived since. ``None``:
        not recorded (zero lag everywhere stands for it).
    """

    def __init__(
        self,
        *,
        spec_path: str,
        watch: str = WatchMode.WAIT_HEALTHY.value,
        committed_after: str,
        timeout_at: str | None = None,
        poke_interval: float = 60.0,
        window: Mapping[str, Any] | None = None,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        thresholds: Mapping[str, Any] | None = None,
        kafka_conn_id: str | None = None,
        checkpoint_conn_id: str | None = None,
        max_probe_failures: int = 3,
        driver_task: Mapping[str, str] | None = None,
        kafka_connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        run_input: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.spec_path = spec_path
        self.watch = WatchMode.parse(watch).value
        self.committed_after = committed_after
        self.timeout_at = timeout_at
        self.poke_interval = float(poke_interval)
        self.window = dict(window) if window is not None else None
        self.max_samples = max_samples
        self.thresholds = dict(thresholds) if thresholds else None
        self.kafka_conn_id = kafka_conn_id
        self.checkpoint_conn_id = checkpoint_conn_id
        self.max_probe_failures = max_probe_failures
        self.driver_task = dict(driver_task) if driver_task else None
        self.kafka_connect_timeout_s = float(kafka_connect_timeout_s)
        self.run_input = dict(run_input) if run_input else None
        self._spec: PipelineSpec | None = None
        self._storage_options: dict[str, Any] | None = None

    def serialize(self) -> tuple[str, dict[str, Any]]:
        """Classpath and keyword arguments; ``window`` holds the samples taken so far."""
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "spec_path": self.spec_path,
                "watch": self.watch,
                "committed_after": self.committed_after,
                "timeout_at": self.timeout_at,
                "poke_interval": self.poke_interval,
                "window": self.window,
                "max_samples": self.max_samples,
                "thresholds": self.thresholds,
                "kafka_conn_id": self.kafka_conn_id,
                "checkpoint_conn_id": self.checkpoint_conn_id,
                "max_probe_failures": self.max_probe_failures,
                "driver_task": self.driver_task,
                "kafka_connect_timeout_s": self.kafka_connect_timeout_s,
                "run_input": self.run_input,
            },
        )

    # -- Task SDK calls, run through sync_to_async ----------------------------------------------

    def _load(self) -> PipelineSpec:
        """Read the spec and resolve the connections (blocking; the Task SDK's comms channel), once."""
        if self._spec is None:
            from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook
            from airflow_provider_eos.hooks.kafka_admin import load_pipeline_spec

            spec = load_pipeline_spec(self.spec_path, self.kafka_conn_id or None)
            self._storage_options = CheckpointStorageHook(self.checkpoint_conn_id or None).get_storage_options(
                spec.checkpoint_location
            )
            self._spec = spec
        return self._spec

    # -- Kafka and checkpoint I/O, run in a thread (asyncio.to_thread) ---------------------------

    def _loaded(self) -> PipelineSpec:
        """The spec :meth:`_load` resolved: the sampling threads never look up a connection themselves."""
        if self._spec is None:
            raise RuntimeError("the trigger samples only after _load resolved the spec and its connections")
        return self._spec

    def _sample(self) -> HealthSample:
        """Take one sample (blocking); new clients each time, so that each sample asks whether a broker answers."""
        from airflow_provider_eos.usecases.health import sample

        # Closed here: a sample that timed out leaves its request pending (PipelineClients.close says why).
        with PipelineClients(self._loaded(), self._storage_options or {},
                             connect_timeout_s=self.kafka_connect_timeout_s) as clients:
            return sample(clients, thresholds=self.thresholds)

    def _evaluate(self, window: LagWindow) -> HealthReport:
        from airflow_provider_eos.usecases.health import evaluate

        report = evaluate(self._loaded(), window, thresholds=self.thresholds)
        emit(health_metrics(report))
        return report

    async def _sample_and_evaluate(self, window: LagWindow) -> HealthReport:
        """Take a sample into ``window`` and evaluate it, off the event loop.

        The connections are resolved first (once) through ``sync_to_async``; the sample and the
        evaluation, Kafka and checkpoint I/O alone, in a thread of ``asyncio.to_thread``.
        """
        if self._spec is None:
            await sync_to_async(self._load)()
        if window.add(await asyncio.to_thread(self._sample)) and window.latest is not None:
            # The sensor's worker (or a triggerer before this one) dated its samples by a clock ahead of this one.
            self.log.warning("Health window: %s", window.latest.notes[-1])
        return await asyncio.to_thread(self._evaluate, window)

    # -- the loop --------------------------------------------------------------------------------

    def _timeout_message(self, mode: WatchMode, last_error: str) -> str:
        """What the timeout event says: what the watch waited for, and the last failed sample's error if any."""
        message = f"timed out at {self.timeout_at}: " + (
            "the watch ended without an unhealthy report"
            if mode is WatchMode.WATCH
            else f"no batch was committed after {self.committed_after} while the pipeline was healthy"
        )
        return f"{message}; the last sample failed: {last_error}" if last_error else message

    async def _pause_watching_the_driver(self, pause_s: float) -> str | None:
        """Wait ``pause_s`` seconds before the next sample; the driver task's state read last.

        With a ``driver_task``, its state is read every :data:`DRIVER_STATE_EVERY_S` meanwhile, and a
        failed one ends the wait early. Without one, one sleep.
        """
        end = time.monotonic() + max(pause_s, 0.0)
        while True:
            left = end - time.monotonic()
            if left > 0:
                await asyncio.sleep(min(left, DRIVER_STATE_EVERY_S) if self.driver_task else left)
            state = await sync_to_async(driver_task_state)(self.driver_task)
            if state in DRIVER_TASK_FAILED_STATES or time.monotonic() >= end:
                return state

    async def run(  # the trigger's event loop: each of its exits yields one event
        self,
    ) -> AsyncIterator[TriggerEvent]:
        """Sample every ``poke_interval`` seconds and yield one event (see the module docstring)."""
        mode = WatchMode(self.watch)
        committed_after_ms = _to_ms(self.committed_after)
        run_input = None if self.run_input is None else RunInput.model_validate(self.run_input)
        deadline_ms = None if self.timeout_at is None else _to_ms(self.timeout_at)
        window = LagWindow.from_dict(self.window, max_samples=self.max_samples)
        report: HealthReport | None = None
        failures = 0
        last_error = ""
        while True:
            # The sensor checked just before deferring, so the first sample waits one interval.
            pause = self.poke_interval
            if deadline_ms is not None:
                pause = min(pause, (deadline_ms - _now_ms()) / 1000)
            driver_state = await self._pause_watching_the_driver(pause)
            driver_succeeded = driver_state in DRIVER_TASK_SUCCEEDED_STATES
            if driver_state in DRIVER_TASK_FAILED_STATES:
                assert self.driver_task is not None
                message = f"{self.driver_task['task_id']} is {driver_state}: the stream no longer runs"
                yield TriggerEvent(event_payload(WatchOutcome.DRIVER_FAILED, mode, message, report))
                return
            if deadline_ms is not None and _now_ms() >= deadline_ms:
                message = self._timeout_message(mode, last_error)
                yield TriggerEvent(event_payload(WatchOutcome.TIMEOUT, mode, message, report))
                return
            try:
                report = await self._sample_and_evaluate(window)
            except Exception as err:
                # Any failure is a failed sample ending, at worst, in an ``error`` event: a trigger that
                # raised would fail the task with no outcome, and stop_stream stop a stream nobody judged.
                if isinstance(err, EosError) and not err.retryable:
                    # Another sample cannot change it (no retry grants an ACL): say so now, not after
                    # max_probe_failures samples, and the task fails without retry.
                    message = f"a health sample failed, and no retry can change it: {err}"
                    yield TriggerEvent(event_payload(WatchOutcome.ERROR, mode, message, report, retryable=False))
                    return
                failures += 1
                ours = isinstance(err, EosError)
                last_error = err.message if isinstance(err, EosError) else f"{type(err).__name__}: {err}"
                described = str(err) if ours else last_error
                self.log.warning("Health sample %d of %d failed: %s", failures, self.max_probe_failures, described,
                                 exc_info=not ours)
                if failures >= self.max_probe_failures:
                    message = f"{failures} health samples in a row failed; the last: {described}"
                    yield TriggerEvent(event_payload(WatchOutcome.ERROR, mode, message, report))
                    return
                continue
            failures = 0
            last_error = ""
            # Kept current so a re-serialized trigger (e.g. in a log) shows the window it holds.
            self.window = window.to_dict()
            self.log.info(
                "Pipeline %s: %s (%d sample(s)); %s",
                report.pipeline,
                report.status.value,
                len(window),
                "; ".join(f"{f.subject}: {f.detail}" for f in report.problems) or "no findings",
            )
            outcome = watch_outcome(report, mode, committed_after_ms, driver_succeeded=driver_succeeded,
                                    run_input=run_input)
            if outcome is WatchOutcome.HEALTHY:
                message = healthy_message(report, self.committed_after, committed_after_ms, run_input)
                yield TriggerEvent(event_payload(outcome, mode, message, report))
                return
            if outcome in (WatchOutcome.UNHEALTHY, WatchOutcome.DRIVER_STOPPED):
                message = outcome_message(outcome, report, self.committed_after, run_input)
                yield TriggerEvent(event_payload(outcome, mode, message, report))
                return
