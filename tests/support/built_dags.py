"""Run a DAG that a test module builds with ``dag.test()`` in a child Python process.

The test module defines ``build_<builder>(**kwargs)`` functions that return a DAG, and ends with
``if __name__ == "__main__": child_main(globals())``. :func:`start_in_airflow` runs it as
``python -m <module> <builder> <kwargs as JSON> <result file>``: the child builds the DAG,
registers it in the temporary metadata DB the way the DAG processor would (Airflow 3.1+ creates
a DAG run only for a serialized DAG with a DAG version; see :func:`run_dag`), runs it, and
writes task states, tries, XComs and rendered fields as JSON. Its merged stdout/stderr is the
run's log. A child per run keeps Airflow out of the pytest process: Airflow binds its log output
to the streams present when it first configures logging, which pytest replaces per test, so
in-process runs after the first lose their task logs; and the child reads the ``airflow_home``
fixture's environment on import.

(:mod:`tests.support.dag_runner` does the same for the repo's own DAG files.)
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.airflow_compat import dagbag_module

REPO = Path(__file__).resolve().parents[2]
START = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)


@dataclass
class Run:
    """The outcome of one ``dag.test()`` run."""

    state: str
    states: dict[str, str]
    tries: dict[str, int]
    xcoms: dict[str, Any]
    rendered: dict[str, Any]
    log: str


@dataclass
class Child:
    """A ``dag.test()`` child process; its output goes to ``log``, its outcome to ``result``."""

    process: subprocess.Popen
    result: Path
    log: Path

    def finish(self, timeout_s: float) -> Run:
        """Wait for the child (killing it after ``timeout_s``) and read what its run left."""
        try:
            self.process.wait(timeout_s)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait(30)
        output = self.log.read_text(errors="replace")
        assert self.process.returncode == 0 and self.result.exists(), (
            f"dag.test() child: exit {self.process.returncode}\n{output[-8000:]}"
        )
        return Run(**json.loads(self.result.read_text()), log=output)


def start_in_airflow(
    module: str, builder: str, tmp_path: Path, env: dict[str, str] | None = None, **kwargs: Any
) -> Child:
    """Start ``dag.test()`` of ``<module>.build_<builder>(**kwargs)`` in a child process.

    :param module: the test module's name (its ``__name__``).
    :param env: variables added to the child's environment.
    """
    name = uuid.uuid4().hex[:8]
    result, log = tmp_path / f"run-{name}.json", tmp_path / f"run-{name}.log"
    with log.open("w") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", module, builder, json.dumps(kwargs), str(result)],
            cwd=REPO,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return Child(process, result, log)


def run_in_airflow(
    module: str, builder: str, tmp_path: Path, env: dict[str, str] | None = None, **kwargs: Any
) -> Run:
    """Run ``dag.test()`` of ``<module>.build_<builder>(**kwargs)`` in a child process, within 10 minutes."""
    return start_in_airflow(module, builder, tmp_path, env, **kwargs).finish(timeout_s=600)


def task_log(run: Run, task_id: str) -> str:
    """The log lines between ``dag.test()``'s start and end markers of one task."""
    start = run.log.index(f"starting task_id={task_id} ")
    end = run.log.index(f"end task task_id={task_id} ", start)
    return run.log[start:end]


# -- in the child process -------------------------------------------------------------------------


def new_dag(stem: str, **kwargs: Any):
    """A DAG with a unique id starting with ``stem``, run only by ``dag.test()``."""
    from airflow.sdk import DAG

    return DAG(f"{stem}_{uuid.uuid4().hex[:10]}", schedule=None, start_date=START, catchup=False, **kwargs)


def run_dag(dag) -> dict[str, Any]:
    """Register ``dag`` in the metadata DB, run it with ``dag.test()``, and collect what it left."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.models.renderedtifields import RenderedTaskInstanceFields
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    # dag.test() only runs DAGs it finds serialized with a version; it syncs the configured
    # bundles (the repo's dags/ folder), which do not hold a DAG built here, so it is written
    # to the DB the way the DAG processor writes a parsed file.
    DagBundlesManager().sync_bundles_to_db()
    bag = dagbag_module().DagBag(collect_dags=False)
    bag.bag_dag(dag)
    dagbag_module().sync_bag_to_db(bag, "dags-folder", None)

    dag_run = dag.test()

    with create_session() as session:
        tis = dag_run.get_task_instances(session=session)
        xcoms = session.query(XComModel).filter(
            XComModel.dag_id == dag.dag_id, XComModel.run_id == dag_run.run_id, XComModel.key == "return_value"
        )
        rendered = session.query(RenderedTaskInstanceFields).filter(
            RenderedTaskInstanceFields.dag_id == dag.dag_id, RenderedTaskInstanceFields.run_id == dag_run.run_id
        )
        return {
            "state": str(dag_run.state),
            "states": {ti.task_id: str(ti.state) for ti in tis},
            "tries": {ti.task_id: ti.try_number for ti in tis},
            "xcoms": {row.task_id: row.value for row in xcoms},
            "rendered": {row.task_id: row.rendered_fields for row in rendered},
        }


def child_main(builders: dict[str, Any]) -> None:
    """The child's entry point: ``python -m <module> BUILDER ARGS RESULT``, with the module's ``globals()``."""
    builder, arguments, result_path = sys.argv[1:]
    outcome = run_dag(builders[f"build_{builder}"](**json.loads(arguments)))
    Path(result_path).write_text(json.dumps(outcome, default=str))


def watch_then_stop_dag(spec_path: str, pipeline: str, token: str, **sensor_kwargs: Any):
    """A pipeline DAG's ``submit_stream`` (a stand-in recording the running driver's handle, as the operator does)
    -> ``watch_stream`` (``watch="watch"``, ``sensor_kwargs`` on top) -> ``stop_stream`` (on ALL_FAILED)."""
    from airflow.sdk import task
    from airflow.task.trigger_rule import TriggerRule

    from airflow_provider_eos.operators.driver import StopPipelineDriverOperator
    from airflow_provider_eos.sensors.health import StreamingQueryHealthSensor

    @task
    def submit_stream(**context: Any) -> None:
        from airflow_provider_eos.core.driver import DRIVER_XCOM_KEY, DriverHandle
        from airflow_provider_eos.spark.driver_processes import this_host_identity

        now = dt.datetime.now(dt.UTC)
        handle = DriverHandle(pipeline=pipeline, token=token, submitted_at=now - dt.timedelta(minutes=1),
                              earliest_start=now - dt.timedelta(minutes=10), **this_host_identity().model_dump())
        context["ti"].xcom_push(key=DRIVER_XCOM_KEY, value=handle.model_dump(mode="json"))

    with new_dag("eos_health") as dag:
        watch = StreamingQueryHealthSensor(task_id="watch_stream", spec_path=spec_path, watch="watch",
                                           poke_interval=1, **sensor_kwargs)
        stop = StopPipelineDriverOperator(task_id="stop_stream", spec_path=spec_path, submit_task_ids=["submit_stream"],
                                          watch_task_id="watch_stream", grace_period_s=5,
                                          trigger_rule=TriggerRule.ALL_FAILED)
        submit_stream() >> watch >> stop
    return dag
