"""What a health sensor or trigger makes of a report: keep waiting, or end with an outcome."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from airflow_provider_eos.core.health.findings import PROGRESS_SIGNALS, UPSTREAM_SIGNALS
from airflow_provider_eos.core.health.run_input import input_left_behind
from airflow_provider_eos.core.health.statuses import HealthError, HealthStatus

if TYPE_CHECKING:
    from airflow_provider_eos.core.health.findings import Finding
    from airflow_provider_eos.core.health.report import HealthReport
    from airflow_provider_eos.core.health.run_input import RunInput

__all__ = [
    "DRIVER_TASK_FAILED_STATES",
    "DRIVER_TASK_SUCCEEDED_STATES",
    "WATCH_OUTCOME_XCOM_KEY",
    "WatchMode",
    "WatchOutcome",
    "ends_at_timeout",
    "no_input_waiting",
    "run_input_read",
    "stops_the_driver",
    "watch_outcome",
]


class WatchMode(enum.StrEnum):
    """What a health sensor waits for."""

    #: Succeed once the job committed a batch after the sensor started and is not UNHEALTHY (or,
    #: once its driver task succeeded, when the run's input is read: see :func:`watch_outcome`).
    WAIT_HEALTHY = "wait_healthy"
    #: Fail as soon as the pipeline is UNHEALTHY, once the job had its chance to commit (see
    #: :func:`watch_outcome`); beside the driver's task, end with it (:func:`ends_at_timeout`);
    #: otherwise succeed when the watch period ends.
    WATCH = "watch"

    @classmethod
    def parse(cls, value: str | WatchMode) -> WatchMode:
        """The mode named by ``value``.

        :raises HealthError: naming the allowed modes.
        """
        try:
            return cls(str(getattr(value, "value", value)).strip())
        except ValueError:
            raise HealthError(
                f"watch mode {value!r} is unknown",
                fix="use 'wait_healthy' (wait for the first committed batch) or 'watch' (fail when unhealthy)",
            ) from None


class WatchOutcome(enum.StrEnum):
    """The event a sensor or trigger ends with."""

    HEALTHY = "healthy"
    UNHEALTHY = "unhealthy"
    TIMEOUT = "timeout"
    ERROR = "error"
    #: The task that runs the watched driver failed: the stream no longer runs, nothing to watch.
    DRIVER_FAILED = "driver_failed"
    #: ``watch``: the task that runs the watched driver succeeded, so the driver ended cleanly (a
    #: requested stop, a SIGTERM): nothing left to watch, and nothing to stop or recover.
    DRIVER_STOPPED = "driver_stopped"

#: The XCom key under which a health sensor records how its watch ended (a :class:`WatchOutcome` value).
WATCH_OUTCOME_XCOM_KEY = "watch_outcome"


def stops_the_driver(outcome: str | None) -> bool:
    """Whether a watch that ended with ``outcome`` calls for stopping the watched driver.

    What the watch saw of the stream does: an UNHEALTHY report, or the driver's task failed (its
    processes may outlive the task). A watch that could not look (``error``: samples failed, e.g.
    the health principal cannot reach the broker) or ended otherwise says nothing against the
    stream, and stopping a healthy stream for a monitoring failure loses it. A watch that failed
    without recording any outcome was marked failed by a person (or its task was killed): the
    stop goes ahead, as asked.

    :param outcome: the sensor's recorded outcome (:data:`WATCH_OUTCOME_XCOM_KEY`), ``None`` when none.
    """
    return outcome is None or outcome in (WatchOutcome.UNHEALTHY.value, WatchOutcome.DRIVER_FAILED.value)


#: Task states that mean the driver's task ended without success.
DRIVER_TASK_FAILED_STATES = frozenset({"failed", "upstream_failed"})

#: Task states that mean the driver's task ended successfully (an ``available_now`` run is done; a
#: processing-time driver stopped on request).
DRIVER_TASK_SUCCEEDED_STATES = frozenset({"success"})


def ends_at_timeout(mode: WatchMode, *, driver_watched: bool) -> bool:
    """Whether the sensor's ``timeout`` ends its wait.

    A ``watch`` beside the task that runs its driver (``driver_watched``) lasts as long as that task:
    it ends when the driver's task fails (:attr:`WatchOutcome.DRIVER_FAILED`) or succeeds
    (:attr:`WatchOutcome.DRIVER_STOPPED`), when the stream is UNHEALTHY, or when it cannot look
    (``error``), never at a deadline. A watch that ended at its deadline while the driver ran left the
    stream unsupervised for the rest of its life: nothing stops an unhealthy stream once its watcher
    succeeded, and the run it belongs to stays open, so no new run (``max_active_runs=1``) watches it
    again. Any other wait (``wait_healthy``, a watch of no driver task) ends at ``timeout``.
    """
    return not (mode is WatchMode.WATCH and driver_watched)


def no_input_waiting(report: HealthReport) -> bool:
    """Whether every input partition has zero lag (and the report has at least one).

    An ``available_now`` run with no new input commits no batch: Spark plans none when there is
    nothing to read. Zero lag everywhere says it had nothing to do, rather than that it failed to;
    lag says nothing either way once input arrived after the run ended, so
    :func:`~.run_input.input_left_behind` against the run's own input decides when it is known.
    """
    return bool(report.partitions) and all(row.lag == 0 for row in report.partitions)


def run_input_read(report: HealthReport, run_input: RunInput | None) -> bool:
    """Whether the sink group read all the input of an ended ``available_now`` run.

    With the run's input (:class:`~.run_input.RunInput`, its ends read before the job started):
    the group read every partition up to them, whatever arrived since. Without it (a driver task
    that records none): no input waits now (:func:`no_input_waiting`).
    """
    if run_input is None:
        return no_input_waiting(report)
    return not input_left_behind(report, run_input)


def watch_outcome(
    report: HealthReport,
    mode: WatchMode,
    committed_after_ms: int,
    *,
    driver_succeeded: bool = False,
    run_input: RunInput | None = None,
) -> WatchOutcome | None:
    """Whether a sensor is done after this report; ``None`` keeps it waiting.

    * ``wait_healthy``: :attr:`WatchOutcome.HEALTHY` once the checkpoint has a commit newer than
      ``committed_after_ms`` and the report is not UNHEALTHY (for this pipeline's job: an upstream
      producer's hanging input transaction, :data:`~.findings.UPSTREAM_SIGNALS`, is not held against
      it, in either mode). An UNHEALTHY report does not end
      the wait: a job that is starting looks stopped until its first batch commits. Once the
      driver's task succeeded (``driver_succeeded``: an ``available_now`` run that ended), a report
      whose group read all the run's input (:func:`run_input_read`) is HEALTHY too: a run with no
      new input commits no batch, and waiting for one would only time out, also when input arrived
      after the run ended (it is the next run's). The progress signals (lag, commit age) do not
      count then: they judge a job that should be reading, and this one ended having read its
      input; any other UNHEALTHY finding (a verification that is not ok, a lingering or hanging
      transaction) still keeps the wait going. A run that left its own input behind still waits
      for a commit.
    * ``watch``: :attr:`WatchOutcome.UNHEALTHY` as soon as the report is UNHEALTHY; by a progress
      signal (:data:`~.findings.PROGRESS_SIGNALS`: lag, commit age) only once the job committed a
      batch after ``committed_after_ms`` or ``stop_after_ms`` has passed since then without one.
      A watch starts beside the job's submission: a pipeline started again after a downtime longer
      than ``stop_after_ms``, with input waiting, looks stopped (its last commit is the old run's)
      until the new driver commits its first batch, and failing then would stop the driver that was
      just started. Any other UNHEALTHY finding (a lingering or hanging transaction, a verification
      that is not ok) fails the watch at once, except those about the input's upstream producers
      (:data:`~.findings.UPSTREAM_SIGNALS`: a hanging input partition), which stopping the driver
      cannot help: the watch goes on (the report, and the scheduled health check, still show them).
      Once the driver's task succeeded (``driver_succeeded``: the driver ended cleanly, on a
      requested stop), :attr:`WatchOutcome.DRIVER_STOPPED`: lag and commit age judge a job that
      should be reading, and this one was stopped; any other UNHEALTHY finding (a lingering
      transaction, a verification that is not ok) still ends the watch UNHEALTHY, so recovery
      looks at what the stopped run left.

    :param report: the newest report.
    :param mode: the sensor's mode.
    :param committed_after_ms: the watch's start: for ``wait_healthy``, the time a commit must be
        newer than; for ``watch``, where the new driver's chance to commit begins.
    :param driver_succeeded: the task that ran the driver ended successfully.
    :param run_input: the input that run had to process, as its driver task recorded it (``None``:
        not recorded; then zero lag everywhere stands for it).
    """
    unhealthy = _unhealthy_findings(report)
    if mode is WatchMode.WAIT_HEALTHY:
        if not unhealthy and report.committed_since(committed_after_ms):
            return WatchOutcome.HEALTHY
        if driver_succeeded and run_input_read(report, run_input) and _progress_only(unhealthy):
            return WatchOutcome.HEALTHY
        return None
    if not _progress_only(unhealthy):
        return WatchOutcome.UNHEALTHY
    if driver_succeeded:
        return WatchOutcome.DRIVER_STOPPED
    if not unhealthy:
        return None
    had_its_chance = (report.committed_since(committed_after_ms)
                      or report.evaluated_at_ms - committed_after_ms >= report.thresholds.stop_after_ms)
    return WatchOutcome.UNHEALTHY if had_its_chance else None


def _unhealthy_findings(report: HealthReport) -> list[Finding]:
    """The UNHEALTHY findings this pipeline's job answers for: not an upstream producer's input transaction,
    which neither stopping nor waiting for the job can end."""
    return [f for f in report.findings if f.status is HealthStatus.UNHEALTHY and f.signal not in UPSTREAM_SIGNALS]


def _progress_only(unhealthy: list[Finding]) -> bool:
    """Whether every finding of ``unhealthy`` is about the job's progress (lag, commit age)."""
    return all(f.signal in PROGRESS_SIGNALS for f in unhealthy)
