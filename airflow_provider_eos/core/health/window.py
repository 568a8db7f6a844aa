"""The bounded sliding window of samples the health rules are evaluated over."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from pydantic import BaseModel, ValidationError, field_validator, model_validator

from airflow_provider_eos.core.health.samples import HealthSample
from airflow_provider_eos.core.health.statuses import HealthError, iso_utc
from airflow_provider_eos.core.transactions import format_age

__all__ = ["DEFAULT_MAX_SAMPLES", "WINDOW_FORMAT", "LagWindow"]

#: Samples a :class:`LagWindow` keeps by default (Burrow's default window is 10 offsets).
DEFAULT_MAX_SAMPLES = 10
#: The version of the window's JSON form; a window of another format is refused, not misread.
WINDOW_FORMAT = 1


class LagWindow(BaseModel):
    """The sliding window of samples the rules are evaluated over; the oldest drops out first.

    Its JSON form (``model_dump(mode="json")``, :meth:`to_dict`) is what the health trigger
    carries across polls and triggerer restarts: ``format``, ``max_samples`` and ``samples``.

    :param samples: initial samples, oldest first (only the newest ``max_samples`` are kept).
    :param max_samples: how many samples the window keeps.
    :raises HealthError: if ``max_samples`` is below 1 or the samples are out of order.
    """

    # Not frozen: add() replaces the samples (and checks their order itself).
    format: Literal[1] = WINDOW_FORMAT
    max_samples: int = DEFAULT_MAX_SAMPLES
    samples: tuple[HealthSample, ...] = ()

    def __init__(
        self, samples: Iterable[HealthSample] = (), *, max_samples: int = DEFAULT_MAX_SAMPLES, **data: Any
    ) -> None:
        super().__init__(samples=tuple(samples), max_samples=max_samples, **data)

    @field_validator("max_samples", mode="before")
    @classmethod
    def _at_least_one(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise HealthError(
                f"a health window must keep at least one sample, got max_samples={value!r}",
                fix=f"use a positive max_samples (default {DEFAULT_MAX_SAMPLES})",
            )
        return value

    @model_validator(mode="after")
    def _ordered_and_bounded(self) -> LagWindow:
        for older, newer in itertools.pairwise(self.samples):
            _check_order(older, newer)
        self.samples = self.samples[-self.max_samples :]
        return self

    def add(self, sample: HealthSample) -> None:
        """Append a sample; drops the oldest when full.

        :raises HealthError: if ``sample`` is older than the newest one already held.
        """
        if self.samples:
            _check_order(self.samples[-1], sample)
        self.samples = (*self.samples, sample)[-self.max_samples :]

    @property
    def latest(self) -> HealthSample | None:
        """The newest sample."""
        return self.samples[-1] if self.samples else None

    @property
    def span_ms(self) -> int:
        """Time between the oldest and the newest sample."""
        return self.samples[-1].taken_at_ms - self.samples[0].taken_at_ms if self.samples else 0

    def __len__(self) -> int:
        return len(self.samples)

    def __repr__(self) -> str:
        return f"LagWindow({len(self)} of {self.max_samples} samples, span {format_age(self.span_ms)})"

    __str__ = __repr__

    def to_dict(self) -> dict[str, Any]:
        """Alias of ``model_dump(mode="json")``, the form :meth:`from_dict` reads."""
        return self.model_dump(mode="json")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None, *, max_samples: int | None = None) -> LagWindow:
        """Rebuild a window from its JSON form; ``None`` gives an empty window.

        :param max_samples: override the stored size (keeps the newest samples).
        :raises HealthError: if ``data`` is not a serialized window of this format.
        """
        if data is None:
            return cls(max_samples=max_samples or DEFAULT_MAX_SAMPLES)
        if not isinstance(data, Mapping) or data.get("format") != WINDOW_FORMAT:
            found = data.get("format") if isinstance(data, Mapping) else type(data).__name__
            raise HealthError(
                f"not a serialized health window of format {WINDOW_FORMAT} (found {found!r})",
                fix="pass the dict LagWindow.to_dict() returned, or None to start an empty window",
            )
        if not isinstance(data.get("samples"), list):
            raise HealthError(
                "a serialized health window has no list of samples",
                fix="pass the dict LagWindow.to_dict() returned",
            )
        # Resize before validating, so a smaller window keeps the newest samples.
        resized = {**data, "max_samples": max_samples} if max_samples is not None else data
        try:
            return cls.model_validate(resized)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise HealthError(
                f"a serialized health window is malformed ({err.error_count()} error(s); {where}: {first['msg']})",
                fix="pass the dict LagWindow.to_dict() returned",
            ) from err


def _check_order(older: HealthSample, newer: HealthSample) -> None:
    if newer.taken_at_ms < older.taken_at_ms:
        raise HealthError(
            f"health sample taken at {iso_utc(newer.taken_at_ms)} is older than the window's newest "
            f"({iso_utc(older.taken_at_ms)})",
            fix="add samples in the order they were taken",
        )
