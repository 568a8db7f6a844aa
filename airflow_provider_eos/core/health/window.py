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
    :raises HealthError: if ``max_samples`` is below 1 or the given samples are out of order
        (:meth:`add` takes a sample of a clock that went back).
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

    def add(self, sample: HealthSample) -> int:
        """Append a sample; drops the oldest when full.

        A sample taken earlier than the newest held says the clock went back: the samples came from
        another host (the sensor's worker, then the triggerer; a triggerer that took the trigger over)
        or this host's clock was stepped back. The window's times are compared only with each other,
        which means something on one clock, and the samples that follow come from the new sample's:
        the samples it places in its future are dropped, and the new sample's notes say so (design
        note 65). Its own time is kept: moving it forward would age the commit and the input by the
        skew, and count towards stopping a healthy stream.

        :returns: how many samples were dropped for being newer than ``sample`` (0 when the clock did not go back).
        """
        kept = tuple(held for held in self.samples if held.taken_at_ms <= sample.taken_at_ms)
        dropped = self.samples[len(kept) :]
        if dropped:
            sample = sample.model_copy(update={"notes": (*sample.notes, _clock_went_back(sample, dropped))})
        self.samples = (*kept, sample)[-self.max_samples :]
        return len(dropped)

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


def _clock_went_back(sample: HealthSample, dropped: tuple[HealthSample, ...]) -> str:
    """The note a sample taken before the window's newest carries: what was dropped, and why."""
    newest = dropped[-1].taken_at_ms
    return (
        f"this sample's clock reads {format_age(newest - sample.taken_at_ms)} before the window's newest "
        f"({iso_utc(newest)}): "
        f"another host's, or set back; {len(dropped)} newer sample(s) dropped; synchronize the hosts' clocks (NTP)"
    )


def _check_order(older: HealthSample, newer: HealthSample) -> None:
    if newer.taken_at_ms < older.taken_at_ms:
        raise HealthError(
            f"health sample taken at {iso_utc(newer.taken_at_ms)} is older than the window's newest "
            f"({iso_utc(older.taken_at_ms)})",
            fix="pass the samples oldest first (LagWindow.add takes in a sample whose clock went back)",
        )
