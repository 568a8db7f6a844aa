"""The "Exactly-once pipelines" view's rows: every pipeline with what its latest health report and runs say.

Pure: the Airflow plugin (:mod:`airflow_provider_eos.plugins.pipelines_view`) reads the specs
folder, the health check's reports (XCom) and the DAG runs the user may read, and hands them here;
:func:`pipeline_rows` joins them into one :class:`PipelineRow` per pipeline, and the paths of the
Airflow UI the rows link to are built here too, so the page and its tests agree on them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from urllib.parse import quote, urlencode

from airflow_provider_eos.core.dag_ids import HEALTH_DAG_ID, RECOVERY_DAG_ID, pipeline_dag_id, pipeline_of_dag_id
from airflow_provider_eos.core.frozen_model import FrozenModel
from airflow_provider_eos.core.health.report import HealthReport

__all__ = [
    "PIPELINES_PAGE",
    "RECOVERY_FORM_PAGE",
    "VIEW_PREFIX",
    "PipelineRow",
    "RunLink",
    "dag_path",
    "dag_run_path",
    "mapped_task_path",
    "may_see_pipelines",
    "pipeline_rows",
    "recovery_form_path",
    "recovery_run_label",
    "visible_pipelines",
]

#: Where the api-server serves the view's app (the plugin's ``url_prefix``).
VIEW_PREFIX = "/eos"
#: The view's pages under :data:`VIEW_PREFIX`.
PIPELINES_PAGE = "/pipelines"
RECOVERY_FORM_PAGE = "/recover"
#: The action the view's recovery link pre-selects: read-only, so following the link can harm nothing.
RECOVERY_LINK_ACTION = "verify"


class RunLink(FrozenModel):
    """One DAG run (or mapped task) as the view links to it.

    :param dag_id: the DAG.
    :param run_id: the run.
    :param state: the run's (or the task's) state, as Airflow names it.
    :param when: when it ran, ISO 8601 UTC (``None``: not started).
    :param path: its page in the Airflow UI, from the UI's root.
    :param label: what the run did, where the DAG has several actions (the recovery's ``action``).
    """

    dag_id: str
    run_id: str
    state: str | None
    when: str | None
    path: str
    label: str = ""


class PipelineRow(FrozenModel):
    """One pipeline in the view.

    :param pipeline: the pipeline's name (its spec's ``name``).
    :param writer: the writer the job uses (``driver``/``executors``), as the latest health report read it
        from the checkpoint, else the spec's ``writers`` setting.
    :param status: the latest health report's status (``None``: no report yet).
    :param last_committed: the newest batch the checkpoint committed.
    :param verdict: the verification's verdict in that report.
    :param lag: the input lag, records, summed over the input partitions.
    :param commit_age_ms: how long before the report the last batch committed.
    :param open_transactions: the transactions open under the pipeline's prefix.
    :param lingering_transactions: those of them older than the lingering limit.
    :param evaluated_at: when the report's newest sample was taken.
    :param health_run: the health check task that reported.
    :param recovery_runs: the newest manual-recovery runs of the pipeline, newest first.
    :param pipeline_runs: the newest runs of the pipeline's own DAG (``eos_pipeline__<name>``), newest first.
    :param dag_path: the pipeline's own DAG in the Airflow UI, where it is triggered (``None``: the user
        may not read that DAG).
    :param recovery_form_path: the manual-recovery form pre-filled for this pipeline.
    :param note: why a column is empty (no report yet, a report this version cannot read).
    """

    pipeline: str
    writer: str
    status: str | None = None
    last_committed: int | None = None
    verdict: str | None = None
    lag: int | None = None
    commit_age_ms: int | None = None
    open_transactions: int | None = None
    lingering_transactions: int | None = None
    evaluated_at: str | None = None
    health_run: RunLink | None = None
    recovery_runs: tuple[RunLink, ...] = ()
    pipeline_runs: tuple[RunLink, ...] = ()
    dag_path: str | None = None
    recovery_form_path: str
    note: str | None = None


def _root(base_path: str) -> str:
    return base_path.rstrip("/")


def dag_path(base_path: str, dag_id: str) -> str:
    """A DAG's page (its runs, its trigger button): ``/dags/{dag_id}``."""
    return f"{_root(base_path)}/dags/{quote(dag_id, safe='')}"


def dag_run_path(base_path: str, dag_id: str, run_id: str) -> str:
    """A run's page: ``/dags/{dag_id}/runs/{run_id}``."""
    return f"{dag_path(base_path, dag_id)}/runs/{quote(run_id, safe='')}"


