"""The ``eos_manual_recovery`` DAG (the on-call form), built by :func:`manual_recovery_dag` for a folder of specs."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pendulum
from airflow.sdk import DAG, Param, task

from airflow_provider_eos.core.dag_ids import RECOVERY_DAG_ID
from airflow_provider_eos.core.recovery_request import ACTIONS, IN_FLIGHT_ANSWERS, REFUSED, confirmation_help, decide
from airflow_provider_eos.operators.recovery import (
    AbortOpenTransactionsOperator,
    AlignGroupOffsetsOperator,
    RefuseRecoveryRequestOperator,
    RewindCheckpointOperator,
    VerifyCommittedOffsetsOperator,
)
from airflow_provider_eos.role_connections import kafka_conn_id
from airflow_provider_eos.spec_registry import discover, spec_path_lookup, specs_directory

__all__ = ["DAG_ID", "DOC_MD", "manual_recovery_dag", "validate_request"]

DAG_ID = RECOVERY_DAG_ID
#: The DAG's docs (the invalid spec files, if any, are appended).
DOC_MD = """\
eos_manual_recovery: the on-call form. Pick a pipeline and an action; dry run by default.

Actions: **verify** (read-only), **abort** (open transactions under the pipeline's prefix),
**rewind** (the checkpoint to a batch; moved files go to a backup folder), **align** (the sink
group to the checkpoint). To change anything, switch dry run off AND type the confirmation
`<action> <pipeline>` exactly (the Confirmation field lists each pipeline's phrases); with
**Force** on it reads `<action> <pipeline> force`. Abort, rewind and align refuse while the
pipeline looks alive unless forced. A rewind or align dry run shows a **plan fingerprint**: type
it in *Plan fingerprint* when executing, and the action runs only if its plan is still the one
you read. When verify says the batch in flight's offsets may have expired, align refuses until
*Batch in flight* says what the output topic shows of it (written, not-written).

**Where to read the result:** open the task that ran (verify, abort, rewind or align); its
*Rendered Templates* tab shows `result`, a compact card: the outcome, the next step, and the
table (verify: partition, checkpoint offset, group offset, marker, verdict, worst first; a dry
run: what would change; a refused abort: why). Its log opens with the same card; the full report
is its XCom `return_value`.

**A refused request** (a wrong confirmation, a target batch for another action) goes to the
`refused` task instead: it logs the reason in one line and succeeds, and every action task is
skipped. Nothing ran, so nothing fails: the run is not a pipeline incident and fires no
task-failure alert; the reason is the `refused` task's log line, `result` and XCom.
"""

SPEC_PATH = "{{ spec_path_of(params.pipeline) }}"
# A flag the form leaves empty (null) keeps its safe value: dry run on, force off.
DRY_RUN = "{{ params.dry_run != false }}"
FORCE = "{{ params.force == true }}"
EXPECTED_PLAN = "{{ params.expected_plan or '' }}"
IN_FLIGHT_BATCH = "{{ params.in_flight_batch or '' }}"
IN_FLIGHT_HELP = (
    "align only, and only when verify says the batch in flight was planned longer ago than offsets.retention."
    "minutes and the group holds nothing for it: nothing in Kafka then tells whether it was written, so align "
    "refuses until told (Force does not replace this). Look in the output topic (read_committed) for its output, "
    "then: written (all of it there: the group gets that batch's end offsets and marker, the replay skips it) or "
    "not-written (none of it: the group gets the last committed batch's, the replay writes it). Empty: not told"
)
FORCE_HELP = (
    "Overrides two refusals and nothing else. 1) abort, rewind and align: the pipeline looks alive (a checkpoint "
    "commit within the quiet period, or a transaction under the prefix younger than its timeout). 2) align only: a "
    "verdict that makes aligning lose or duplicate output (KAFKA_BEHIND, KAFKA_AHEAD_SAFE, DIVERGED, a partly "
    "written batch). With dry run off the confirmation then reads '<action> <pipeline> force'. The plan fingerprint "
    "is still checked."
)

log = logging.getLogger(__name__)


def validate_request(params: Mapping[str, Any], specs: Mapping[str, Path]) -> str:
    """Check the form; return the task id to follow: the action's, or ``refused`` with the reason logged.

    :param params: the run's params (the trigger form).
    :param specs: the known pipelines, ``{name: spec file}``.
    """
    decision = decide(dict(params), specs)
    if decision.refused:
        log.warning("Refusing the request: %s", decision.reason)
    return decision.task_id


def manual_recovery_dag(pipelines: str | Path) -> DAG:
    """The ``eos_manual_recovery`` DAG: verify, abort, rewind or align one pipeline; dry run by default.

    :param pipelines: the folder of pipeline specs when neither ``$EOS_SPECS_DIR`` nor ``[eos] specs_dir``
        names one (the DAG files pass ``pipelines/`` next to themselves).
    """
    specs_dir = specs_directory(Path(pipelines))
    # An invalid spec file is skipped here and named in the docs (and by dags/eos_spec_errors.py).
    discovered = discover(specs_dir)
    specs = discovered.specs
    recovery = kafka_conn_id("recovery")  # every action runs as the recovery principal

    with DAG(
        dag_id=DAG_ID,
        description="On-call recovery of an exactly-once pipeline: verify, abort, rewind, align (dry run first)",
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["eos", "recovery"],
        user_defined_macros={"spec_path_of": spec_path_lookup(specs, specs_dir)},
        params={
            "pipeline": Param(next(iter(specs), ""), type="string", enum=list(specs) or [""], title="Pipeline"),
            "action": Param("verify", type="string", enum=list(ACTIONS), title="Action",
                            description="verify is read-only; abort, rewind and align change state unless dry run"),
            # ["boolean", "null"]: a switch that is never "required" (the form marks a type without null so).
            "dry_run": Param(True, type=["boolean", "null"], title="Dry run",
                             description="on: show what would change, change nothing"),
            "target_batch": Param(None, type=["null", "integer"], minimum=-1, title="Target batch (rewind)",
                                  description="empty: the batch the verification names"),
            "force": Param(False, type=["boolean", "null"], title="Force", description=FORCE_HELP),
            "expected_plan": Param(None, type=["null", "string"], title="Plan fingerprint (rewind, align)",
                                   description="the fingerprint the dry run showed; the action then runs only if "
                                   "its plan is still that one. Empty: not checked"),
            "in_flight_batch": Param(None, type=["null", "string"], enum=[None, *IN_FLIGHT_ANSWERS],
                                     title="Batch in flight (align after expired offsets)",
                                     description=IN_FLIGHT_HELP),
            # Optional (null allowed, default null): verify and dry runs need nothing typed here.
            "confirmation": Param(None, type=["null", "string"], title="Confirmation",
                                  description_md=confirmation_help(specs)),
        },
        render_template_as_native_obj=False,
        doc_md=DOC_MD + discovered.invalid_md(),
    ) as dag:

        @task.branch(task_id="validate_request")
        def choose(**context: Any) -> str:
            return validate_request(context["params"], specs)

        actions = [
            VerifyCommittedOffsetsOperator(task_id="verify", spec_path=SPEC_PATH, kafka_conn_id=recovery),
            AbortOpenTransactionsOperator(task_id="abort", spec_path=SPEC_PATH, dry_run=DRY_RUN, force=FORCE,
                                          kafka_conn_id=recovery),
            RewindCheckpointOperator(task_id="rewind", spec_path=SPEC_PATH, to_batch="{{ params.target_batch }}",
                                     dry_run=DRY_RUN, force=FORCE, expected_plan=EXPECTED_PLAN,
                                     kafka_conn_id=recovery),
            AlignGroupOffsetsOperator(task_id="align", spec_path=SPEC_PATH, dry_run=DRY_RUN, force=FORCE,
                                      expected_plan=EXPECTED_PLAN, in_flight_batch=IN_FLIGHT_BATCH,
                                      kafka_conn_id=recovery),
        ]
        choose() >> [*actions, RefuseRecoveryRequestOperator(task_id=REFUSED, pipelines=list(specs))]
    return dag
