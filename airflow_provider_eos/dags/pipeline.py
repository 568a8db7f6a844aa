"""The ``eos_pipeline`` DAG, built by :func:`pipeline_dag` for a folder of pipeline specs.

The Spark submit operator is imported when the DAG is built, through
:func:`~airflow_provider_eos.operators.spark_extra.spark_submit_operator`: a worker without the
``spark`` extra parses this DAG too, and only its submit tasks would fail there, naming the fix.
"""

from __future__ import annotations

from pathlib import Path

import pendulum

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.providers.common.compat.sdk import AirflowFailException
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, Param, task
from airflow.task.trigger_rule import TriggerRule

from airflow_provider_eos.configuration import setting
from airflow_provider_eos.core.dag_ids import PIPELINE_DAG_ID
from airflow_provider_eos.operators.driver import ConfirmDriverGoneOperator, StopPipelineDriverOperator
from airflow_provider_eos.operators.lineage import submit_lineage
from airflow_provider_eos.operators.preflight import EosPreflightOperator
from airflow_provider_eos.operators.recovery import AbortOpenTransactionsOperator, VerifyCommittedOffsetsOperator
from airflow_provider_eos.operators.spark_extra import spark_submit_operator
from airflow_provider_eos.role_connections import kafka_conn_id
from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
from airflow_provider_eos.spec_registry import discover, spec_path_lookup, specs_directory

__all__ = ["DAG_ID", "DOC_MD", "pipeline_dag"]

DAG_ID = PIPELINE_DAG_ID
#: The DAG's docs (the invalid spec files, if any, are appended).
DOC_MD = """\
eos_pipeline: pre-flight -> abort lingering -> verify -> submit -> supervise; after a driver failure: recovery.

Pick the pipeline in the trigger form. The spec's trigger picks the path: an ``available_now``
job runs to the end of the available input, then ``supervise`` checks that this run committed
healthily; a processing-time job runs until stopped, so ``submit_stream`` and ``watch_stream``
run side by side and the sensor fails when the stream turns unhealthy (for lag and commit age only
once the new driver committed a batch, or failed to within the stop threshold: after a long downtime
the old run's last commit would fail it at once); ``stop_stream`` then stops the driver deliberately
and waits until it is gone.

Recovery never acts on a live job (docs/architecture.md, recovery): ``confirm_driver_gone`` waits until
every task on the running path is done, lets recovery run only if a task that ran the driver
failed or ``stop_stream`` stopped it, and only on positive evidence that no process of this
run's driver is left. A failed pre-flight therefore aborts nothing: the pipeline may be running
somewhere else. The recovery tasks abort what the dead driver left open and verify the offsets,
so the next run starts from a known state; the run still ends failed. No task passes ``force``.

Both abort tasks act (``dry_run=False``, stated here because every abort is a dry run unless told):
``abort_lingering`` before the job starts, ``recover_abort`` after its driver is confirmed gone.
"""

SPEC_PATH = "{{ spec_path_of(params.pipeline) }}"


def _report_failure() -> None:
    raise AirflowFailException(
        "The pipeline failed: see the first failed task. If a task that ran the driver failed or the "
        "driver was stopped, confirm_driver_gone, recover_abort and recover_verify say what recovery "
        "did. Fix the cause, then trigger eos_pipeline again: the job resumes exactly once."
    )


def _queue(key: str) -> dict[str, str]:
    """``{"queue": ...}`` when the ``[eos]`` option ``key`` names one; empty: the operators' default queue."""
    queue = setting(key)
    return {"queue": queue} if queue else {}


