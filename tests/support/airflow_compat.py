"""Airflow's internals the tests drive, wherever the running Airflow keeps them (3.1 to the newest).

The product imports Airflow's public names through common-compat; the tests also reach into what
Airflow keeps internal (parsing a DAG folder, serializing a trigger), which moved between versions.
"""

from __future__ import annotations

import importlib
from types import ModuleType


def _first(*modules: str) -> ModuleType:
    for name in modules[:-1]:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError:
            continue
    return importlib.import_module(modules[-1])


def dagbag_module() -> ModuleType:
    """The module of ``DagBag`` and ``sync_bag_to_db``: the DAG processor's from Airflow 3.2, models' on 3.1."""
    return _first("airflow.dag_processing.dagbag", "airflow.models.dagbag")


def serde_module() -> ModuleType:
    """``serialize`` and ``deserialize`` (what the triggerer stores a trigger with): the SDK's from 3.2."""
    return _first("airflow.sdk.serde", "airflow.serialization.serde")
