"""The limits the health rules compare against, derived from the pipeline spec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationInfo, field_validator, model_validator

from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.health.statuses import HealthError
from airflow_provider_eos.core.kafka_defaults import KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["HealthThresholds"]


class HealthThresholds(FrozenModel):
    """Limits the rules compare against, in milliseconds.

    :param warn_after_ms: newest commit older than this while input waits: DEGRADED.
    :param stop_after_ms: newest commit older than this while input waits, or a partition
        without a commit for a window this long: UNHEALTHY (lag rule STOP).
    :param hang_after_ms: an output or dead-letter partition pinned (LSO < HWM) with an unmoving LSO
        this long is hanging (the sink's own transactions end within their timeout).
    :param input_hang_after_ms: an input partition pinned with an unmoving LSO this long is hanging.
        Other producers write the input, with transactions as long as the brokers allow: the brokers'
        ``transaction.max.timeout.ms`` (Kafka's default, 15 minutes, when it was not read).
    :param lingering_after_ms: an ongoing transaction under the prefix older than this (or than
        its own timeout, if shorter) is lingering.
    :param min_samples: samples the trend rules (STALL, WARN) need.
    :raises HealthError: naming a threshold that is not a positive integer, or ``min_samples`` below 2.
    """

    warn_after_ms: int
    stop_after_ms: int
    hang_after_ms: int
    lingering_after_ms: int
    input_hang_after_ms: int = KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS
    min_samples: int = 3

    @field_validator("*", mode="before")
    @classmethod
    def _positive_integer(cls, value: Any, info: ValidationInfo) -> Any:
        # Checked before pydantic's own coercion so True, 1.5 or "10" are refused, not converted,
        # and the error is a HealthError naming the threshold.
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            name = info.field_name
            raise HealthError(
                f"health threshold {name} is {value!r}",
                fix=f"set {name} to a positive integer" + (" (milliseconds)" if name.endswith("_ms") else ""),
            )
        return value

    @model_validator(mode="after")
    def _trend_needs_two_samples(self) -> HealthThresholds:
        if self.min_samples < 2:
            raise HealthError(
                f"health threshold min_samples is {self.min_samples}; a trend needs at least 2 samples",
                fix="set min_samples to 2 or more",
            )
        return self

    @classmethod
    def from_spec(cls, spec: PipelineSpec, *, transaction_max_timeout_ms: int | None = None) -> HealthThresholds:
        """Derive the thresholds from the pipeline's trigger interval, batch budget and timeout.

        Under load the sink commits once per *cycle*: the trigger interval, or the batch's
        duration when a batch takes longer. A batch's duration is expected within the batch budget,
        or, without one, the transaction timeout (a longer transaction fails; the driver writer's
        spill before its transaction is not bounded by it, and a batch seen advancing is not held to
        these: :mod:`.in_flight`). Two missed cycles are a warning, four a stop. No sink transaction
        outlives its timeout, so that is the limit for hanging (of the output and dead-letter
        partitions) and lingering. The input is written by other producers, whose transactions may
        last up to the brokers' ``transaction.max.timeout.ms``: that is the limit for a hanging input
        partition.

        The spec's ``health_thresholds`` replace what is derived (design note 72).

        :param transaction_max_timeout_ms: the brokers' ``transaction.max.timeout.ms`` (the largest
            among them), as a sample read it; ``None``: not read, Kafka's default applies.
        """
        budget = spec.batch_budget_ms or spec.transaction_timeout_ms
        cycle = max(spec.trigger_interval_ms or 0, budget)
        derived = cls(
            warn_after_ms=2 * cycle,
            stop_after_ms=4 * cycle,
            hang_after_ms=spec.transaction_timeout_ms,
            lingering_after_ms=spec.transaction_timeout_ms,
            input_hang_after_ms=transaction_max_timeout_ms or KAFKA_DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
        )
        # The spec's own thresholds are the user's word, so they beat what is derived (the brokers'
        # maximum too); a caller's overrides (the sensor's, the CLI's) are applied after, and beat both.
        return derived.with_overrides(spec.health_thresholds)

    @classmethod
    def check_overrides(cls, overrides: Mapping[str, Any]) -> None:
        """Refuse overrides by their names and values alone, as :meth:`with_overrides` would on any thresholds.

        What a spec's ``health_thresholds`` is checked with on load, before anything is derived.

        :raises HealthError: naming an unknown key or an invalid value.
        """
        # The one rule across thresholds is min_samples >= 2, which its own default passes: any
        # positive stand-ins for the derived values give the same verdict as the real ones.
        cls(warn_after_ms=1, stop_after_ms=1, hang_after_ms=1, lingering_after_ms=1).with_overrides(overrides)

    def with_overrides(self, overrides: Mapping[str, Any] | None) -> HealthThresholds:
        """A copy with some thresholds replaced.

        :raises HealthError: naming an unknown key or an invalid value.
        """
        if not overrides:
            return self
        allowed = list(type(self).model_fields)
        unknown = sorted(set(overrides) - set(allowed))
        if unknown:
            raise HealthError(
                f"unknown health threshold(s) {', '.join(unknown)}",
                fix=f"use only {', '.join(allowed)}",
            )
        # model_copy(update=...) would skip validation; the overrides come from users.
        return type(self).model_validate({**self.model_dump(), **overrides})
