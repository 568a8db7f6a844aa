"""The health check checks the specs folder as a run finds it, on the shared deployment (design note 90).

A spec arrives while the health DAG's last parse does not know it yet (no DAG file touched: the next
parse is up to 30 s away). The run's first task lists the folder, so the run checks that pipeline too,
and every report checks the pipeline it is labelled with. With the list fixed at parse time, the worker
parsed the DAG file again for each mapped task and took the n-th spec of *its* folder: a spec sorted
before the others shifted them, and the last one went unchecked.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from tests.deployment.conftest import HEALTH_DAG, deploy_spec
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
    # Copied, not deployed: no DAG file is touched, so the DAG the run is created from does not list it.
    deployed_first = Path(airflow_deployment.specs_dir) / f"{first.spec.name}.json"
    try:
        shutil.copy(first.spec_path, deployed_first)
        os.chmod(deployed_first, 0o600)
        run = airflow_api.trigger(HEALTH_DAG, {})
        airflow_api.wait_for_run(HEALTH_DAG, run, timeout_s=300)
    finally:
        deployed_first.unlink(missing_ok=True)
        deployed_last.unlink(missing_ok=True)

    tasks = airflow_api.task_instances(HEALTH_DAG, run)
    labels = [ti.get("rendered_map_index") or "" for ti in tasks if ti["task_id"] == "health_report"]
    for pipeline in (first, last):
        mine = [label for label in labels if label.startswith(f"{pipeline.spec.name}: ")]
        assert len(mine) == 1, f"{pipeline.spec.name} checked {len(mine)} times in run {run}: {labels}"
        report = airflow_api.xcom(HEALTH_DAG, run, "health_report",
                                  map_index=_map_index(tasks, pipeline.spec.name))
        # The report under the label is the labelled pipeline's: its checkpoint, its last committed batch.
        assert report["pipeline"] == pipeline.spec.name, report
        assert (report["query_id"], report["last_committed"]) == (pipeline.query_id, LAST_COMMITTED), report
    # Listed by the run's first task, which read the folder as the run started.
    listed = airflow_api.xcom(HEALTH_DAG, run, "pipelines_to_check")
    assert {str(Path(airflow_deployment.specs_dir) / f"{p.spec.name}.json") for p in (first, last)} <= set(listed)


def _map_index(tasks: list[dict[str, Any]], name: str) -> int:
    (index,) = [ti["map_index"] for ti in tasks
                if ti["task_id"] == "health_report" and (ti.get("rendered_map_index") or "").startswith(f"{name}: ")]
    return int(index)
