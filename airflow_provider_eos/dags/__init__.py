"""DAG factories: the provider's three DAGs (and the invalid-spec check), built for a folder of pipeline specs.

A DAG file calls one factory; the repository's ``dags/`` (the wheel's ``airflow_provider_eos/example_dags``)
holds one such file per DAG, to copy into a dags folder beside a ``pipelines/`` folder::

    from pathlib import Path
    from airflow_provider_eos.dags import pipeline_dag
    dag = pipeline_dag(Path(__file__).parent / "pipelines")

``$EOS_SPECS_DIR`` (or ``[eos] specs_dir``) wins over the folder given. Each factory is imported
on first use, so a DAG file loads only its own DAG's operators (and the health check and recovery
DAGs never load the Spark provider).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_provider_eos.dags.health_check import health_check_dag
    from airflow_provider_eos.dags.manual_recovery import manual_recovery_dag
    from airflow_provider_eos.dags.pipeline import pipeline_dag
    from airflow_provider_eos.dags.spec_errors import raise_if_invalid_specs

__all__ = ["health_check_dag", "manual_recovery_dag", "pipeline_dag", "raise_if_invalid_specs"]

_FACTORIES = {
    "pipeline_dag": "pipeline",
    "health_check_dag": "health_check",
    "manual_recovery_dag": "manual_recovery",
    "raise_if_invalid_specs": "spec_errors",
}


def __getattr__(name: str) -> Any:
    if name not in _FACTORIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_FACTORIES[name]}"), name)
