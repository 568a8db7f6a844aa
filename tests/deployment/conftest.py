"""One Airflow deployment for this package's tests (`eos airflow up`), shared by every pytest-xdist worker.

Started by the first worker to need it and stopped by the last (``tests.support.shared_services``).
Its specs folder is where tests put their pipelines' spec files; each spec names its own broker.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.dag_ids import pipeline_of_dag_id
from airflow_provider_eos.devstack.airflow_deployment import LocalAirflow
from airflow_provider_eos.devstack.airflow_settings import AirflowDeploymentInfo
from airflow_provider_eos.devstack.broker_config import free_port
from tests.support.airflow_api import AirflowApi
from tests.support.checkpointed_pipeline import LAST_COMMITTED, CheckpointedPipeline, checkpointed_pipeline
from tests.support.shared_services import shared_service

#: The health check samples each pipeline 1 s apart, not 10: these tests' pipelines are caught up and idle,
#: and what they assert (the report, its metrics, the view's row) does not depend on the trend's span.
EOS_SETTINGS = {"health_check_interval_s": "1"}


@pytest.fixture(scope="package")
def airflow_deployment(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Iterator[AirflowDeploymentInfo]:
    """The running deployment (started by the first worker, stopped by the last one out of this package:
    its scheduler, dag-processor, triggerer and api-server cost CPU as long as they run)."""

    def stop(folder: Path) -> None:
        airflow = LocalAirflow(folder)
        recorded = airflow.recorded()
        locked = _sqlite_contention(Path(recorded.airflow_home)) if recorded else []
        airflow.down()
        # The measure behind SQLite as the metadata DB (README, Airflow): it must hold.
        assert not locked, f"SQLite could not keep up with the deployment's parallel tasks: {locked}"

    with shared_service(tmp_path_factory, worker_id, "airflow-deployment",
                        lambda folder, owner: LocalAirflow(folder).up(stop_with_pid=owner, statsd=_statsd_address(),
                                                                      eos_settings=EOS_SETTINGS),
                        stop) as info:
        yield info


def _statsd_address() -> str:
    """Where the deployment sends Airflow's metrics: a port a test binds its listener to while it needs them
    (UDP: what nobody listens for is dropped)."""
    return f"127.0.0.1:{free_port()}"


def _sqlite_contention(home: Path) -> list[str]:
    """Lines of the components' and tasks' logs that say SQLite refused a write (``database is locked``)."""
    found = []
    for log in home.joinpath("logs").rglob("*"):
        if log.is_file():
            found += [f"{log.name}: {line.strip()[:300]}" for line in log.read_text(errors="replace").splitlines()
                      if "database is locked" in line]
    return found[:10]


@pytest.fixture(scope="package")
def airflow_api(airflow_deployment: AirflowDeploymentInfo) -> Iterator[AirflowApi]:
    with AirflowApi(airflow_deployment.url, airflow_deployment.user, airflow_deployment.password()) as api:
        yield api


HEALTH_DAG = "eos_health_check"  # no form: its docs list the pipelines it checks
RECOVERY_DAG = "eos_manual_recovery"


@pytest.fixture
def pipeline(request: pytest.FixtureRequest, tmp_path: Path, bootstrap: str, topic_factory: Any,
             airflow_deployment: AirflowDeploymentInfo, airflow_api: AirflowApi) -> Iterator[CheckpointedPipeline]:
    """A checkpointed pipeline whose spec the deployment offers, removed after the test (its names start
    with the test module's ``PIPELINE_STEM``)."""
    made = checkpointed_pipeline(bootstrap, topic_factory, tmp_path, stem=getattr(request.module, "PIPELINE_STEM", "p"))
    deployed = deploy_spec(airflow_deployment, made.spec_path, airflow_api, made.spec.name)
    yield made
    deployed.unlink(missing_ok=True)


def check_caught_up_pipeline(pipeline: CheckpointedPipeline, api: AirflowApi, *actions: str
                             ) -> tuple[str, dict[str, str]]:
    """Catch ``pipeline`` up to its last committed batch, then run the health check and one dry-run manual
    recovery per action, all finished; return the health run's id and ``{action: recovery run id}``."""
    pipeline.produce_input_of(LAST_COMMITTED)
    pipeline.commit_group(LAST_COMMITTED)
    name = pipeline.spec.name
    # No parse to wait for: the run's first task lists the specs folder (test_health_check_folder.py).
    health_run = api.trigger(HEALTH_DAG, {})
    recoveries = {action: api.trigger(RECOVERY_DAG, {"pipeline": name, "action": action, "dry_run": True})
                  for action in actions}
    for dag, run in ((HEALTH_DAG, health_run), *((RECOVERY_DAG, run) for run in recoveries.values())):
        api.wait_for_run(dag, run, timeout_s=300)
    # The pipeline's own health task (one mapped task per spec in the folder as the run found it, other
    # tests' too) must have reported: the pages read its report. Its log says why not.
    tasks = api.task_instances(HEALTH_DAG, health_run)
    mine = [ti for ti in tasks if (ti.get("rendered_map_index") or "").startswith(f"{name}: ")]
    assert len(mine) == 1, f"run {health_run} mapped {[ti.get('rendered_map_index') for ti in tasks]}, not {name}"
    if mine[0]["state"] != "success":
        log = api.task_log(HEALTH_DAG, health_run, mine[0]["task_id"], try_number=mine[0]["try_number"],
                           map_index=mine[0]["map_index"])
        raise AssertionError(f"{name}'s health task ended {mine[0]['state']}:\n{log[-4000:]}")
    return health_run, recoveries


def place_spec(deployment: AirflowDeploymentInfo, spec_file: Path, name: str) -> Path:
    """Copy a pipeline's spec into the deployment's pipelines folder (owner-only, as it holds settings), no more:
    the DAGs see it at their next parse."""
    target = Path(deployment.specs_dir) / f"{name}{spec_file.suffix}"
    shutil.copy(spec_file, target)
    os.chmod(target, 0o600)
    return target


def deploy_spec(deployment: AirflowDeploymentInfo, spec_file: Path, api: AirflowApi, name: str,
                dag_ids: tuple[str, ...] = ("eos_manual_recovery",)) -> Path:
    """Put a pipeline's spec into the deployment's pipelines folder and wait until the DAGs offer it (the
    recovery's form) or its own DAG (``eos_pipeline__<name>``) is there."""
    target = place_spec(deployment, spec_file, name)
    # The DAG files read the folder: a newer mtime has the dag-processor parse them now, not at its next
    # round (every 30 s, which keeps an idle deployment's parsing cheap).
    for dag_file in Path(deployment.dags_folder).glob("*.py"):
        dag_file.touch()
    for dag_id in dag_ids:
        if pipeline_of_dag_id(dag_id) is not None:
            api.wait_for_dag(dag_id)
        else:
            api.wait_for_param_choice(dag_id, "pipeline", name)
    return target
