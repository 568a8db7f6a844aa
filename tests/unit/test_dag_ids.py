"""The pipelines' DAG ids: one per pipeline, ``eos_pipeline__<name>``, and back."""

from __future__ import annotations

import re

import pytest

from airflow_provider_eos.core.dag_ids import (
    HEALTH_DAG_ID,
    PIPELINE_DAG_PREFIX,
    RECOVERY_DAG_ID,
    pipeline_dag_id,
    pipeline_of_dag_id,
)
from airflow_provider_eos.core.spec.field_rules import check_name

#: Airflow's rule for a DAG id (airflow.utils.helpers.KEY_REGEX, at most 250 characters).
AIRFLOW_KEY = re.compile(r"^[\w.-]+$")


@pytest.mark.parametrize("name", ["orders", "_x", "a-b_c", "Orders__2", "z" + "9" * 63])
def test_every_spec_name_gives_a_valid_dag_id_that_maps_back(name: str) -> None:
    assert check_name(name) == name  # a name a spec may have
    dag_id = pipeline_dag_id(name)
    assert dag_id == f"eos_pipeline__{name}" and dag_id.startswith(PIPELINE_DAG_PREFIX)
    assert AIRFLOW_KEY.match(dag_id) and len(dag_id) <= 250
    assert pipeline_of_dag_id(dag_id) == name


@pytest.mark.parametrize("dag_id", [HEALTH_DAG_ID, RECOVERY_DAG_ID, "eos_pipeline", "eos_pipeline__", "other"])
def test_other_dags_are_no_pipelines(dag_id: str) -> None:
    assert pipeline_of_dag_id(dag_id) is None
