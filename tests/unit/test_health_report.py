"""The health report (core/health/report.py, render.py), the thresholds and what a sensor makes of a report."""

from __future__ import annotations

import json

import pytest

from airflow_provider_eos.core.health import (
    Finding,
    HealthError,
    HealthReport,
    HealthStatus,
    HealthThresholds,
    RunInput,
    VerificationSample,
    WatchMode,
    WatchOutcome,
    ends_at_timeout,
    input_left_behind,
    no_input_waiting,
    stops_the_driver,
    watch_outcome,
)
from airflow_provider_eos.core.presentation import health_text
from airflow_provider_eos.core.topic_partition import TopicPartition
from tests.support.health_samples import (
    IN0,
    IN1,
    PREFIX,
    SECOND,
    T0,
    TH,
    lag_window,
    out,
    part,
    run,
    sample,
    spec,
    txn,
)

# -- overall, rendering, serialization of the report --------------------------------------------


def test_healthy_report_renders_every_table_and_serializes_to_json() -> None:
    dlq = out(3, 3, TopicPartition("dlq", 0), "dlq")
    samples = [sample(t, [part(100 + 10 * t, 100 + 10 * t, t)], outputs=[out(50, 50), dlq]) for t in (0, 5)]
    report = run(samples)
    assert report.status is HealthStatus.HEALTHY and report.is_healthy and report.problems == ()
    text = health_text(report)
    assert "Health of pipeline 'orders': HEALTHY" in text and "2 sample(s) over 5s" in text
    assert "Findings: none" in text
    assert "Input lag" in text and "orders-0" in text and "caught up" in text
    assert "orders-out-0  output" in text and "dlq-0" in text
    data = json.loads(json.dumps(report.to_dict()))
    assert data["status"] == "HEALTHY" and data["is_healthy"] is True and data["samples"] == 2
    assert data["partitions"][0]["status"] == "OK" and [g["role"] for g in data["gaps"]] == ["input", "output", "dlq"]
    assert data["thresholds"] == TH.model_dump(mode="json")


def test_unhealthy_report_lists_the_findings_worst_first() -> None:
    samples = lag_window([(0, 100, 40, 3), (20, 100, 40, 3), (40, 100, 40, 3)])
    report = run(samples)
    statuses = [f.status.severity for f in report.findings]
    assert statuses == sorted(statuses, reverse=True)
    text = health_text(report)
    assert "UNHEALTHY [lag] orders-0: STOP" in text
    assert "UNHEALTHY [commit_age]" not in text  # commits/ is fresh in these samples


def test_evaluate_needs_a_sample() -> None:
    with pytest.raises(HealthError, match="without a sample"):
        run([])


# -- thresholds --------------------------------------------------------------------------------


def test_thresholds_derive_from_trigger_interval_batch_budget_and_transaction_timeout() -> None:
    # Without a budget the transaction timeout bounds a batch: cycle = max(10s, 60s).
    assert HealthThresholds.from_spec(spec(trigger="10 seconds")) == HealthThresholds(
        warn_after_ms=120_000, stop_after_ms=240_000, hang_after_ms=60_000, lingering_after_ms=60_000)
    # A budget shorter than the interval: the interval is the cycle.
    derived = HealthThresholds.from_spec(spec(trigger="2 minutes", batch_budget_ms=30_000))
    assert (derived.warn_after_ms, derived.stop_after_ms) == (240_000, 480_000)
    derived = HealthThresholds.from_spec(spec(trigger="available_now", transaction_timeout_ms=20_000))
    assert (derived.warn_after_ms, derived.stop_after_ms, derived.hang_after_ms) == (40_000, 80_000, 20_000)


def test_threshold_overrides_are_validated() -> None:
    assert TH.with_overrides({"stop_after_ms": 5}).stop_after_ms == 5
    assert TH.with_overrides(None) is TH
    with pytest.raises(HealthError, match="unknown health threshold"):
        TH.with_overrides({"stop_after": 5})
    with pytest.raises(HealthError, match="stop_after_ms is 0"):
        TH.with_overrides({"stop_after_ms": 0})
    with pytest.raises(HealthError, match="min_samples"):
        TH.with_overrides({"min_samples": 1})
    with pytest.raises(HealthError, match="is True"):
        TH.with_overrides({"hang_after_ms": True})


# -- what a sensor makes of a report -----------------------------------------------------------


