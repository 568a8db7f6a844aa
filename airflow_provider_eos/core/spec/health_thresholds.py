"""The spec's ``health_thresholds``: the pipeline's own health thresholds, checked on load (design note 72).

The names, the values' rules and the thresholds themselves are
:class:`~airflow_provider_eos.core.health.thresholds.HealthThresholds`'; the spec holds the overrides
and :meth:`~airflow_provider_eos.core.health.thresholds.HealthThresholds.from_spec` applies them, so
every judge of health (the pipeline DAG's watch, the scheduled check, ``eos health``, the sensor)
honours them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_provider_eos.core.errors import EosError
from airflow_provider_eos.core.spec.validation_errors import KeyedValueError

__all__ = ["check_health_thresholds"]


def check_health_thresholds(value: Any) -> Any:
    """Refuse a threshold the health check would refuse: an unknown name, or a value that is no positive integer.

    Checked before pydantic's coercion, as the sensor's and the CLI's overrides are: ``true``, ``1.5`` or
    ``"10"`` are refused, not converted. A value that is no mapping is left to pydantic, which names its type.

    :raises KeyedValueError: naming the first bad threshold, its value and the fix.
    """
    if not isinstance(value, Mapping):
        return value
    # Imported here: the health package imports the spec (verification reads the writers it names),
    # so importing it when this module loads would close an import circle.
    from airflow_provider_eos.core.health.thresholds import HealthThresholds

    for name, threshold in value.items():
        try:
            HealthThresholds.check_overrides({name: threshold})
        except EosError as err:
            raise KeyedValueError(f"{err.message}; {err.fix}", key=str(name)) from err
    return value
