"""The pipelines' DAGs, one per pipeline spec (``eos_pipeline__<name>``), built by :func:`pipeline_dags`.

One DAG per pipeline (design note 54): a processing-time pipeline's run lasts as long as its stream,
so a DAG shared by every pipeline with ``max_active_runs=1`` held every other pipeline's runs back
while one streamed; each DAG keeps ``max_active_runs=1``, so two runs of one pipeline never start
together (each begins by aborting the transactions open under the pipeline's prefix).

The Spark submit operator is imported when the DAGs are built, through
:func:`~airflow_provider_eos.operators.spark_extra.spark_submit_operator`: a worker without the
``spark`` extra parses these DAGs too, and only their submit tasks would fail there, naming the fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pendulum

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.providers.common.compat.sdk import AirflowFailException
from airflow.providers.standard.operators.python import PythonOperator
from airflow.sdk import DAG, BaseOperator, task
from airflow.task.trigger_rule import TriggerRule

from airflow_provider_eos.configuration import setting
from airflow_provider_eos.core.dag_ids import pipeline_dag_id
from airflow_provider_eos.operators.driver import ConfirmDriverGoneOperator, StopPipelineDriverOperator
from airflow_provider_eos.operators.lineage import submit_lineage
from airflow_provider_eos.operators.preflight import EosPreflightOperator
from airflow_provider_eos.operators.recovery import AbortOpenTransactionsOperator, VerifyCommittedOffsetsOperator
from airflow_provider_eos.operators.spark_extra import spark_submit_operator
from airflow_provider_eos.role_connections import kafka_conn_id
from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor
from airflow_provider_eos.spec_registry import discover, specs_directory

__all__ = ["DOC_MD", "pipeline_dags"]

#: The DAGs' docs: the pipeline's own line first, then this (the invalid spec files, if any, are appended).
DOC_MD = """\
pre-flight -> abort lingering -> verify -> submit -> supervise; after a driver failure: recovery.

