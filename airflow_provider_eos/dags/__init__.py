"""DAG factories: the provider's DAGs (and the invalid-spec check), built for a folder of pipeline specs.

A DAG file calls one factory; the repository's ``dags/`` (the wheel's ``airflow_provider_eos/example_dags``)
holds one such file per factory, to copy into a dags folder beside a ``pipelines/`` folder::

    from pathlib import Path
    from airflow_provider_eos.dags import health_check_dag
    dag = health_check_dag(Path(__file__).parent / "pipelines")

:func:`pipeline_dags` builds one DAG per pipeline spec (``eos_pipeline__<name>``); its file puts them
into its module globals, where Airflow finds generated DAGs::

    globals().update(pipeline_dags(Path(__file__).parent / "pipelines"))

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
    from airflow_provider_eos.dags.pipeline import pipeline_dags
    from airflow_provider_eos.dags.spec_errors import raise_if_invalid_specs

__all__ = ["health_check_dag", "manual_recovery_dag", "pipeline_dags", "raise_if_invalid_specs"]

_FACTORIES = {
    "pipeline_dags": "pipeline",
    "health_check_dag": "health_check",
    "manual_recovery_dag": "manual_recovery",
    "raise_if_invalid_specs": "spec_errors",
}


def __getattr__(name: str) -> Any:
    if name not in _FACTORIES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_FACTORIES[name]}"), name)
