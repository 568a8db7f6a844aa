"""The ``eos_health_check`` DAG, built by :func:`health_check_dag` for a folder of pipeline specs."""

from __future__ import annotations

from pathlib import Path

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_eos.configuration import positive_seconds
from airflow_provider_eos.core.dag_ids import HEALTH_DAG_ID, HEALTH_PIPELINES_TASK_ID, HEALTH_TASK_ID
from airflow_provider_eos.operators.health import PipelineHealthReportOperator
from airflow_provider_eos.role_connections import kafka_conn_id
from airflow_provider_eos.spec_registry import discover, specs_directory

__all__ = ["DAG_ID", "DOC_MD", "health_check_dag", "pipelines_to_check"]

DAG_ID = HEALTH_DAG_ID
#: The DAG's docs (the pipelines checked and the invalid spec files, if any, are appended).
DOC_MD = """\
eos_health_check: every 15 minutes, one health report per configured pipeline.

Its first task, `pipelines_to_check`, reads the specs folder as the run starts: a spec added since
the list below was parsed is checked too, and one removed since is not.

Each mapped task (labelled ``<pipeline>: <status>`` once it reported) samples its pipeline three
times, ``[eos] health_check_interval_s`` apart (10 s by default): commit age, lag trend, LSO pinned
below the high watermark, lingering transactions, the verification verdict. It fails when the
pipeline is UNHEALTHY, so alerting on task failure alerts on the pipeline.

**Where to read a report:** open a mapped task; its *Rendered Templates* tab shows `result`, a
compact card: the status, the findings worst first, the input partitions by lag (worst first),
partitions whose last stable offset is pinned, open transactions. The log opens with the same
card; the full report is the task's XCom `return_value`.
"""


@task(task_id=HEALTH_PIPELINES_TASK_ID)
def pipelines_to_check(folder: str) -> list[str]:
    """The spec files of ``folder``'s valid pipelines, read as the run starts (invalid ones are logged).

    The reports are mapped over this task's result, not over the list the DAG file found when it was
    parsed: a worker parses the DAG file again to run a mapped task and takes the n-th entry of *its* list,
    so with a spec added or removed in between a report checked another pipeline, or none (design note 90).
    """
    return [str(path) for path in discover(Path(folder)).specs.values()]


def health_check_dag(pipelines: str | Path) -> DAG:
    """The ``eos_health_check`` DAG: every 15 minutes, one health report per pipeline (dynamic task mapping).

    :param pipelines: the folder of pipeline specs when neither ``$EOS_SPECS_DIR`` nor ``[eos] specs_dir``
        names one (the DAG files pass ``pipelines/`` next to themselves).
    """
    # An invalid spec file is skipped here and named in the docs (and by dags/eos_spec_errors.py).
    folder = specs_directory(Path(pipelines))
    discovered = discover(folder)
    specs = discovered.specs
    health = kafka_conn_id("health")  # the health principal: describe-only ACLs

    with DAG(
        dag_id=DAG_ID,
        description="Scheduled health report of every exactly-once pipeline",
        schedule="*/15 * * * *",
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["eos", "health"],
        doc_md=DOC_MD + "\n**Pipelines checked:** " + (", ".join(f"`{name}`" for name in sorted(specs)) or "none")
        + discovered.invalid_md(),
    ) as dag:
        PipelineHealthReportOperator.partial(
            task_id=HEALTH_TASK_ID,
            kafka_conn_id=health,
            samples=3,
            # [eos] health_check_interval_s: a deployment's own sampling window (design note 78).
            interval_s=positive_seconds("health_check_interval_s"),
            map_index_template="{{ pipeline_name }}",
        ).expand(spec_path=pipelines_to_check(str(folder)))
    return dag