One run of this pipeline at a time (``max_active_runs=1``); every other pipeline has a DAG of its own
(``eos_pipeline__<name>``) and runs independently of this one. The spec's trigger picks the path: an
``available_now`` job runs to the end of the available input, then ``supervise`` checks that this run
committed healthily; a processing-time job runs until stopped, so ``submit_stream`` and ``watch_stream``
run side by side and the sensor fails when the stream turns unhealthy (for lag and commit age only
once the new driver committed a batch, or failed to within the stop threshold: after a long downtime
the old run's last commit would fail it at once); ``stop_stream`` then stops the driver deliberately
and waits until it is gone. The watch lasts as long as ``submit_stream``: it has no deadline, and
once the driver stopped cleanly (it exits 0 after a SIGTERM: ``submit_stream`` succeeded) it succeeds
(outcome ``driver_stopped``) and the run ends without recovery.

Recovery never acts on a live job (docs/architecture.md, recovery): ``confirm_driver_gone`` waits until
every task on the running path is done, lets recovery run only if a task that ran the driver
failed or ``stop_stream`` stopped it, and only on positive evidence that no process of this
run's driver is left. A failed pre-flight therefore aborts nothing: the pipeline may be running
somewhere else. The recovery tasks abort what the dead driver left open and verify the offsets,
so the next run starts from a known state; the run still ends failed. No task passes ``force``.

Both abort tasks act (``dry_run=False``, stated here because every abort is a dry run unless told):
``abort_lingering`` before the job starts, ``recover_abort`` after its driver is confirmed gone.
"""


def _report_failure(dag_id: str) -> None:
    raise AirflowFailException(
        "The pipeline failed: see the first failed task. If a task that ran the driver failed or the "
        "driver was stopped, confirm_driver_gone, recover_abort and recover_verify say what recovery "
        f"did. Fix the cause, then trigger {dag_id} again: the job resumes exactly once."
    )


def _queue(key: str) -> dict[str, str]:
    """``{"queue": ...}`` when the ``[eos]`` option ``key`` names one; empty: the operators' default queue."""
    queue = setting(key)
    return {"queue": queue} if queue else {}


def pipeline_dags(pipelines: str | Path) -> dict[str, DAG]:
    """One DAG per healthy pipeline spec, ``{dag id: DAG}``: pre-flight, abort lingering, verify, submit,
    supervise; recovery after a failure.

    A DAG file registers each in its module globals, as Airflow finds generated DAGs there
    (``dags/eos_pipeline.py``).

    :param pipelines: the folder of pipeline specs when neither ``$EOS_SPECS_DIR`` nor ``[eos] specs_dir``
        names one (the DAG files pass ``pipelines/`` next to themselves).
    """
    specs_dir = specs_directory(Path(pipelines))
    # An invalid spec file is skipped here (no DAG) and named in the docs (and by dags/eos_spec_errors.py).
    discovered = discover(specs_dir)
    if not discovered.specs:
        return {}
    settings = _Settings(
        spark_conn_id=setting("spark_conn_id"),  # $EOS_SPARK_CONN_ID, else [eos] spark_conn_id (spark_default)
        # Each role's principal (its own ACLs, `eos acls`); None: the spec's own kafka settings.
        job=kafka_conn_id("job"), recovery=kafka_conn_id("recovery"), health=kafka_conn_id("health"),
        submit_operator=spark_submit_operator(),
        # [eos] queue_submit / queue_recovery: where the driver runs and where recovery judges it (note 37).
        on_submit=_queue("queue_submit"), on_recovery=_queue("queue_recovery"),
        specs_dir=specs_dir, invalid_md=discovered.invalid_md(),
    )
    dags = [_pipeline_dag(name, spec_file, settings) for name, spec_file in discovered.specs.items()]
    return {dag.dag_id: dag for dag in dags}


class _Settings(NamedTuple):
    """What every pipeline's DAG of one folder shares: read once per parse."""

    spark_conn_id: str | None
    job: str | None
    recovery: str | None
    health: str | None
    submit_operator: type[BaseOperator]
    on_submit: dict[str, str]
    on_recovery: dict[str, str]
    specs_dir: Path
    invalid_md: str


def _pipeline_dag(name: str, spec_file: Path, settings: _Settings) -> DAG:
    """The DAG of the pipeline ``name``, whose spec is ``spec_file``."""
    spark_conn_id, job, recovery, health = settings.spark_conn_id, settings.job, settings.recovery, settings.health
    submit_operator, on_submit, on_recovery = settings.submit_operator, settings.on_submit, settings.on_recovery
    specs_dir, invalid_md = settings.specs_dir, settings.invalid_md
    dag_id = pipeline_dag_id(name)
    spec_path = str(spec_file)

    with DAG(
        dag_id=dag_id,
        description=f"Run the exactly-once Kafka -> Spark -> Kafka pipeline {name} with pre-flight, supervision "
                    "and recovery",
        schedule=None,
        start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
        catchup=False,
        # One run of this pipeline at a time: each run starts by aborting what is open under its prefix.
        max_active_runs=1,
        tags=["eos", "kafka", "spark", name],
        doc_md=f"{dag_id}: the pipeline `{name}` (spec `{spec_path}`): " + DOC_MD + invalid_md,
    ) as dag:
        preflight = EosPreflightOperator(task_id="preflight", spec_path=spec_path, specs_dir=str(specs_dir),
                                         kafka_conn_id=job)
        abort_lingering = AbortOpenTransactionsOperator(
            task_id="abort_lingering", spec_path=spec_path, dry_run=False, kafka_conn_id=recovery
        )
        verify = VerifyCommittedOffsetsOperator(task_id="verify", spec_path=spec_path, kafka_conn_id=recovery)

        @task.branch(task_id="choose_path")
        def choose_path(spec_path: str) -> str | list[str]:
            """``available_now`` specs end by themselves; processing-time specs are supervised while they run."""
            from airflow_provider_eos.core.spec import PipelineSpec

            if PipelineSpec.load(spec_path).trigger_interval_ms is None:
                return "submit"
            return ["submit_stream", "watch_stream"]

        path = choose_path(spec_path)
        # Assets: the pipeline's input topics, and the outputs alias a run attaches its output topics to.
        lineage = submit_lineage([spec_file])
        submit = submit_operator(task_id="submit", spec_path=spec_path, conn_id=spark_conn_id, kafka_conn_id=job,
                                 **lineage, **on_submit)
        supervise = StreamingQueryHealthSensor(
            task_id="supervise", spec_path=spec_path, watch="wait_healthy",
            committed_after="{{ dag_run.start_date }}", poke_interval=5, timeout=600, kafka_conn_id=health,
            # An available_now run with no new input commits no batch: once submit succeeded, the group
            # having read the input submit recorded (XCom run_input) is healthy too (core/health/watch.py).
            driver_task_id="submit",
        )
        submit_stream = submit_operator(task_id="submit_stream", spec_path=spec_path, conn_id=spark_conn_id,
                                        kafka_conn_id=job, **lineage, **on_submit)
        # No timeout: a watch beside its driver's task lasts as long as that task (core/health/watch.py,
        # ends_at_timeout); it ends with the driver (driver_failed, driver_stopped) or an unhealthy stream.
        watch_stream = StreamingQueryHealthSensor(
            task_id="watch_stream", spec_path=spec_path, watch="watch", poke_interval=30,
            driver_task_id="submit_stream", kafka_conn_id=health,
        )
        stop_stream = StopPipelineDriverOperator(
            task_id="stop_stream", spec_path=spec_path, submit_task_ids=["submit_stream"],
            # Only an unhealthy stream (or a failed driver task) is stopped, not a watch that could not look.
            watch_task_id="watch_stream", trigger_rule=TriggerRule.ALL_FAILED, **on_recovery,
        )
        confirm_driver_gone = ConfirmDriverGoneOperator(
            task_id="confirm_driver_gone", spec_path=spec_path, submit_task_ids=["submit", "submit_stream"],
            stopped_by="stop_stream", trigger_rule=TriggerRule.ALL_DONE, **on_recovery,
        )
        recover_abort = AbortOpenTransactionsOperator(
            task_id="recover_abort", spec_path=spec_path, dry_run=False, driver_gone_task_id="confirm_driver_gone",
            kafka_conn_id=recovery, **on_recovery,
        )
        recover_verify = VerifyCommittedOffsetsOperator(
            task_id="recover_verify", spec_path=spec_path, kafka_conn_id=recovery, **on_recovery,
        )
        pipeline_failed = PythonOperator(
            task_id="pipeline_failed", python_callable=_report_failure, op_kwargs={"dag_id": dag_id},
            trigger_rule=TriggerRule.ONE_FAILED,
        )

        preflight >> abort_lingering >> verify >> path
        path >> submit >> supervise
        path >> [submit_stream, watch_stream]
        watch_stream >> stop_stream
        running = [submit, supervise, submit_stream, watch_stream]
        [*running, stop_stream] >> confirm_driver_gone >> recover_abort >> recover_verify
        running >> pipeline_failed
    return dag