def test_wait_healthy_needs_a_commit_after_the_start_and_no_unhealthy_finding() -> None:
    fresh = run([sample(100, [part(100, 100)], commit_s=95)])
    assert watch_outcome(fresh, WatchMode.WAIT_HEALTHY, T0 + 90 * SECOND) is WatchOutcome.HEALTHY
    assert watch_outcome(fresh, WatchMode.WAIT_HEALTHY, T0 + 95 * SECOND) is None  # not newer than the start
    diverged = VerificationSample(verdict="DIVERGED", ok=False)
    behind = run([sample(100, [part(100, 100)], commit_s=95, verification=diverged)])
    assert watch_outcome(behind, WatchMode.WAIT_HEALTHY, T0) is None
    never = run([sample(100, [part(100, None)], last_committed=None)])
    assert watch_outcome(never, WatchMode.WAIT_HEALTHY, T0) is None


def test_wait_healthy_accepts_an_ended_run_that_had_no_input_and_no_other() -> None:
    # An available_now run with no new input commits no batch: its last commit is the previous run's.
    started = T0 + 90 * SECOND
    idle = run([sample(100, [part(100, 100), part(50, 50, tp=IN1)], commit_s=10)])
    assert idle.is_healthy and not idle.committed_since(started) and no_input_waiting(idle)
    assert watch_outcome(idle, WatchMode.WAIT_HEALTHY, started) is None  # the driver may not have run yet
    assert watch_outcome(idle, WatchMode.WAIT_HEALTHY, started, driver_succeeded=True) is WatchOutcome.HEALTHY
    # A run that left input behind must still commit a batch, even once its task succeeded.
    left_behind = run([sample(100, [part(100, 100), part(80, 50, tp=IN1)], commit_s=10)])
    assert not no_input_waiting(left_behind)
    assert watch_outcome(left_behind, WatchMode.WAIT_HEALTHY, started, driver_succeeded=True) is None
    # UNHEALTHY is never accepted (here a verification that is not ok).
    diverged = VerificationSample(verdict="DIVERGED", ok=False)
    broken = run([sample(100, [part(100, 100)], commit_s=10, verification=diverged)])
    assert watch_outcome(broken, WatchMode.WAIT_HEALTHY, started, driver_succeeded=True) is None
    # No input partition in the report says nothing about waiting input.
    assert not no_input_waiting(run([sample(100, [], commit_s=10)]))
    # A watch ends differently once its driver's task succeeded: see test_a_watch_ends_when_its_driver_stopped_cleanly.


def test_wait_healthy_judges_an_ended_run_by_its_own_input_not_by_input_that_arrived_later() -> None:
    # The run's input ended at 100 and 50 when it started; the group read both, and 30 records
    # arrived in orders-1 after the job ended. The live lag is 30: only the run's own ends say it is done.
    # The previous run's commit is 90 s old with input waiting: UNHEALTHY by commit age, which judges
    # a job that should be reading, not one that ended having read its input.
    started = T0 + 90 * SECOND
    ran = RunInput.of(started, {IN0: 100, IN1: 50})
    later = run([sample(100, [part(100, 100), part(80, 50, tp=IN1)], commit_s=10)])
    assert not no_input_waiting(later) and input_left_behind(later, ran) == ()
    assert {f.signal for f in later.findings if f.status is HealthStatus.UNHEALTHY} == {"commit_age"}
    assert watch_outcome(later, WatchMode.WAIT_HEALTHY, started, driver_succeeded=True) is None  # the old rule
    assert watch_outcome(later, WatchMode.WAIT_HEALTHY, started, driver_succeeded=True,
                         run_input=ran) is WatchOutcome.HEALTHY
    # Only once the driver task succeeded: while it runs, its input may still be in flight.
    assert watch_outcome(later, WatchMode.WAIT_HEALTHY, started, run_input=ran) is None
    # Input that waited when the run started and is still unread was left behind by the run.
    behind = RunInput.of(started, {IN0: 100, IN1: 60})
    assert input_left_behind(later, behind) == (IN1,)
    assert watch_outcome(later, WatchMode.WAIT_HEALTHY, started, driver_succeeded=True, run_input=behind) is None
    # Without a committed offset the group has read to the log start: an empty partition's end is read.
    never = run([sample(100, [part(20, None, log_start=0), part(0, None, tp=IN1, log_start=0)], commit_s=10)])
    assert input_left_behind(never, RunInput.of(started, {IN0: 0, IN1: 0})) == ()
    assert input_left_behind(never, RunInput.of(started, {IN0: 5, IN1: 0})) == (IN0,)
    # A partition of the run the report does not show is not known to be read; one created later is not the run's.
    gone = TopicPartition("gone", 0)
    assert input_left_behind(later, RunInput.of(started, {gone: 1})) == (gone,)
    assert input_left_behind(later, RunInput.of(started, {IN0: 100})) == ()
    # An UNHEALTHY finding about anything but progress is never accepted, with the run's input as without it.
    diverged = VerificationSample(verdict="DIVERGED", ok=False)
    broken = run([sample(100, [part(100, 100)], commit_s=10, verification=diverged)])
    assert watch_outcome(broken, WatchMode.WAIT_HEALTHY, started, driver_succeeded=True,
                         run_input=RunInput.of(started, {IN0: 100})) is None


