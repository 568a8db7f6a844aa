"""The ids of the DAGs this provider ships (dags/), owned here: the DAGs, the devstack and the UI view use them.

Each pipeline spec has a DAG of its own, ``eos_pipeline__<name>`` (:func:`pipeline_dag_id`), so that one
pipeline's run (a processing-time stream runs for days) never holds another pipeline's runs back, while
``max_active_runs=1`` still keeps two runs of one pipeline from starting together (design note 54).
"""

from __future__ import annotations

__all__ = [
    "HEALTH_DAG_ID",
    "HEALTH_PIPELINES_TASK_ID",
    "HEALTH_TASK_ID",
    "PIPELINE_DAG_PREFIX",
    "PROVIDER_DAG_IDS",
    "RECOVERY_DAG_ID",
    "pipeline_dag_id",
    "pipeline_of_dag_id",
]

#: The prefix of every pipeline's DAG id: ``eos_pipeline__<pipeline name>``.
PIPELINE_DAG_PREFIX = "eos_pipeline__"
HEALTH_DAG_ID = "eos_health_check"
#: The health check's mapped task: one health report per pipeline.
HEALTH_TASK_ID = "health_report"
#: The health check's first task: the spec files of the pipelines to check, read as the run starts.
HEALTH_PIPELINES_TASK_ID = "pipelines_to_check"
RECOVERY_DAG_ID = "eos_manual_recovery"
#: The DAGs every deployment has, whatever its specs folder holds (the pipelines' DAGs come with their specs).
PROVIDER_DAG_IDS = (HEALTH_DAG_ID, RECOVERY_DAG_ID)


def pipeline_dag_id(pipeline: str) -> str:
    """The id of ``pipeline``'s DAG.

    A spec's name is ``[A-Za-z_][A-Za-z0-9_-]{0,63}`` (the spec's own check), so the id is a valid DAG id
    (letters, digits, ``_``, ``-``, at most 250 characters).

    :param pipeline: the pipeline's name (its spec's ``name``).
    """
    return f"{PIPELINE_DAG_PREFIX}{pipeline}"


def pipeline_of_dag_id(dag_id: str) -> str | None:
    """The pipeline whose DAG ``dag_id`` is (:func:`pipeline_dag_id`'s inverse); ``None`` for any other DAG."""
    if dag_id.startswith(PIPELINE_DAG_PREFIX) and len(dag_id) > len(PIPELINE_DAG_PREFIX):
        return dag_id[len(PIPELINE_DAG_PREFIX):]
    return None
