"""The submit operator against the shared MiniYARNCluster in cluster mode, as an Airflow worker runs it.

The YARN tests' common ground (the worker's environment is the ``on_yarn`` fixture, in
``tests/yarn/conftest.py``): a harness whose checkpoint is on HDFS, the operator, and
:class:`RunningSubmit`: the task running in a thread until its application is killed.
"""

from __future__ import annotations

import threading
from pathlib import Path

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.retry import RetryPolicy
from airflow_provider_eos.devstack.yarn import YarnClusterInfo
from tests.support.pipeline import PipelineHarness
from tests.support.yarn_cluster import application, container_log, same_machine_conf

__all__ = [
    "APPLICATION_ID",
    "FIRST_COMMIT",
    "SPARK_CONN",
    "RunningSubmit",
    "TaskInstance",
    "hdfs_harness",
    "submit_operator",
]

SPARK_CONN = "eos_yarn"
FIRST_COMMIT = RetryPolicy(waiting_for="the first committed batch on HDFS", timeout_s=300, first_delay_s=2,
                           max_delay_s=3)
APPLICATION_ID = RetryPolicy(waiting_for="the YARN application id", timeout_s=240, first_delay_s=1, max_delay_s=1)


class TaskInstance:
    """What the operator uses of Airflow's task instance: the DAG id, XCom and stats tags."""

    dag_id = "eos_yarn"
    stats_tags: dict[str, str] = {}

    def __init__(self) -> None:
        self.xcom: dict[str, object] = {}

    def xcom_push(self, key: str, value: object) -> None:
        self.xcom[key] = value


def hdfs_harness(bootstrap: str, tmp_path: Path, info: YarnClusterInfo, **settings: object) -> PipelineHarness:
    harness = PipelineHarness(bootstrap, tmp_path, writers="executors", **settings)
    return harness.with_overrides(checkpoint_location=f"{info.namenode_url}/eos/{harness.name}/checkpoint")


def submit_operator(harness: PipelineHarness, info: YarnClusterInfo, env_vars: dict[str, str] | None = None):
    from airflow_provider_eos.operators.spark_submit import EosSparkSubmitOperator

    conf = {**same_machine_conf(info), "spark.app.name": f"eos-{harness.name}"}
    return EosSparkSubmitOperator(task_id="submit", spec_path=str(harness.spec_file), conn_id=SPARK_CONN, conf=conf,
                                  status_poll_interval=2, env_vars=env_vars)


class RunningSubmit:
    """The submit task, started in a thread as a worker runs it, for a test that kills its application.

    :param operator: the submit operator (:func:`submit_operator`).
    :param run_id: the task's run id.
    :param info: the YARN cluster (for the driver container's log when a wait fails).
    """

    def __init__(self, operator, run_id: str, info: YarnClusterInfo) -> None:
        self.operator, self.info = operator, info
        self.failure: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, args=(run_id,), name=f"eos-yarn-task-{run_id}", daemon=True)
        self.thread.start()

    def _run(self, run_id: str) -> None:
        try:
            self.operator.execute({"ti": TaskInstance(), "run_id": run_id})
        except BaseException as err:  # the task's end, asserted by join_killed
            self.failure.append(err)

    def application_id(self) -> str:
        """The application id, once spark-submit printed it."""
        known = APPLICATION_ID.poll(lambda: self.operator._hook and self.operator._hook._yarn_application_id,
                                    until=bool, what="the application id from spark-submit's output")
        assert known.settled, "spark-submit printed no application id"
        return known.value

    def first_commit(self, checkpoint: CheckpointReader, app_id: str) -> int:
        """The first batch the application committed in ``checkpoint``; fails with its driver's log."""
        committed = FIRST_COMMIT.poll(lambda: checkpoint.latest_committed_batch(),
                                      until=lambda batch: batch is not None,
                                      what=f"a committed batch of {app_id}")
        assert committed.settled, container_log(application(self.info, app_id), "stdout")[-3000:]
        return committed.value

    def join_killed(self) -> None:
        """The task ended with its killed application."""
        self.thread.join(120)
        assert not self.thread.is_alive() and self.failure, "the task did not end with the killed application"
        assert "KILLED" in str(self.failure[0]), self.failure[0]
