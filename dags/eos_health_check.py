"""eos_health_check: every 15 minutes, one health report per configured pipeline.

Each mapped task (labelled ``<pipeline>: <status>`` once it reported) samples its pipeline three
times (commit age, lag trend, LSO pinned below the high watermark, lingering transactions, the
verification verdict) and fails when the pipeline is UNHEALTHY, so alerting on task failure
alerts on the pipeline.

**Where to read a report:** open a mapped task; its *Rendered Templates* tab shows `result`, a
compact card: the status, the findings worst first, the input partitions by lag (worst first),
partitions whose last stable offset is pinned, open transactions. The log opens with the same
card; the full report is the task's XCom `return_value`.
"""

from __future__ import annotations

from pathlib import Path

import pendulum
from airflow.sdk import DAG

from airflow_provider_eos.operators.health import PipelineHealthReportOperator
from airflow_provider_eos.role_connections import kafka_conn_id
from airflow_provider_eos.spec_registry import discover, specs_directory

SPECS_DIR = specs_directory(Path(__file__).parent / "pipelines")
# An invalid spec file is skipped here and named in the docs (and by dags/eos_spec_errors.py).
DISCOVERED = discover(SPECS_DIR)
SPECS = DISCOVERED.specs
HEALTH = kafka_conn_id("health")  # the health principal: describe-only ACLs

with DAG(
    dag_id="eos_health_check",
    description="Scheduled health report of every exactly-once pipeline",
    schedule="*/15 * * * *",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["eos", "health"],
    doc_md=__doc__ + "\n**Pipelines checked:** " + (", ".join(f"`{name}`" for name in sorted(SPECS)) or "none")
    + DISCOVERED.invalid_md(),
) as dag:
    PipelineHealthReportOperator.partial(
        task_id="health_report",
        kafka_conn_id=HEALTH,
        samples=3,
        interval_s=10,
        map_index_template="{{ pipeline_name }}",
    ).expand(spec_path=[str(path) for path in SPECS.values()])
