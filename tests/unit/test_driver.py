"""The driver token and the judgement of whether a driver is gone (pure)."""

from __future__ import annotations

import datetime as dt

from airflow_provider_eos.core.driver import (
    DriverHandle,
    DriverProcess,
    HostIdentity,
    Liveness,
    ProcessTable,
    UnreadableProcess,
    driver_token,
    is_driver_token,
    observe_driver,
    run_driver_token,
    untagged_driver_token,
)

NOW = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)
BOOT = "bd73a6b6-89bf-466e-971e-d1dc45c50c0d"
WORKER_1 = HostIdentity(host="worker-1", boot_id=BOOT, pid_namespace=4026531836, uid=50000)
NOTHING = ProcessTable()


def _handle(**overrides: object) -> DriverHandle:
    values = {"pipeline": "orders", "token": driver_token("orders", "eos_pipeline__orders", "manual__1"),
              "submitted_at": NOW, **WORKER_1.model_dump()}
    return DriverHandle(**{**values, **overrides})


def test_token_is_stable_per_run_and_differs_between_runs_dags_and_pipelines() -> None:
    token = driver_token("Orders Enrich", "eos_pipeline__orders", "manual__2026-11-23T12:00:00+00:00")
    assert token == driver_token("Orders Enrich", "eos_pipeline__orders", "manual__2026-11-23T12:00:00+00:00")
    assert is_driver_token(token) and token.startswith("eos-orders-enrich-")
    others = {
        driver_token("Orders Enrich", "eos_pipeline__orders", "manual__2026-11-23T12:00:01+00:00"),
        driver_token("Orders Enrich", "other_dag", "manual__2026-11-23T12:00:00+00:00"),
        driver_token("payments", "eos_pipeline__orders", "manual__2026-11-23T12:00:00+00:00"),
    }
    assert token not in others and len(others) == 3


def test_a_driver_without_a_token_names_itself_apart_from_eos_run_and_from_any_other_start() -> None:
    token = untagged_driver_token("orders", "worker-1", 4242, NOW)
    assert is_driver_token(token) and token.startswith("eos-orders-")
    assert token == untagged_driver_token("orders", "worker-1", 4242, NOW)
    others = {
        run_driver_token("orders", "worker-1", 4242, NOW),  # `eos run` on the same host, pid and time
        untagged_driver_token("orders", "worker-1", 4243, NOW),
        untagged_driver_token("orders", "worker-2", 4242, NOW),
        untagged_driver_token("orders", "worker-1", 4242, NOW + dt.timedelta(seconds=1)),
    }
    assert token not in others and len(others) == 4


def test_no_process_with_the_token_on_the_drivers_host_is_positive_evidence_of_gone() -> None:
    seen = observe_driver(_handle(), here=WORKER_1, table=NOTHING, observed_at=NOW)
    assert seen.gone and seen.liveness is Liveness.GONE
    assert "worker-1" in seen.evidence and _handle().token in seen.evidence


def test_a_process_with_the_token_means_alive_and_is_listed() -> None:
    process = DriverProcess(pid=4242, command="/venv/bin/python /x/eos_job.py --spec s.yaml")
    seen = observe_driver(_handle(), here=WORKER_1, table=ProcessTable(carrying=(process,)), observed_at=NOW)
    assert seen.liveness is Liveness.ALIVE and not seen.gone
    assert "pid 4242" in seen.evidence and seen.processes == (process,)


def test_another_host_an_unreadable_process_table_or_cluster_mode_give_no_evidence() -> None:
    elsewhere = observe_driver(_handle(), here=WORKER_1.model_copy(update={"host": "worker-2"}), table=NOTHING,
                               observed_at=NOW)
    unreadable = observe_driver(_handle(), here=WORKER_1, table=None, observed_at=NOW)
    cluster = observe_driver(_handle(deploy_mode="cluster", master="yarn"), here=WORKER_1, table=NOTHING,
                             observed_at=NOW)
    for seen in (elsewhere, unreadable, cluster):
        assert seen.liveness is Liveness.UNKNOWN and not seen.gone
    assert "'worker-1'" in elsewhere.evidence and "'worker-2'" in elsewhere.evidence
    assert "cluster manager" in cluster.evidence


def test_only_the_python_driver_is_recognised_as_the_driver() -> None:
    python = "/v/bin/python3 /p/spark_jobs/eos_job.py --spec s"
    assert DriverProcess(pid=1, command=python).is_python_driver
    jvm = "/usr/lib/jvm/java-17/bin/java -cp x org.apache.spark.deploy.SparkSubmit /p/eos_job.py --spec s"
    assert not DriverProcess(pid=2, command=jvm).is_python_driver
    assert not DriverProcess(pid=3, command="python -m pyspark.daemon").is_python_driver
    # While spark-submit starts, its launcher scripts carry the application on their command line.
    launcher = "bash /v/pyspark/bin/spark-class org.apache.spark.deploy.SparkSubmit /p/jobs/eos_job.py --spec s"
    assert not DriverProcess(pid=4, command=launcher).is_python_driver


def test_handle_round_trips_through_json_as_xcom_stores_it() -> None:
    handle = _handle()
    assert DriverHandle.model_validate(handle.model_dump(mode="json")) == handle


