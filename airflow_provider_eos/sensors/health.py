"""Supervise a running exactly-once pipeline from Airflow (docs/architecture.md, supervision).

:class:`StreamingQueryHealthSensor` checks the pipeline's health once, synchronously, and if
that does not settle it, defers to
:class:`~airflow_provider_eos.triggers.health.StreamingQueryHealthTrigger`, which keeps
sampling in the triggerer. The signals and rules are
:mod:`airflow_provider_eos.core.health`.

Outcomes:

* ``wait_healthy`` succeeds once a batch was committed after the sensor started (or after
  ``committed_after``) and the pipeline is not UNHEALTHY, or, once the ``driver_task_id`` task
  succeeded (an ``available_now`` run that ended), when the sink group read the run's input up to
  the ends that task recorded before the job started (XCom ``run_input``; without it, zero lag)
  and nothing but lag or commit age is UNHEALTHY: input that arrived later is the next run's. It
  fails with a sensor timeout, and the last report, if that does not happen within ``timeout``.
* ``watch`` fails without retrying (``AirflowFailException``, the report table in the message)
  as soon as the pipeline is UNHEALTHY. Beside the task that runs its driver (``driver_task_id``)
  it lasts as long as that task: it fails when the task fails and succeeds when it succeeded (the
  driver stopped cleanly), and ``timeout`` does not end it (a watch that ended while the stream ran
  would leave it unsupervised; :func:`~airflow_provider_eos.core.health.ends_at_timeout`). Without
  a driver task it succeeds when ``timeout`` passes without an UNHEALTHY report.

Either way the report's ``to_dict()`` is the task's XCom ``return_value`` (pushed before
failing, too), and the outcome (``healthy``, ``unhealthy``, ``timeout``, ``error``,
``driver_failed``, ``driver_stopped``) is the XCom ``watch_outcome``: the ``stop_stream`` of a pipeline's DAG
(``eos_pipeline__<name>``) stops the driver only on ``unhealthy`` or ``driver_failed``. Samples
that cannot be taken (broker unreachable) fail the task with a retryable ``AirflowException``
once ``max_probe_failures`` of them fail in a row; an error no retry can change (a missing ACL,
a malformed checkpoint: its type's ``retryable`` is false) fails it at once, without retry. Every
sample first asks whether any broker answers, as every use case does: with none answering, it fails within
``kafka_connect_timeout_s`` (5 s) with the sentence naming the brokers
(``KafkaUnreachableError``), the words of the CLI and the operators; the first check, before
deferring, fails the task with it (retryable).

``soft_fail`` (and ``never_fail``) turn these failures into a skip by Airflow's own rules: the
check before deferring is treated as Airflow treats the same outcome after the deferral
(``BaseSensorOperator.resume_execution``), and a poking sensor as Airflow's poke loop does.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pendulum

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.providers.common.compat.sdk import AirflowException, AirflowFailException
from airflow.sdk import BaseSensorOperator, PokeReturnValue

# The Task SDK's own module: Airflow 3.1's `airflow.sdk` (SDK 1.1) does not re-export BaseXCom yet.
from airflow.sdk.bases.xcom import BaseXCom

from airflow_provider_eos.airflow_stats import emit
from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.health import (
    DEFAULT_MAX_SAMPLES,
    DRIVER_TASK_FAILED_STATES,
    DRIVER_TASK_SUCCEEDED_STATES,
    WATCH_OUTCOME_XCOM_KEY,
    HealthError,
    HealthReport,
    LagWindow,
    RunInput,
    WatchMode,
    WatchOutcome,
    ends_at_timeout,
    watch_outcome,
)
from airflow_provider_eos.core.metrics.task_metrics import health_metrics
from airflow_provider_eos.core.presentation import health_text
from airflow_provider_eos.operators.run_input import pull_run_input
from airflow_provider_eos.sensors.health_arguments import committed_after_moment, threshold_overrides
from airflow_provider_eos.sensors.watch_results import result_of, task_failure
from airflow_provider_eos.triggers.health import (
    StreamingQueryHealthTrigger,
    driver_task_state,
    event_payload,
    outcome_message,
)
from airflow_provider_eos.usecases.clients import DEFAULT_CONNECT_TIMEOUT_S, PipelineClients

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["StreamingQueryHealthSensor"]

# The deferral's own timeout only backs up the trigger's, whose event carries the last report.
_DEFER_GRACE_S = 120


def _ms(moment: dt.datetime) -> int:
    return int(moment.timestamp() * 1000)


class StreamingQueryHealthSensor(BaseSensorOperator):
    """Wait until a pipeline's job committed its first batch healthily, or watch it and fail when unhealthy.

    :param spec_path: the pipeline spec file. (templated)
    :param watch: ``wait_healthy`` (succeed on the first batch committed after the start, while
        not UNHEALTHY) or ``watch`` (fail when UNHEALTHY; succeed when the ``driver_task_id`` task
        succeeded, or without one at ``timeout``). Named ``watch`` because ``mode`` is the sensor's
        poke/reschedule mode. (templated)
    :param committed_after: ISO time a commit must be newer than for ``wait_healthy``; default:
        when the sensor started. (templated)
    :param thresholds: overrides of the thresholds derived from the spec (and of its ``health_thresholds``),
        in milliseconds (``warn_after_ms``, ``stop_after_ms``, ``hang_after_ms``, ``input_hang_after_ms``,
        ``lingering_after_ms``, ``min_samples``). Each value may be a template: one that renders digits only
        (``"{{ var.value.warn_ms }}"`` -> ``"5000"``) counts as that integer; anything else that is
        not a positive integer fails the task, naming the threshold. The whole dict as one template
        needs the DAG's ``render_template_as_native_obj=True`` (else it renders as a string). (templated)
    :param max_samples: samples the sliding window keeps.
    :param max_probe_failures: failed samples in a row before the task fails (retryable).
    :param kafka_conn_id: an Airflow ``kafka`` connection whose settings replace the spec's
        connection settings. (templated)
    :param checkpoint_conn_id: an Airflow connection with the checkpoint storage credentials.
        (templated)
    :param deferrable: check once, then wait in the triggerer (default); ``False`` pokes in
        the worker (``mode="poke"`` keeps the window between pokes; ``mode="reschedule"``
        evaluates each poke alone, so the lag trends and hanging need the deferrable or poke mode).
    :param poke_interval: seconds between samples.
    :param timeout: seconds until ``wait_healthy`` gives up or a ``watch`` without ``driver_task_id``
        ends successfully; a ``watch`` with one lasts as long as that task, whatever ``timeout`` says.
    :param driver_task_id: the task of this run that runs the watched driver; when it fails,
        the watch fails at once (the stream no longer runs) instead of waiting for the health
        rules to notice, so recovery does not wait for the watch. For ``watch``, once it
        succeeded (the driver stopped cleanly), the watch succeeds with the outcome
        ``driver_stopped`` unless the report is UNHEALTHY by more than lag or commit age, and
        until it ends the watch has no deadline. For ``wait_healthy``, once it
        succeeded, a report whose group read the run's input (the ends the task recorded in the
        XCom ``run_input``; zero lag without them), UNHEALTHY by nothing but lag or commit age,
        ends the wait (see :func:`~airflow_provider_eos.core.health.watch_outcome`).
    :param kafka_connect_timeout_s: how long each sample waits for any broker to answer before it
        fails with ``KafkaUnreachableError`` (the operators' parameter; the CLI's ``--timeout``).
    """

    template_fields: Sequence[str] = (
        "spec_path",
        "watch",
        "committed_after",
        "thresholds",
        "kafka_conn_id",
        "checkpoint_conn_id",
    )
    ui_color = "#d7ecd9"

    def __init__(
        self,
        *,
        spec_path: str,
        watch: str = WatchMode.WAIT_HEALTHY.value,
        committed_after: str | dt.datetime | None = None,
        thresholds: Mapping[str, Any] | None = None,
        max_samples: int = DEFAULT_MAX_SAMPLES,
        max_probe_failures: int = 3,
        kafka_conn_id: str | None = None,
        checkpoint_conn_id: str | None = None,
        deferrable: bool = True,
        poke_interval: float = 30,
        timeout: float = 3600,
        driver_task_id: str | None = None,
        kafka_connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(poke_interval=poke_interval, timeout=timeout, **kwargs)
        self.spec_path = spec_path
        self.watch = watch
        self.committed_after = committed_after
        self.thresholds = thresholds
        self.max_samples = max_samples
        self.max_probe_failures = max_probe_failures
        self.kafka_conn_id = kafka_conn_id
        self.checkpoint_conn_id = checkpoint_conn_id
        self.deferrable = deferrable
        self.driver_task_id = driver_task_id
        self.kafka_connect_timeout_s = kafka_connect_timeout_s
        self._window: LagWindow | None = None
        self._started: pendulum.DateTime | None = None
        self._failures = 0

    # -- shared -------------------------------------------------------------------------------

    def _mode(self) -> WatchMode:
        try:
            return WatchMode.parse(self.watch)
        except HealthError as err:
            raise AirflowFailException(str(err)) from err

    def _started_at(self, context: Context) -> pendulum.DateTime:
        if self._started is None:
            first = context["ti"].get_first_reschedule_date(context) if self.reschedule else None
            self._started = pendulum.instance(first) if first is not None else pendulum.now("UTC")
        return self._started

    def _committed_after(self, context: Context) -> pendulum.DateTime:
        return committed_after_moment(self.committed_after, self._started_at(context))

    def _threshold_overrides(self) -> dict[str, Any] | None:
        return threshold_overrides(self.thresholds)

    def _load(self) -> tuple[PipelineSpec, dict[str, Any]]:
        from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook
        from airflow_provider_eos.hooks.kafka_admin import load_pipeline_spec

        spec = load_pipeline_spec(self.spec_path, self.kafka_conn_id or None)
        options = CheckpointStorageHook(self.checkpoint_conn_id or None).get_storage_options(spec.checkpoint_location)
        return spec, options

    def _check(self, context: Context) -> HealthReport:
        """Take a sample, add it to the window and evaluate it (blocking).

        A failed sample records the outcome ``error`` first, whatever the error: the watch could not
        look, which says nothing against the stream
        (:func:`~airflow_provider_eos.core.health.stops_the_driver`). An error that is neither an
        ``EosError`` nor Airflow's fails the task as a retryable ``AirflowException``.
        """
        from airflow_provider_eos.usecases.health import evaluate, sample

        if self._window is None:
            self._window = LagWindow(max_samples=self.max_samples)
        try:
            spec, options = self._load()
            # New clients per sample: each asks again whether a broker answers (the answer is cached in them).
            with PipelineClients(spec, options, connect_timeout_s=self.kafka_connect_timeout_s) as clients:
                taken = sample(clients, thresholds=self._threshold_overrides())
            if self._window.add(taken) and self._window.latest is not None:
                self.log.warning("Health window: %s", self._window.latest.notes[-1])
            report = evaluate(spec, self._window, thresholds=self._threshold_overrides())
        except Exception as err:
            # Whatever failed (a client's own error type, a bug), the watch could not look: record it as
            # such, so that stop_stream leaves the stream alone, rather than fail without an outcome.
            self._record_outcome(context, WatchOutcome.ERROR)
            if isinstance(err, EosError):
                raise task_failure(err) from err
            if isinstance(err, AirflowException):
                raise
            raise AirflowException(f"a health sample failed: {type(err).__name__}: {err}") from err
        self.log.info("%s", health_text(report))
        emit(health_metrics(report))
        return report

    def _push_before_failing(self, context: Context, value: dict[str, Any] | None) -> None:
        if self.do_xcom_push and value is not None:
            context["ti"].xcom_push(key=BaseXCom.XCOM_RETURN_KEY, value=value)

    def _record_outcome(self, context: Context, outcome: WatchOutcome) -> None:
        """Push how the watch ended (:data:`~airflow_provider_eos.core.health.WATCH_OUTCOME_XCOM_KEY`).

        A task downstream tells a stream found unhealthy from a watch that could not look: stopping
        the driver is for the first only (:func:`~airflow_provider_eos.core.health.stops_the_driver`).
        Pushed whatever ``do_xcom_push`` says: it is the outcome, not the result.
        """
        ti = context.get("ti")
        if ti is not None:
            ti.xcom_push(key=WATCH_OUTCOME_XCOM_KEY, value=outcome.value)

    def _finish(self, context: Context, event: Mapping[str, Any]) -> dict[str, Any] | None:
        """Turn an outcome (a trigger event's payload) into the task's result or failure."""
        self._record_outcome(context, WatchOutcome(event["outcome"]))
        return result_of(event, self.log, push=lambda report: self._push_before_failing(context, report))

    def _driver_task(self, context: Context) -> dict[str, str] | None:
        if not self.driver_task_id:
            return None
        return {"dag_id": context["ti"].dag_id, "run_id": context["run_id"], "task_id": self.driver_task_id}

    def _outcome(self, context: Context, report: HealthReport, mode: WatchMode, committed_after: pendulum.DateTime,
                 run_input: RunInput | None) -> WatchOutcome | None:
        """The driver task's failure, else what the report says (knowing whether the driver task succeeded)."""
        state = driver_task_state(self._driver_task(context))
        if state in DRIVER_TASK_FAILED_STATES:
            return WatchOutcome.DRIVER_FAILED
        return watch_outcome(report, mode, _ms(committed_after), driver_succeeded=state in DRIVER_TASK_SUCCEEDED_STATES,
                             run_input=run_input)

    # -- deferrable path ------------------------------------------------------------------------

    def _ends_at_timeout(self) -> bool:
        """Whether ``timeout`` ends this wait: not for a watch beside its driver's task (see the class).

        An unknown mode is named by the check (:meth:`_mode`), which Airflow's rules then apply to.
        """
        try:
            mode = WatchMode.parse(self.watch)
        except HealthError:
            return True
        return ends_at_timeout(mode, driver_watched=bool(self.driver_task_id))

    def execute(self, context: Context) -> Any:
        """Check once; finish if that settles it, else defer (or poke when not deferrable).

        The check before deferring fails as the same failure fails after the deferral: it runs through
        Airflow's own :meth:`~airflow.sdk.BaseSensorOperator.resume_execution`, which turns an
        ``AirflowException`` (a sensor's failure, unhealthy or unreachable alike) into a skip under
        ``soft_fail`` (on Airflow 3.3 under ``never_fail`` too; 3.1's does not). Poking, Airflow's own
        loop applies its rules.
        """
        if not self.deferrable:
            if not self._ends_at_timeout():
                # Airflow's poke loop fails a sensor at its timeout, recording no outcome, and
                # stop_stream then stops the stream: a watch beside its driver's task has no deadline.
                self.timeout = float("inf")
            return super().execute(context)
        return self.resume_execution("_check_then_defer", None, context)

    def _check_then_defer(self, context: Context) -> Any:
        """The deferrable path: check once; finish if that settles it, else defer to the trigger."""
        mode = self._mode()
        started = self._started_at(context)
        committed_after = self._committed_after(context)
        report = self._check(context)
        # The driver task's record of its run's input (a pipeline DAG's supervise starts after submit ended).
        run_input = pull_run_input(context, self.driver_task_id, self.log)
        outcome = self._outcome(context, report, mode, committed_after, run_input)
        if outcome is not None:
            message = outcome_message(outcome, report, committed_after.isoformat(), run_input)
            return self._finish(context, event_payload(outcome, mode, message, report))
        window = self._window or LagWindow(max_samples=self.max_samples)
        timeout_at = started.add(seconds=self.timeout) if self._ends_at_timeout() else None
        self.log.info(
            "Deferring: %s every %ss until %s",
            "waiting for a healthy committed batch" if mode is WatchMode.WAIT_HEALTHY else "watching",
            self.poke_interval,
            timeout_at.isoformat() if timeout_at is not None else f"{self.driver_task_id} ends",
        )
        self.defer(
            trigger=StreamingQueryHealthTrigger(
                spec_path=self.spec_path,
                watch=mode.value,
                committed_after=committed_after.isoformat(),
                timeout_at=None if timeout_at is None else timeout_at.isoformat(),
                poke_interval=self.poke_interval,
                window=window.to_dict(),
                max_samples=self.max_samples,
                thresholds=self._threshold_overrides(),
                kafka_conn_id=self.kafka_conn_id,
                checkpoint_conn_id=self.checkpoint_conn_id,
                max_probe_failures=self.max_probe_failures,
                driver_task=self._driver_task(context),
                kafka_connect_timeout_s=self.kafka_connect_timeout_s,
                run_input=None if run_input is None else run_input.model_dump(mode="json"),
            ),
            method_name="execute_complete",
            # No deadline, no deferral timeout: Airflow would fail the task at it with no outcome.
            timeout=None if timeout_at is None else dt.timedelta(
                seconds=self.timeout + self.poke_interval + _DEFER_GRACE_S),
        )

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any] | None:
        """Resume after the trigger fired: return the report, or fail with its table."""
        return self._finish(context, event)

    # -- poke path ------------------------------------------------------------------------------

    def poke(self, context: Context) -> bool | PokeReturnValue:
        """Take a sample and decide; the window persists between pokes of one worker run."""
        mode = self._mode()
        started = self._started_at(context)
        committed_after = self._committed_after(context)
        try:
            report = self._check(context)
        except AirflowFailException:
            raise
        except AirflowException as err:
            self._failures += 1
            if self._failures >= self.max_probe_failures:
                raise
            self.log.warning("Health sample %d of %d failed: %s", self._failures, self.max_probe_failures, err)
            return False
        self._failures = 0
        run_input = pull_run_input(context, self.driver_task_id, self.log)
        outcome = self._outcome(context, report, mode, committed_after, run_input)
        if outcome is None and mode is WatchMode.WATCH and self._ends_at_timeout():
            # The base class fails a sensor at its timeout; a watch that lasted that long
            # without an unhealthy report succeeded, so it ends one interval early instead.
            elapsed = (pendulum.now("UTC") - started).total_seconds()
            if elapsed + self.poke_interval >= self.timeout:
                outcome = WatchOutcome.TIMEOUT
        if outcome is None:
            return False
        message = outcome_message(outcome, report, committed_after.isoformat(), run_input)
        result = self._finish(context, event_payload(outcome, mode, message, report))
        return PokeReturnValue(is_done=True, xcom_value=result)