def test_a_runs_input_survives_its_json_form() -> None:
    ran = RunInput.of(T0, {IN1: 50, IN0: 100})
    data = json.loads(json.dumps(ran.model_dump(mode="json")))
    assert data == {"read_at_ms": T0, "ends": [{"topic": "orders", "partition": 0, "end": 100},
                                               {"topic": "orders", "partition": 1, "end": 50}]}
    assert RunInput.model_validate(data) == ran


def test_watch_fails_on_unhealthy_only() -> None:
    degraded = run(lag_window([(0, 100, 40, 3), (5, 130, 60, 4), (10, 170, 80, 5)]))
    assert degraded.status is HealthStatus.DEGRADED
    assert watch_outcome(degraded, WatchMode.WATCH, T0) is None
    stopped = run(lag_window([(0, 100, 40, 3), (20, 100, 40, 3), (40, 100, 40, 3)]))
    assert watch_outcome(stopped, WatchMode.WATCH, T0) is WatchOutcome.UNHEALTHY


def test_a_watch_ends_when_its_driver_stopped_cleanly() -> None:
    """The driver's task succeeded (``eos stop``, SIGTERM: the driver exited 0): nothing left to watch."""
    started = T0 + 90 * SECOND
    idle = run([sample(100, [part(100, 100)], commit_s=10)])
    assert idle.is_healthy
    assert watch_outcome(idle, WatchMode.WATCH, started) is None  # the driver's task still runs: watch on
    assert watch_outcome(idle, WatchMode.WATCH, started, driver_succeeded=True) is WatchOutcome.DRIVER_STOPPED
    # Input arriving after the stop looks like a stopped job (STOP, commit age): the driver was stopped on
    # purpose, so it ends the watch the same way, not UNHEALTHY (which would stop, recover and fail the run).
    left = run(lag_window([(0, 100, 40, 3), (20, 100, 40, 3), (40, 100, 40, 3)]))
    assert watch_outcome(left, WatchMode.WATCH, T0) is WatchOutcome.UNHEALTHY
    assert watch_outcome(left, WatchMode.WATCH, T0, driver_succeeded=True) is WatchOutcome.DRIVER_STOPPED
    # What a stopped driver must not leave (a writer of the prefix lingering) still ends it UNHEALTHY: recovery looks.
    zombie = run([sample(100, [part(100, 100)], commit_s=10, transactions=[txn(f"{PREFIX}-7", age_s=30, at_s=100)])])
    assert watch_outcome(zombie, WatchMode.WATCH, started, driver_succeeded=True) is WatchOutcome.UNHEALTHY
    # An upstream producer's hanging input never counts against the job.
    pinned = run([sample(t, [part(40, 40, hwm=60)]) for t in (0, 15, 30)])
    assert watch_outcome(pinned, WatchMode.WATCH, T0, driver_succeeded=True) is WatchOutcome.DRIVER_STOPPED
    assert not stops_the_driver(WatchOutcome.DRIVER_STOPPED.value)


def test_only_a_watch_beside_its_drivers_task_has_no_deadline() -> None:
    assert not ends_at_timeout(WatchMode.WATCH, driver_watched=True)
    assert ends_at_timeout(WatchMode.WATCH, driver_watched=False)
    assert ends_at_timeout(WatchMode.WAIT_HEALTHY, driver_watched=True)  # supervise: gives up after its timeout
    assert ends_at_timeout(WatchMode.WAIT_HEALTHY, driver_watched=False)


def test_watch_gives_a_restarted_job_until_stop_after_to_commit_its_first_batch() -> None:
    # The pipeline was down for an hour with input waiting; the watch starts beside the new driver at
    # 3,600 s. The old run's last commit makes every report UNHEALTHY (commit_age) from the first sample.
    started = T0 + 3_600 * SECOND

    def report_at(t_s: float, commit_s: float) -> HealthReport:
        return run([sample(t_s, [part(5_000, 1_000, 7)], commit_s=commit_s, last_committed=7)])

    before_first_commit = report_at(3_601, commit_s=0)
    assert before_first_commit.status is HealthStatus.UNHEALTHY
    assert "[commit_age]" in health_text(before_first_commit)
    assert watch_outcome(before_first_commit, WatchMode.WATCH, started) is None
    # Still no commit once stop_after (40 s) has passed since the watch started: the new driver is stuck.
    stuck = report_at(3_600 + TH.stop_after_ms / SECOND, commit_s=0)
    assert watch_outcome(stuck, WatchMode.WATCH, started) is WatchOutcome.UNHEALTHY
    # A commit after the start ends the grace: the next UNHEALTHY report fails the watch at once.
    committed = run([sample(3_610, [part(5_000, 1_000, 7)], commit_s=3_605, last_committed=8),
                     sample(3_625, [part(5_000, 1_000, 7)], commit_s=3_605, last_committed=8),
                     sample(3_645, [part(5_000, 1_000, 7)], commit_s=3_605, last_committed=8)])
    assert committed.status is HealthStatus.UNHEALTHY
    assert watch_outcome(committed, WatchMode.WATCH, started) is WatchOutcome.UNHEALTHY
    # What no first commit clears (a zombie writer of the prefix lingering) fails the watch at once.
    zombie = run([sample(3_601, [part(5_000, 1_000, 7)], commit_s=0, last_committed=7,
                         transactions=[txn(f"{PREFIX}-7", age_s=30, at_s=3_601)])])
    assert {f.signal for f in zombie.findings if f.status is HealthStatus.UNHEALTHY} >= {"lingering", "commit_age"}
    assert watch_outcome(zombie, WatchMode.WATCH, started) is WatchOutcome.UNHEALTHY


