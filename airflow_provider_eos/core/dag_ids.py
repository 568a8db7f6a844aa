"""The ids of the DAGs this provider ships (dags/), owned here: the DAGs, the devstack and the UI view use them."""

from __future__ import annotations

__all__ = ["HEALTH_DAG_ID", "HEALTH_TASK_ID", "PIPELINE_DAG_ID", "PROVIDER_DAG_IDS", "RECOVERY_DAG_ID"]

PIPELINE_DAG_ID = "eos_pipeline"
HEALTH_DAG_ID = "eos_health_check"
#: The health check's mapped task: one health report per pipeline.
HEALTH_TASK_ID = "health_report"
RECOVERY_DAG_ID = "eos_manual_recovery"
PROVIDER_DAG_IDS = (PIPELINE_DAG_ID, HEALTH_DAG_ID, RECOVERY_DAG_ID)
