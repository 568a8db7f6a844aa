"""eos_manual_recovery: the on-call form. Pick a pipeline and an action; dry run by default.

Actions: verify (read-only), abort (open transactions under the pipeline's prefix), rewind (the
checkpoint to a batch; moved files go to a backup folder), align (the sink group to the
checkpoint). To change anything, untick dry_run AND type the confirmation
``<action> <pipeline>`` exactly; the request is validated before any action runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, Param, task
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_eos.operators.recovery import (
    AbortOpenTransactionsOperator,
    AlignGroupOffsetsOperator,
    RewindCheckpointOperator,
    VerifyCommittedOffsetsOperator,
)
from airflow_provider_eos.role_connections import kafka_conn_id
from airflow_provider_eos.spec_registry import discover_specs, spec_path_lookup, specs_directory

SPECS_DIR = specs_directory(Path(__file__).parent / "pipelines")
SPECS = discover_specs(SPECS_DIR)
ACTIONS = ("verify", "abort", "rewind", "align")
SPEC_PATH = "{{ spec_path_of(params.pipeline) }}"
RECOVERY = kafka_conn_id("recovery")  # every action runs as the recovery principal


def validate_request(params: dict[str, Any]) -> str:
    """Check the form; return the task id of the action to run. Raises with what to change."""
    pipeline, action = params.get("pipeline"), params.get("action")
    if pipeline not in SPECS:
        raise AirflowFailException(f"pipeline {pipeline!r} is unknown; choose one of {sorted(SPECS)}")
    if action not in ACTIONS:
        raise AirflowFailException(f"action {action!r} is unknown; choose one of {list(ACTIONS)}")
    target = params.get("target_batch")
    if target is not None and (not isinstance(target, int) or isinstance(target, bool) or target < -1):
        raise AirflowFailException(f"target_batch is {target!r}; use a batch id >= -1, or leave it empty")
    if action != "rewind" and target is not None:
        raise AirflowFailException(f"target_batch {target} only applies to rewind, not {action}; leave it empty")
    if not params.get("dry_run", True) and action != "verify":
        expected = f"{action} {pipeline}"
        typed = (params.get("confirmation") or "").strip()
        if typed != expected:
            raise AirflowFailException(
                f"dry_run is off, so the confirmation must read exactly {expected!r}; got {typed!r}. "
                "Type it, or tick dry_run to see what would change first."
            )
    return action


with DAG(
    dag_id="eos_manual_recovery",
    description="On-call recovery of an exactly-once pipeline: verify, abort, rewind, align (dry run first)",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["eos", "recovery"],
    user_defined_macros={"spec_path_of": spec_path_lookup(SPECS, SPECS_DIR)},
    params={
        "pipeline": Param(next(iter(SPECS), ""), type="string", enum=list(SPECS) or [""], title="Pipeline"),
        "action": Param("verify", type="string", enum=list(ACTIONS), title="Action",
                        description="verify is read-only; abort, rewind and align change state unless dry_run"),
        "dry_run": Param(True, type="boolean", title="Dry run", description="show what would change, change nothing"),
        "target_batch": Param(None, type=["null", "integer"], minimum=-1, title="Target batch (rewind)",
                              description="empty: the batch the verification names"),
        "force": Param(False, type="boolean", title="Force",
                       description="abort/align even if the job looks alive (recent commits, young transactions)"),
        "confirmation": Param("", type="string", title="Confirmation",
                              description="with dry_run off: type '<action> <pipeline>' exactly"),
    },
    render_template_as_native_obj=False,
    doc_md=__doc__,
) as dag:

    @task.branch(task_id="validate_request")
    def choose(**context: Any) -> str:
        return validate_request(context["params"])

    dry_run = "{{ params.dry_run }}"
    actions = [
        VerifyCommittedOffsetsOperator(task_id="verify", spec_path=SPEC_PATH, kafka_conn_id=RECOVERY),
        AbortOpenTransactionsOperator(task_id="abort", spec_path=SPEC_PATH, dry_run=dry_run,
                                      force="{{ params.force }}", kafka_conn_id=RECOVERY),
        RewindCheckpointOperator(task_id="rewind", spec_path=SPEC_PATH, to_batch="{{ params.target_batch }}",
                                 dry_run=dry_run, kafka_conn_id=RECOVERY),
        AlignGroupOffsetsOperator(task_id="align", spec_path=SPEC_PATH, dry_run=dry_run, force="{{ params.force }}",
                                  kafka_conn_id=RECOVERY),
    ]
    choose() >> actions
