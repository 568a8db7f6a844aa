"""What a health sensor or trigger makes of a report: keep waiting, or end with an outcome."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING

from airflow_provider_eos.core.health.statuses import HealthError

if TYPE_CHECKING:
    from airflow_provider_eos.core.health.report import HealthReport

__all__ = ["DRIVER_TASK_FAILED_STATES", "WatchMode", "WatchOutcome", "watch_outcome"]


class WatchMode(enum.StrEnum):
    """What a health sensor waits for."""

    #: Succeed once the job committed a batch after the sensor started and is not UNHEALTHY.
    WAIT_HEALTHY = "wait_healthy"
    #: Fail as soon as the pipeline is UNHEALTHY; succeed when the watch period ends.
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

#: Task states that mean the driver's task ended without success.
DRIVER_TASK_FAILED_STATES = frozenset({"failed", "upstream_failed"})


def watch_outcome(report: HealthReport, mode: WatchMode, committed_after_ms: int) -> WatchOutcome | None:
    """Whether a sensor is done after this report; ``None`` keeps it waiting.

    * ``wait_healthy``: :attr:`WatchOutcome.HEALTHY` once the checkpoint has a commit newer than
      ``committed_after_ms`` and the report is not UNHEALTHY. An UNHEALTHY report does not end
      the wait: a job that is starting looks stopped until its first batch commits.
    * ``watch``: :attr:`WatchOutcome.UNHEALTHY` as soon as the report is UNHEALTHY.

    :param report: the newest report.
    :param mode: the sensor's mode.
    :param committed_after_ms: for ``wait_healthy``, the time a commit must be newer than.
    """
    if mode is WatchMode.WAIT_HEALTHY:
        return WatchOutcome.HEALTHY if report.is_healthy and report.committed_since(committed_after_ms) else None
    return None if report.is_healthy else WatchOutcome.UNHEALTHY