def test_another_boot_pid_namespace_or_user_under_the_same_host_name_gives_no_evidence() -> None:
    """Containers share host names, a rebooted or cloned machine keeps its own: the name alone proves nothing."""
    for differs, value in (("boot_id", "0a1b2c3d-0000-4000-8000-000000000000"), ("pid_namespace", 4026532999),
                           ("uid", 0)):
        seen = observe_driver(_handle(), here=WORKER_1.model_copy(update={differs: value}), table=NOTHING,
                              observed_at=NOW)
        assert seen.liveness is Liveness.UNKNOWN, differs
        assert str(value) in seen.evidence and str(getattr(WORKER_1, differs)) in seen.evidence, seen.evidence
    # An observer that could not read its own identity cannot show it is the same either.
    blind = observe_driver(_handle(), here=HostIdentity(host="worker-1"), table=NOTHING, observed_at=NOW)
    assert blind.liveness is Liveness.UNKNOWN


def test_a_handle_recorded_before_the_identity_was_is_judged_by_its_host_name_as_then() -> None:
    old = {"pipeline": "orders", "token": _handle().token, "host": "worker-1", "master": "local[2]",
           "deploy_mode": "client", "submitted_at": NOW.isoformat()}
    handle = DriverHandle.model_validate(old)
    assert handle.identity == HostIdentity(host="worker-1")
    assert observe_driver(handle, here=WORKER_1, table=NOTHING, observed_at=NOW).gone
    elsewhere = observe_driver(handle, here=WORKER_1.model_copy(update={"host": "worker-2"}), table=NOTHING,
                               observed_at=NOW)
    assert elsewhere.liveness is Liveness.UNKNOWN


def test_a_process_of_the_drivers_user_that_cannot_be_read_may_be_the_driver() -> None:
    denied = UnreadableProcess(pid=4242, uids=(50000, 50000, 50000, 50000), reason="PermissionError")
    seen = observe_driver(_handle(), here=WORKER_1, table=ProcessTable(unreadable=(denied,)), observed_at=NOW)
    assert seen.liveness is Liveness.UNKNOWN and not seen.gone
    assert "pid 4242 (PermissionError)" in seen.evidence and "user 50000" in seen.evidence
    # Owner unknown too (hidepid hides status as well): it may be the driver's.
    hidden = UnreadableProcess(pid=4243, reason="PermissionError")
    assert observe_driver(_handle(), here=WORKER_1, table=ProcessTable(unreadable=(hidden,)),
                          observed_at=NOW).liveness is Liveness.UNKNOWN


def test_another_users_unreadable_process_is_not_the_drivers_unless_the_handle_does_not_name_the_user() -> None:
    daemon = UnreadableProcess(pid=4100, uids=(0, 0, 0, 0), started_at=NOW, reason="PermissionError")
    table = ProcessTable(unreadable=(daemon,))
    assert observe_driver(_handle(), here=WORKER_1, table=table, observed_at=NOW).gone
    # An old handle does not say whose the driver is: any unreadable process may be it.
    old = _handle(uid=None, boot_id=None, pid_namespace=None)
    assert observe_driver(old, here=WORKER_1, table=table, observed_at=NOW).liveness is Liveness.UNKNOWN


def test_an_unreadable_process_older_than_the_run_is_not_its_driver() -> None:
    """``/proc/1`` and the kernel's threads: some sandboxes deny even root their environment."""
    run_after = NOW - dt.timedelta(hours=1)
    init = UnreadableProcess(pid=1, uids=(50000,), started_at=run_after - dt.timedelta(days=3),
                             reason="PermissionError")
    handle = _handle(earliest_start=run_after)
    assert observe_driver(handle, here=WORKER_1, table=ProcessTable(unreadable=(init,)), observed_at=NOW).gone
    # A previous attempt's driver started after the run did, though before this attempt's submission: it may be it.
    previous = UnreadableProcess(pid=4300, uids=(50000,), started_at=run_after + dt.timedelta(minutes=5),
                                 reason="PermissionError")
    seen = observe_driver(handle, here=WORKER_1, table=ProcessTable(unreadable=(init, previous)), observed_at=NOW)
    assert seen.liveness is Liveness.UNKNOWN and "pid 4300" in seen.evidence and "pid 1 " not in seen.evidence
    # Without the run's start, the submission bounds it (handles recorded before it was).
    assert observe_driver(_handle(submitted_at=run_after), here=WORKER_1, table=ProcessTable(unreadable=(init,)),
                          observed_at=NOW).gone


def test_a_stop_scoped_to_a_process_group_sees_only_that_groups_processes() -> None:
    ours = DriverProcess(pid=4242, command="python eos_job.py", pgid=4240)
    retry = DriverProcess(pid=5252, command="python eos_job.py", pgid=5250)
    table = ProcessTable(carrying=(ours, retry))
    scoped = observe_driver(_handle(), here=WORKER_1, table=table, observed_at=NOW, group=4240)
    assert scoped.liveness is Liveness.ALIVE and scoped.processes == (ours,) and "process group 4240" in scoped.evidence
    only_retry = ProcessTable(carrying=(retry,))
    assert observe_driver(_handle(), here=WORKER_1, table=only_retry, observed_at=NOW, group=4240).gone