def mapped_task_path(base_path: str, dag_id: str, run_id: str, task_id: str, map_index: int) -> str:
    """A mapped task's page (the health check maps one task per pipeline)."""
    return f"{dag_run_path(base_path, dag_id, run_id)}/tasks/{quote(task_id, safe='')}/mapped/{map_index}"


def recovery_form_path(base_path: str, pipeline: str, action: str = RECOVERY_LINK_ACTION) -> str:
    """The manual-recovery trigger form with ``pipeline`` and ``action`` filled in (the view's own page:
    Airflow 3's UI does not fill a trigger form from a link, :mod:`.recovery_form`)."""
    query = urlencode({"pipeline": pipeline, "action": action})
    return f"{_root(base_path)}{VIEW_PREFIX}{RECOVERY_FORM_PAGE}?{query}"


def may_see_pipelines(readable_dags: set[str]) -> bool:
    """Whether a user who may read ``readable_dags`` may see any pipeline: if they may read one of their DAGs."""
    return bool(readable_dags & {HEALTH_DAG_ID, RECOVERY_DAG_ID}) or any(
        pipeline_of_dag_id(dag_id) is not None for dag_id in readable_dags)


def visible_pipelines(pipelines: Sequence[str], readable_dags: set[str]) -> list[str]:
    """The pipelines a user who may read ``readable_dags`` may see, sorted.

    The view shows nothing the DAGs themselves would not: the health check and the recovery DAG name
    every pipeline (their params and docs), so a user who may read either sees them all; a pipeline's
    own DAG names only its pipeline, so a user who may read only some pipelines' DAGs sees those.
    """
    if readable_dags & {HEALTH_DAG_ID, RECOVERY_DAG_ID}:
        return sorted(pipelines)
    return sorted(name for name in pipelines if pipeline_dag_id(name) in readable_dags)


def recovery_run_label(conf: Mapping[str, object]) -> str:
    """What a manual-recovery run did, from its ``conf``: the action, and "(dry run)" for a repair that
    only planned (the DAG's default: anything but an explicit ``dry_run: false``)."""
    action = str(conf.get("action") or "")
    if action and action != "verify" and conf.get("dry_run") is not False:
        return f"{action} (dry run)"
    return action


def _from_report(report: HealthReport) -> dict[str, object]:
    return {
        "status": report.status.value,
        "last_committed": report.last_committed,
        "verdict": report.verification.verdict if report.verification else None,
        "lag": report.total_lag if report.partitions else None,
        "commit_age_ms": report.commit_age_ms,
        "open_transactions": len(report.transactions),
        "lingering_transactions": sum(t.lingering for t in report.transactions),
        "evaluated_at": report.evaluated_at,
    }


def pipeline_rows(
    writers: Mapping[str, str],
    reports: Mapping[str, tuple[HealthReport | None, RunLink]],
    recovery_runs: Mapping[str, Sequence[RunLink]],
    pipeline_runs: Mapping[str, Sequence[RunLink]],
    *,
    base_path: str,
    readable_dags: Collection[str] = (),
) -> list[PipelineRow]:
    """One row per pipeline of ``writers``, sorted by name.

    :param writers: ``{pipeline: the spec's writers setting}`` of the pipelines the user may see.
    :param reports: ``{pipeline: (its latest health report, the task that wrote it)}``; the report is
        ``None`` when the task's XCom is not a report this version reads.
    :param recovery_runs: ``{pipeline: its manual-recovery runs, newest first}``.
    :param pipeline_runs: ``{pipeline: the runs of its own DAG, newest first}``.
    :param base_path: the Airflow UI's path prefix (``[api] base_url``'s path; ``""`` at the root).
    :param readable_dags: the DAGs the user may read: a row links its pipeline's own DAG if among them.
    """
    rows = []
    for name in sorted(writers):
        report, task = reports.get(name, (None, None))
        fields: dict[str, object] = {}
        note = None
        if report is not None:
            fields = _from_report(report)
            in_use = report.writers.writers.value if report.writers else None
            writer = in_use or f"{writers[name]} (spec)"
        else:
            writer = f"{writers[name]} (spec)"
            note = "no health report yet" if task is None else "the latest health report could not be read"
        rows.append(PipelineRow(
            pipeline=name, writer=writer, health_run=task, note=note,
            recovery_runs=tuple(recovery_runs.get(name, ())), pipeline_runs=tuple(pipeline_runs.get(name, ())),
            recovery_form_path=recovery_form_path(base_path, name), **fields,
            dag_path=dag_path(base_path, dag_id) if (dag_id := pipeline_dag_id(name)) in readable_dags else None,
        ))
    return rows
