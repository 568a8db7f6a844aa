"""The pipeline DAG's driver steps: stop the stream deliberately, and confirm the driver is gone before recovery.

docs/architecture.md, "Never act on a live job". Recovery (abort, verify) runs only after a task
that ran the driver failed, or after :class:`StopPipelineDriverOperator` stopped it, and only
once :class:`ConfirmDriverGoneOperator` has positive evidence that the driver is gone: from this
host's process table, the driver's lease in the checkpoint or the cluster manager's record, so
from any worker (:mod:`airflow_provider_eos.usecases.driver_liveness`). Both find the driver by the run's driver token
(:func:`~airflow_provider_eos.core.driver.driver_token`), so they can only ever touch the driver
their own run submitted.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

# common-compat: the Task SDK's where this Airflow has it, core's on Airflow 3.1
from airflow.providers.common.compat.sdk import AirflowFailException, AirflowSkipException
from airflow.sdk import BaseOperator

from airflow_provider_eos.core.driver import DRIVER_XCOM_KEY, DriverHandle, DriverObservation, Liveness, driver_token
from airflow_provider_eos.core.driver_lease import lease_expiry_wait_s
from airflow_provider_eos.core.health.watch import WATCH_OUTCOME_XCOM_KEY, stops_the_driver
from airflow_provider_eos.hooks.checkpoint_storage import CheckpointStorageHook
from airflow_provider_eos.hooks.kafka_admin import load_pipeline_spec
from airflow_provider_eos.spark.driver_processes import observe, stop_driver, this_host_identity
from airflow_provider_eos.usecases.cluster_stop import kill_yarn_application
from airflow_provider_eos.usecases.driver_liveness import wait_until_driver_gone, wait_until_gone_unless_renewed

if TYPE_CHECKING:
    from airflow.sdk import Context

    from airflow_provider_eos.core.checkpoint import CheckpointReader

__all__ = ["ConfirmDriverGoneOperator", "StopPipelineDriverOperator", "earliest_driver_start", "lease_checkpoint"]

_FAILED = "failed"
# No bound known: a driver of the run may have started at any time.
_ANY_TIME = dt.datetime.min.replace(tzinfo=dt.UTC)


def earliest_driver_start(context: Context) -> dt.datetime | None:
    """When the DAG run became due (``run_after``): no attempt of any of its tasks, and so no driver, started before."""
    dag_run = context.get("dag_run")
    return getattr(dag_run, "run_after", None)


def lease_checkpoint(location: str, conn_id: str | None, log: logging.Logger | Any) -> CheckpointReader | None:
    """The checkpoint at ``location``, where the driver's lease is; ``None`` when it cannot be opened.

    The lease is then no evidence, which only ever makes a step wait or refuse; the other sources still count.
    """
    try:
        return CheckpointStorageHook(conn_id or None).get_reader(location)
    except Exception as err:
        log.warning("The checkpoint cannot be opened, so the driver's lease is not read: %s", err)
        return None


class _DriverStep(BaseOperator):
    """Shared: which pipeline, and which tasks of this run submit its driver.

    :param spec_path: the pipeline spec file (its name is part of the driver token). (templated)
    :param submit_task_ids: the tasks of this DAG that run spark-submit for the pipeline.
    :param checkpoint_conn_id: an Airflow connection with the checkpoint storage credentials (the lease is there);
        default: the worker's ambient credentials. (templated)
    """

    template_fields: Sequence[str] = ("spec_path", "checkpoint_conn_id")
    ui_color = "#f6d6d6"

    def __init__(self, *, spec_path: str, submit_task_ids: Sequence[str], checkpoint_conn_id: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.spec_path = spec_path
        self.submit_task_ids = list(submit_task_ids)
        self.checkpoint_conn_id = checkpoint_conn_id

    def driver_handle(self, context: Context) -> tuple[DriverHandle, bool]:
        """The driver this run submitted, and whether a submit task recorded it.

        Without a record (no submit task reached spark-submit) the token still identifies the
        run's driver, and this host is the only place that can be looked at.
        """
        ti = context["ti"]
        for task_id in self.submit_task_ids:
            recorded = ti.xcom_pull(task_ids=task_id, key=DRIVER_XCOM_KEY)
            if recorded:
                return DriverHandle.model_validate(recorded), True
        spec = load_pipeline_spec(self.spec_path)
        token = driver_token(spec.name, ti.dag_id, context["run_id"])
        return DriverHandle(pipeline=spec.name, token=token, submitted_at=dt.datetime.now(dt.UTC),
                            earliest_start=earliest_driver_start(context) or _ANY_TIME,
                            **this_host_identity().model_dump()), False

    def submit_states(self, context: Context) -> dict[str, str]:
        """The states of this run's submit tasks, as the scheduler has them."""
        ti = context["ti"]
        states = ti.get_task_states(dag_id=ti.dag_id, run_ids=[context["run_id"]], task_ids=self.submit_task_ids)
        return {task_id: str(state) for task_id, state in states.get(context["run_id"], {}).items()}

    def lease_wait_s(self, given_s: float) -> float:
        """``given_s``, or longer when the spec's lease ttl needs it (see :func:`.lease_expiry_wait_s`).

        Decided at run time from the spec: a DAG parsed once serves pipelines of any ttl. An
        unreadable spec leaves ``given_s`` (the lease cannot be read then either).
        """
        try:
            ttl_s = load_pipeline_spec(self.spec_path).driver_lease_ttl_s
        except Exception as err:  # the spec's own error surfaces where the spec is needed
            self.log.warning("The spec cannot be read, so the wait stays %.0fs: %s", given_s, err)
            return given_s
        wait_s = lease_expiry_wait_s(ttl_s, given_s)
        if wait_s > given_s:
            self.log.info("Waiting up to %.0fs, not %.0fs: the spec's driver_lease_ttl_s is %ss, and a crashed "
                          "driver's lease counts as alive until ttl + 10 s", wait_s, given_s, ttl_s)
        return wait_s

    def checkpoint(self) -> CheckpointReader | None:
        """The pipeline's checkpoint, where the driver's lease is; ``None`` when it cannot be opened (no evidence)."""
        try:
            location = load_pipeline_spec(self.spec_path).checkpoint_location
        except Exception as err:  # the lease is then no evidence; the other sources still count
            self.log.warning("The spec cannot be read, so the driver's lease is not read: %s", err)
            return None
        return lease_checkpoint(location, self.checkpoint_conn_id, self.log)


