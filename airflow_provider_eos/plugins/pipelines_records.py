"""What the pipelines view reads from Airflow's metadata database: health reports and DAG runs.

Only reads, through the api-server's own session; the rows are built by
:func:`~airflow_provider_eos.core.presentation.pipelines_overview.pipeline_rows`.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from airflow.models.dagrun import DagRun
from airflow.models.taskinstance import TaskInstance
from airflow.models.xcom import XComModel
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from airflow_provider_eos.core.dag_ids import HEALTH_DAG_ID, HEALTH_TASK_ID, pipeline_dag_id
from airflow_provider_eos.core.health.report import HealthReport
from airflow_provider_eos.core.presentation.pipelines_overview import (
    RunLink,
    dag_run_path,
    mapped_task_path,
)

__all__ = ["latest_health_reports", "runs_by_pipeline", "runs_of_pipeline_dags"]

log = logging.getLogger(__name__)

#: How many of the newest health-check runs are searched for each pipeline's latest report (a pipeline
#: added since the newest run, or whose task crashed, is found in an earlier one).
HEALTH_RUNS_SEARCHED = 5
#: How many of the recovery DAG's newest runs are read for its per-pipeline run column.
RUNS_READ = 200


def _iso(moment: dt.datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(dt.UTC).isoformat(timespec="seconds")


def _state(value: Any) -> str | None:
    return None if value is None else str(getattr(value, "value", value))


def latest_health_reports(session: Session, pipelines: Sequence[str], base_path: str
                          ) -> dict[str, tuple[HealthReport | None, RunLink]]:
    """``{pipeline: (its newest health report, the mapped task that wrote it)}`` of the health check's XComs.

    A report this version cannot read (written by another version of the provider) is ``None``
    beside its task, so the page says so instead of failing.
    """
    wanted = set(pipelines)
    run_ids = list(session.scalars(select(DagRun.run_id).where(DagRun.dag_id == HEALTH_DAG_ID)
                                   .order_by(DagRun.id.desc()).limit(HEALTH_RUNS_SEARCHED)))
    if not wanted or not run_ids:
        return {}
    tasks = {(ti.run_id, ti.map_index): ti for ti in session.scalars(
        select(TaskInstance).where(TaskInstance.dag_id == HEALTH_DAG_ID, TaskInstance.task_id == HEALTH_TASK_ID,
                                   TaskInstance.run_id.in_(run_ids)))}
    xcoms = session.scalars(select(XComModel).where(
        XComModel.dag_id == HEALTH_DAG_ID, XComModel.task_id == HEALTH_TASK_ID, XComModel.key == "return_value",
        XComModel.run_id.in_(run_ids)))
    newest_first = {run_id: rank for rank, run_id in enumerate(run_ids)}
    found: dict[str, tuple[int, HealthReport | None, RunLink]] = {}
    for xcom in xcoms:
        value = XComModel.deserialize_value(xcom)
        name = value.get("pipeline") if isinstance(value, dict) else None
        rank = newest_first[xcom.run_id]
        if name not in wanted or (name in found and found[name][0] <= rank):
            continue
        try:
            report: HealthReport | None = HealthReport.model_validate(value)
        except ValidationError as err:
            log.warning("EOS-VIEW the health report of %s in run %s is not one this version reads: %s",
                        name, xcom.run_id, err)
            report = None
        ti = tasks.get((xcom.run_id, xcom.map_index))
        link = RunLink(
            dag_id=HEALTH_DAG_ID, run_id=xcom.run_id, state=_state(ti.state) if ti else None,
            when=_iso(ti.start_date) if ti else None,
            path=mapped_task_path(base_path, HEALTH_DAG_ID, xcom.run_id, HEALTH_TASK_ID, xcom.map_index),
        )
        found[name] = (rank, report, link)
    return {name: (report, link) for name, (_, report, link) in found.items()}


def runs_by_pipeline(session: Session, dag_id: str, pipelines: Sequence[str], base_path: str, *,
                     per_pipeline: int = 3, label: Callable[[Mapping[str, Any]], str] | None = None
                     ) -> dict[str, list[RunLink]]:
    """``{pipeline: its newest runs of dag_id, newest first}``, the pipeline read from each run's ``conf``
    (the manual recovery's form: one DAG for every pipeline).

    :param label: what labels a run, from its ``conf`` (the recovery's action).
    """
    wanted = set(pipelines)
    found: dict[str, list[RunLink]] = {}
    for run in session.scalars(select(DagRun).where(DagRun.dag_id == dag_id)
                               .order_by(DagRun.id.desc()).limit(RUNS_READ)):
        conf = run.conf if isinstance(run.conf, dict) else {}
        name = conf.get("pipeline")
        if name not in wanted or len(found.setdefault(name, [])) >= per_pipeline:
            continue
        found[name].append(_link(run, base_path, label(conf) if label else ""))
    return found


def runs_of_pipeline_dags(session: Session, pipelines: Sequence[str], base_path: str, *, per_pipeline: int = 3
                          ) -> dict[str, list[RunLink]]:
    """``{pipeline: the newest runs of its own DAG (eos_pipeline__<name>), newest first}``."""
    found: dict[str, list[RunLink]] = {}
    for name in pipelines:
        dag_id = pipeline_dag_id(name)
        runs = session.scalars(select(DagRun).where(DagRun.dag_id == dag_id)
                               .order_by(DagRun.id.desc()).limit(per_pipeline))
        found[name] = [_link(run, base_path) for run in runs]
    return found


def _link(run: DagRun, base_path: str, label: str = "") -> RunLink:
    return RunLink(dag_id=run.dag_id, run_id=run.run_id, state=_state(run.state),
                   when=_iso(run.start_date or run.queued_at), path=dag_run_path(base_path, run.dag_id, run.run_id),
                   label=label)