def test_watch_mode_parsing() -> None:
    assert WatchMode.parse(" watch ") is WatchMode.WATCH
    assert WatchMode.parse(WatchMode.WAIT_HEALTHY) is WatchMode.WAIT_HEALTHY
    with pytest.raises(HealthError, match="wait_healthy"):
        WatchMode.parse("poke")


# -- the JSON form: the keys the CLI, XCom readers and the DAGs rely on ------------------------------


def test_report_json_keeps_its_keys_and_reads_back_as_the_same_report() -> None:
    dlq = out(3, 3, TopicPartition("dlq", 0), "dlq")
    report = run([
        sample(t, [part(lso, committed, t)], outputs=[out(5, 9), dlq], commit_s=t - 30,
               transactions=[txn(f"{PREFIX}-0", 11, at_s=t)])
        for t, lso, committed in ((100, 100, 50), (105, 110, 60), (110, 120, 70))
    ])
    data = json.loads(json.dumps(report.to_dict()))
    assert data == report.model_dump(mode="json")
    assert set(data) == {
        "pipeline", "status", "is_healthy", "evaluated_at", "evaluated_at_ms", "samples", "window_span_ms",
        "thresholds", "checkpoint_exists", "query_id", "last_committed", "last_commit_time", "last_commit_time_ms",
        "commit_age_ms", "total_lag", "partitions", "gaps", "transactions", "verification", "findings", "notes",
        "writers", "broker_protocol",
    }
    assert data["evaluated_at"] == "2023-11-14T22:15:10+00:00" and data["commit_age_ms"] == 30 * SECOND
    assert data["partitions"][0] == {
        "topic": "orders", "partition": 0, "status": "WARN", "committed": 70, "marker_batch": 110, "lso": 120,
        "lag": 50, "first_lag": 50, "samples": 3, "commits": 2,
        "detail": "the offset moves but the lag never decreased (50 -> 50)",
    }
    assert data["gaps"][1] == {
        "topic": "orders-out", "partition": 0, "role": "output", "lso": 5, "hwm": 9, "gap": 4, "state": "hanging",
        "pinned_for_ms": 10 * SECOND,
    }
    assert data["transactions"] == [{
        "transactional_id": f"{PREFIX}-0", "state": "Ongoing", "age_ms": 11 * SECOND, "limit_ms": 10 * SECOND,
        "lingering": True, "partitions": ["orders-out-0"],
    }]
    assert set(data["findings"][0]) == {"signal", "status", "subject", "detail"}
    assert data["verification"] == {"verdict": "IN_SYNC", "ok": True, "next_step": None, "note": None}
    assert HealthReport.model_validate(data) == report


def test_finding_and_verification_sample_take_their_fields_by_name_only() -> None:
    assert VerificationSample(verdict="DIVERGED", ok=False) == VerificationSample(verdict="DIVERGED", ok=False)
    with pytest.raises(TypeError, match="positional"):
        VerificationSample("DIVERGED", False)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional"):
        Finding("lag", HealthStatus.HEALTHY, "orders-0", "caught up")  # type: ignore[misc]


def test_thresholds_refuse_text_and_fractions_instead_of_converting_them() -> None:
    with pytest.raises(HealthError, match="warn_after_ms is '10'"):
        HealthThresholds(warn_after_ms="10", stop_after_ms=1, hang_after_ms=1, lingering_after_ms=1)
    with pytest.raises(HealthError, match=r"stop_after_ms is 1\.5"):
        HealthThresholds.model_validate({**TH.model_dump(), "stop_after_ms": 1.5})
    assert HealthThresholds.model_validate(TH.model_dump(mode="json")) == TH
