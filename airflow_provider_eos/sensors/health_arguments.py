"""The health sensor's rendered arguments as the rules take them: a template's strings made values.

Jinja renders a template to a string unless the DAG renders native objects, so ``thresholds``'
values and ``committed_after`` arrive as text; a value that cannot be one fails the task without
retry, naming it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pendulum

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.providers.common.compat.sdk import AirflowFailException

__all__ = ["committed_after_moment", "threshold_overrides"]


def _integer_if_digits(value: Any) -> Any:
    """A string of ASCII digits (a rendered template) as its integer; any other value as it is."""
    if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    return value


def committed_after_moment(value: str | dt.datetime | None, started: pendulum.DateTime) -> pendulum.DateTime:
    """``committed_after`` as a moment: ``started`` (the sensor's start) when empty, else the ISO date-time given."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return started
    if isinstance(value, dt.datetime):
        return pendulum.instance(value)
    try:
        parsed = pendulum.parse(str(value))
    except (ValueError, TypeError) as err:
        raise AirflowFailException(f"committed_after is {value!r}, not an ISO date-time") from err
    if not isinstance(parsed, dt.datetime):
        raise AirflowFailException(f"committed_after is {value!r}, not an ISO date-time")
    return pendulum.instance(parsed)


def threshold_overrides(value: Any) -> dict[str, Any] | None:
    """``thresholds`` as rendered, with each value that rendered as digits (a template's string) an integer.

    The rules take integers only (:class:`~airflow_provider_eos.core.health.HealthThresholds`), and
    name any other value that is not one.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, Mapping):
        raise AirflowFailException(
            f"thresholds is {value!r}, not a dict: template each threshold's value, e.g. "
            "{'warn_after_ms': '{{ var.value.warn_ms }}'}, or render the whole dict with the DAG's "
            "render_template_as_native_obj=True"
        )
    return {key: _integer_if_digits(item) for key, item in value.items()}
