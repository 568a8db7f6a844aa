"""The health check checks the specs folder as a run finds it, on the shared deployment (design note 90).

A spec arrives while the health DAG's last parse does not know it yet (no DAG file touched: the next
parse is up to 30 s away). The run's first task lists the folder, so the run checks that pipeline too,
and every report checks the pipeline it is labelled with. With the list fixed at parse time, the worker
parsed the DAG file again for each mapped task and took the n-th spec of *its* folder: a spec sorted
before the others shifted them, and the last one went unchecked.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.dag_ids import HEALTH_PIPELINES_TASK_ID, HEALTH_TASK_ID
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from tests.deployment.conftest import HEALTH_DAG, deploy_spec, place_spec
from tests.support.airflow_api import AirflowApi
from tests.support.checkpointed_pipeline import LAST_COMMITTED, CheckpointedPipeline, checkpointed_pipeline

pytestmark = [pytest.mark.airflow, pytest.mark.integration, pytest.mark.deployment]


def _caught_up(bootstrap: str, topic_factory: Callable[..., str], root: Path, name: str) -> CheckpointedPipeline:
    made = checkpointed_pipeline(bootstrap, topic_factory, root, stem="hf", name=name)
    made.produce_input_of(LAST_COMMITTED)
    made.commit_group(LAST_COMMITTED)
    return made


def test_a_spec_the_last_parse_did_not_see_is_checked_and_each_report_checks_its_own_pipeline(
    tmp_path: Path, bootstrap: str, topic_factory: Any, airflow_deployment: AirflowDeploymentInfo,
    airflow_api: AirflowApi,
) -> None:
    # Names that sort last and first among the folder's pipelines (other tests' are p<hex>).
    last = _caught_up(bootstrap, topic_factory, tmp_path / "last", f"zz{uuid.uuid4().hex[:8]}")
    first = _caught_up(bootstrap, topic_factory, tmp_path / "first", f"aa{uuid.uuid4().hex[:8]}")
    deployed_last = deploy_spec(airflow_deployment, last.spec_path, airflow_api, last.spec.name)
    airflow_api.wait_for_doc_mention(HEALTH_DAG, f"`{last.spec.name}`")
    # Placed, not deployed: no DAG file is touched, so the DAG the run is created from does not list it.
    deployed_first = place_spec(airflow_deployment, first.spec_path, first.spec.name)
    try:
        run = airflow_api.trigger(HEALTH_DAG, {})
        # The fault's precondition: the run was created from a DAG whose parse had not seen the new spec.
        assert f"`{first.spec.name}`" not in (airflow_api.dag_details(HEALTH_DAG).get("doc_md") or ""), \
            "a parse saw the new spec before the run was created: the old mapping would have been right too"
        airflow_api.wait_for_run(HEALTH_DAG, run, timeout_s=300)
    finally:
        deployed_first.unlink(missing_ok=True)
        deployed_last.unlink(missing_ok=True)

    tasks = airflow_api.task_instances(HEALTH_DAG, run)
    labels = [ti.get("rendered_map_index") or "" for ti in tasks if ti["task_id"] == HEALTH_TASK_ID]
    for pipeline in (first, last):
        mine = [label for label in labels if label.startswith(f"{pipeline.spec.name}: ")]
        assert len(mine) == 1, f"{pipeline.spec.name} checked {len(mine)} times in run {run}: {labels}"
        report = airflow_api.xcom(HEALTH_DAG, run, HEALTH_TASK_ID,
                                  map_index=_map_index(tasks, pipeline.spec.name))
        # The report under the label is the labelled pipeline's: its checkpoint, its last committed batch.
        assert report["pipeline"] == pipeline.spec.name, report
        assert (report["query_id"], report["last_committed"]) == (pipeline.query_id, LAST_COMMITTED), report
    # Listed by the run's first task, which read the folder as the run started.
    listed = airflow_api.xcom(HEALTH_DAG, run, HEALTH_PIPELINES_TASK_ID)
    assert {str(Path(airflow_deployment.specs_dir) / f"{p.spec.name}.json") for p in (first, last)} <= set(listed)


def _map_index(tasks: list[dict[str, Any]], name: str) -> int:
    (index,) = [ti["map_index"] for ti in tasks
                if ti["task_id"] == HEALTH_TASK_ID and (ti.get("rendered_map_index") or "").startswith(f"{name}: ")]
    return int(index)