def pipeline_dag(pipelines: str | Path) -> DAG:
    """The ``eos_pipeline`` DAG: pre-flight, abort lingering, verify, submit, supervise; recovery after a failure.

    :param pipelines: the folder of pipeline specs when neither ``$EOS_SPECS_DIR`` nor ``[eos] specs_dir``
        names one (the DAG files pass ``pipelines/`` next to themselves).
    """
    specs_dir = specs_directory(Path(pipelines))
    # An invalid spec file is skipped here and named in the docs (and by dags/eos_spec_errors.py).
    discovered = discover(specs_dir)
    specs = discovered.specs
    spark_conn_id = setting("spark_conn_id")  # $EOS_SPARK_CONN_ID, else [eos] spark_conn_id (spark_default)
    # Each role's principal (its own ACLs, `eos acls`); None: the spec's own kafka settings.
    job, recovery, health = kafka_conn_id("job"), kafka_conn_id("recovery"), kafka_conn_id("health")
    submit_operator = spark_submit_operator()
    # [eos] queue_submit / queue_recovery: where the driver runs and where recovery judges it (note 37).
    on_submit, on_recovery = _queue("queue_submit"), _queue("queue_recovery")

    with DAG(
        dag_id=DAG_ID,
        description="Run an exactly-once Kafka -> Spark -> Kafka pipeline with pre-flight, supervision and recovery",
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        max_active_runs=1,
        tags=["eos", "kafka", "spark"],
        user_defined_macros={"spec_path_of": spec_path_lookup(specs, specs_dir)},
        params={
            "pipeline": Param(next(iter(specs), ""), type="string", enum=list(specs) or [""],
                              description=f"a pipeline spec from {specs_dir}"),
        },
        doc_md=DOC_MD + discovered.invalid_md(),
    ) as dag:
        preflight = EosPreflightOperator(task_id="preflight", spec_path=SPEC_PATH, specs_dir=str(specs_dir),
                                         kafka_conn_id=job)
        abort_lingering = AbortOpenTransactionsOperator(
            task_id="abort_lingering", spec_path=SPEC_PATH, dry_run=False, kafka_conn_id=recovery
        )
        verify = VerifyCommittedOffsetsOperator(task_id="verify", spec_path=SPEC_PATH, kafka_conn_id=recovery)

        @task.branch(task_id="choose_path")
        def choose_path(spec_path: str) -> str | list[str]:
            """``available_now`` specs end by themselves; processing-time specs are supervised while they run."""
            from airflow_provider_eos.core.spec import PipelineSpec

            if PipelineSpec.load(spec_path).trigger_interval_ms is None:
                return "submit"
            return ["submit_stream", "watch_stream"]

        path = choose_path(SPEC_PATH)
        # Assets: the folder's input topics, and the outputs alias a run attaches its own topics to.
        lineage = submit_lineage(specs.values())
        submit = submit_operator(task_id="submit", spec_path=SPEC_PATH, conn_id=spark_conn_id, kafka_conn_id=job,
                                 **lineage, **on_submit)
        supervise = StreamingQueryHealthSensor(
            task_id="supervise", spec_path=SPEC_PATH, watch="wait_healthy",
            committed_after="{{ dag_run.start_date }}", poke_interval=5, timeout=600, kafka_conn_id=health,
            # An available_now run with no new input commits no batch: once submit succeeded, the group
            # having read the input submit recorded (XCom run_input) is healthy too (core/health/watch.py).
            driver_task_id="submit",
        )
        submit_stream = submit_operator(task_id="submit_stream", spec_path=SPEC_PATH, conn_id=spark_conn_id,
                                        kafka_conn_id=job, **lineage, **on_submit)
        watch_stream = StreamingQueryHealthSensor(
            task_id="watch_stream", spec_path=SPEC_PATH, watch="watch", poke_interval=30, timeout=7 * 24 * 3600,
            driver_task_id="submit_stream", kafka_conn_id=health,
        )
        stop_stream = StopPipelineDriverOperator(
            task_id="stop_stream", spec_path=SPEC_PATH, submit_task_ids=["submit_stream"],
            # Only an unhealthy stream (or a failed driver task) is stopped, not a watch that could not look.
            watch_task_id="watch_stream", trigger_rule=TriggerRule.ALL_FAILED, **on_recovery,
        )
        confirm_driver_gone = ConfirmDriverGoneOperator(
            task_id="confirm_driver_gone", spec_path=SPEC_PATH, submit_task_ids=["submit", "submit_stream"],
            stopped_by="stop_stream", trigger_rule=TriggerRule.ALL_DONE, **on_recovery,
        )
        recover_abort = AbortOpenTransactionsOperator(
            task_id="recover_abort", spec_path=SPEC_PATH, dry_run=False, driver_gone_task_id="confirm_driver_gone",
            kafka_conn_id=recovery, **on_recovery,
        )
        recover_verify = VerifyCommittedOffsetsOperator(
            task_id="recover_verify", spec_path=SPEC_PATH, kafka_conn_id=recovery, **on_recovery,
        )
        pipeline_failed = PythonOperator(
            task_id="pipeline_failed", python_callable=_report_failure, trigger_rule=TriggerRule.ONE_FAILED,
        )

        preflight >> abort_lingering >> verify >> path
        path >> submit >> supervise
        path >> [submit_stream, watch_stream]
        watch_stream >> stop_stream
        running = [submit, supervise, submit_stream, watch_stream]
        [*running, stop_stream] >> confirm_driver_gone >> recover_abort >> recover_verify
        running >> pipeline_failed
    return dag
