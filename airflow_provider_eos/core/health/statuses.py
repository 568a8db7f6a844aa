"""What every health module shares: the error, the statuses and the time format.

The health values are :class:`~airflow_provider_eos.core.frozen_model.FrozenModel` models.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import pendulum

from airflow_provider_eos.core.errors import EosError

__all__ = ["HealthError", "HealthStatus", "LagStatus", "iso_utc", "worst"]


class HealthError(EosError):
    """Health input (a serialized window, thresholds, a watch mode) is malformed."""

    retryable = False


class HealthStatus(enum.StrEnum):
    """Overall and per-finding health; ordered by :attr:`severity`."""

    HEALTHY = "HEALTHY"
    DEGRADED = "DEGRADED"
    UNHEALTHY = "UNHEALTHY"

    @property
    def severity(self) -> int:
        """Rank used to pick the overall status; higher is worse."""
        return _STATUS_SEVERITY[self]


_STATUS_SEVERITY = {status: rank for rank, status in enumerate(HealthStatus)}


class LagStatus(enum.StrEnum):
    """The lag rule that decided one input partition (see :mod:`.lag_rules`)."""

    OK = "OK"
    WARN = "WARN"
    STALL = "STALL"
    STOP = "STOP"
    REWIND = "REWIND"

    @property
    def health(self) -> HealthStatus:
        """The health a partition with this lag status contributes."""
        if self is LagStatus.OK:
            return HealthStatus.HEALTHY
        if self is LagStatus.WARN:
            return HealthStatus.DEGRADED
        return HealthStatus.UNHEALTHY


def worst(statuses: Iterable[HealthStatus]) -> HealthStatus:
    """The most severe status; HEALTHY when there is none."""
    return max(statuses, key=lambda status: status.severity, default=HealthStatus.HEALTHY)


def iso_utc(ms: int | None) -> str | None:
    """ISO 8601 text in UTC of a time in ms since the epoch (``None`` stays ``None``)."""
    return None if ms is None else pendulum.from_timestamp(ms / 1000, tz="UTC").isoformat()