class StopPipelineDriverOperator(_DriverStep):
    """Stop this run's driver deliberately (the watcher found the stream unhealthy) and wait until it is gone.

    SIGTERM to the Python driver first (it stops its query after the running batch), SIGKILL to
    whatever is left after ``grace_period_s``. Skips when this run has no driver. Fails when the
    driver outlives the kill: recovery then does not run. Returns the observation (XCom).

    On another host than the driver's (its process table says nothing from here) no signal can
    reach it: the step waits up to ``grace_period_s`` for the driver's lease or the cluster
    manager to show it ended (a SIGKILLed driver's lease expires), and fails at once when the lease
    is renewed meanwhile, which only a running driver does (docs/design-notes.md, note 37).
    In YARN cluster deploy mode the step kills the run's application (found by its driver-token tag)
    through the ResourceManager's REST API first, then waits for positive evidence that it is gone.

    :param grace_period_s: how long the driver may take to finish its running batch. From another
        host the wait for its lease lasts at least the spec's ``driver_lease_ttl_s`` + 25 s
        (:func:`~airflow_provider_eos.core.driver_lease.lease_expiry_wait_s`).
    :param watch_task_id: the health sensor whose failure triggers this step; the step skips when
        that watch recorded an outcome other than UNHEALTHY or the driver's task failed
        (:func:`~airflow_provider_eos.core.health.stops_the_driver`): a watch that failed because it
        could not look (the broker unreachable for the health principal) must not stop a healthy
        stream. A watch marked failed by hand records none, and the stop goes ahead. ``None``: stop
        whenever the step runs.
    """

    def __init__(self, *, grace_period_s: float = 120, watch_task_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.grace_period_s = grace_period_s
        self.watch_task_id = watch_task_id

    def execute(self, context: Context) -> dict[str, Any]:
        if self.watch_task_id:
            outcome = context["ti"].xcom_pull(task_ids=self.watch_task_id, key=WATCH_OUTCOME_XCOM_KEY)
            if not stops_the_driver(outcome):
                raise AirflowSkipException(
                    f"{self.watch_task_id} ended with {outcome}, not unhealthy or driver_failed: "
                    "the watch did not find the stream unhealthy, so the driver is left running. Read "
                    f"{self.watch_task_id}'s log (e.g. the health principal cannot reach the broker)"
                )
        handle, recorded = self.driver_handle(context)
        before = observe(handle)
        if not recorded and not before.processes:
            raise AirflowSkipException(f"this run submitted no driver ({before.evidence}); nothing to stop")
        if before.liveness is Liveness.UNKNOWN and handle.deploy_mode == "cluster":
            return self._stop_in_cluster(handle, self.lease_wait_s(self.grace_period_s))
        if before.liveness is Liveness.UNKNOWN:
            wait_s = self.lease_wait_s(self.grace_period_s)
            self.log.info("The driver cannot be signalled from this host (%s); waiting up to %.0fs for its lease or "
                          "cluster manager to show it ended", before.evidence, wait_s)
            after = wait_until_gone_unless_renewed(handle, self.checkpoint(), wait_s)
            return _result_or_fail(after, f"the driver could not be stopped from {this_host_identity().host} "
                                          f"(it runs on {handle.host})")
        self.log.info("Stopping the driver of %s: %s", handle.pipeline, before.evidence)
        after = stop_driver(handle, grace_s=self.grace_period_s)
        return _result_or_fail(after, "the driver could not be stopped")

    def _stop_in_cluster(self, handle: DriverHandle, wait_s: float) -> dict[str, Any]:
        """Cluster deploy mode: kill the run's YARN application through the ResourceManager, then wait for GONE.

        The driver is the application master on a NodeManager, which no signal of this host reaches
        (:mod:`airflow_provider_eos.usecases.cluster_stop`). When nothing could be killed, the
        step waits as from another host, failing as soon as the lease is renewed.
        """
        kill = kill_yarn_application(handle)
        if kill.killed:
            listed = ", ".join(kill.killed)
            self.log.info("Killed YARN application %s through the ResourceManager %s; waiting up to %.0fs for "
                          "positive evidence that the driver is gone", listed, handle.manager_url, wait_s)
            after = wait_until_driver_gone(handle, self.checkpoint(), wait_s)
            return _result_or_fail(after, f"YARN application {listed} (the driver) was killed through "
                                          f"{handle.manager_url} but is not positively gone")
        self.log.warning("The driver runs in the cluster and its application could not be killed (%s); waiting up "
                         "to %.0fs for its lease or the ResourceManager to show it ended", kill.problem, wait_s)
        after = wait_until_gone_unless_renewed(handle, self.checkpoint(), wait_s)
        return _result_or_fail(after, f"the driver could not be stopped: {kill.problem}")


class ConfirmDriverGoneOperator(_DriverStep):
    """Gate of the recovery branch: go on only after the driver failed or was stopped, and is positively gone.

    Runs when every task on the running path is done. Skips its downstream (the recovery tasks)
    when no submit task failed and :param stopped_by: did not stop the driver: a pre-flight
    failure, or a failure that left the driver to finish cleanly, gives recovery nothing to do and
    must not fence anyone. Otherwise waits up to ``timeout_s`` for positive evidence that the
    driver is gone (this host's process table, the driver's lease in the checkpoint, the cluster
    manager's record: any of them alive means alive), and fails (recovery does not run) without
    it. Returns the observation (XCom), which the abort task passes on as its evidence.

    :param stopped_by: the task that stops the driver deliberately.
    :param timeout_s: how long to wait for positive evidence; at run time raised to the spec's
        ``driver_lease_ttl_s`` + 25 s when shorter, so a crashed driver's lease can expire within it
        (:func:`~airflow_provider_eos.core.driver_lease.lease_expiry_wait_s`).
    """

    def __init__(self, *, stopped_by: str, timeout_s: float = 120, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.stopped_by = stopped_by
        self.timeout_s = timeout_s

    def execute(self, context: Context) -> dict[str, Any]:
        states = self.submit_states(context)
        failed = sorted(task_id for task_id, state in states.items() if state == _FAILED)
        stopped = context["ti"].xcom_pull(task_ids=self.stopped_by) is not None
        if not failed and not stopped:
            raise AirflowSkipException(
                f"no task that ran the driver failed ({states}) and the driver was not stopped: "
                "nothing for recovery to do"
            )
        handle, _ = self.driver_handle(context)
        cause = f"{', '.join(failed)} failed" if failed else f"{self.stopped_by} stopped the driver"
        self.log.info("%s; waiting for positive evidence that the driver is gone", cause)
        seen = wait_until_driver_gone(handle, self.checkpoint(), self.lease_wait_s(self.timeout_s))
        return _result_or_fail(seen, "refusing to recover: the driver is not positively gone")


def _result_or_fail(seen: DriverObservation, failure: str) -> dict[str, Any]:
    if not seen.gone:
        raise AirflowFailException(
            f"{failure}: {seen.evidence}. Check the driver by hand; once it is gone, run eos_manual_recovery "
            "(action abort, then verify)."
        )
    return seen.model_dump(mode="json")
