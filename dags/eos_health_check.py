"""eos_health_check: every 15 minutes, one health report per configured pipeline.

Each mapped task samples the pipeline three times (commit age, lag trend, LSO pinned below the
high watermark, lingering transactions, the verification verdict), pushes the report to XCom,
and fails when the pipeline is UNHEALTHY, so alerting on task failure alerts on the pipeline.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, task

from airflow_provider_eos.role_connections import kafka_conn_id
from airflow_provider_eos.spec_registry import discover_specs, specs_directory

SPECS_DIR = specs_directory(Path(__file__).parent / "pipelines")
SPECS = discover_specs(SPECS_DIR)
HEALTH = kafka_conn_id("health")  # the health principal: describe-only ACLs


@task(map_index_template="{{ pipeline_name }}")
def health_report(spec_path: str, **context: Any) -> dict[str, Any]:
    """Sample one pipeline, log the table, return the report; fail when unhealthy."""
    from airflow.sdk import get_current_context
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_provider_eos.hooks.kafka_admin import load_pipeline_spec
    from airflow_provider_eos.usecases.clients import PipelineClients
    from airflow_provider_eos.usecases.health import health

    spec = load_pipeline_spec(spec_path, HEALTH)
    # map_index_template renders against the live task context, not the **context copy.
    get_current_context()["pipeline_name"] = spec.name
    report = health(PipelineClients(spec), samples=3, interval_s=10).report
    print(report.render())
    if not report.is_healthy:
        context["ti"].xcom_push(key="return_value", value=report.to_dict())
        raise AirflowFailException(f"pipeline {spec.name} is {report.to_dict().get('status')}:\n{report.render()}")
    return report.to_dict()


with DAG(
    dag_id="eos_health_check",
    description="Scheduled health report of every exactly-once pipeline",
    schedule="*/15 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["eos", "health"],
    doc_md=__doc__,
) as dag:
    health_report.expand(spec_path=[str(path) for path in SPECS.values()])
