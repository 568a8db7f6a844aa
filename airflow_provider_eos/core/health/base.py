"""What every health module shares: the error, the statuses, the model base and the time format."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from typing import Any

import pendulum
from pydantic import BaseModel, ConfigDict

from airflow_provider_eos.core.errors import EosError

__all__ = ["HealthError", "HealthModel", "HealthStatus", "LagStatus", "iso_utc", "worst"]


class HealthError(EosError):
    """Health input (a serialized window, thresholds, a watch mode) is malformed."""


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


class HealthModel(BaseModel):
    """Frozen pydantic base of the health values.

    Positional arguments fill the fields in their declared order, as with the dataclasses these
    models replaced, so ``VerificationSample("IN_SYNC", True)`` keeps working.
    """

    model_config = ConfigDict(frozen=True)

    def __init__(self, /, *args: Any, **data: Any) -> None:
        if args:
            names = list(type(self).model_fields)
            if len(args) > len(names):
                raise TypeError(f"{type(self).__name__} takes at most {len(names)} positional arguments")
            given = dict(zip(names, args, strict=False))
            twice = sorted(given.keys() & data.keys())
            if twice:
                raise TypeError(f"{type(self).__name__} got multiple values for {', '.join(twice)}")
            data = {**given, **data}
        super().__init__(**data)
