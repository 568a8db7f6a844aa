"""Health rules (core/health.py): each lag rule and each signal, passing and failing; the window."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest

from airflow_provider_eos.core.health import (
    HealthError,
    HealthReport,
    HealthSample,
    HealthStatus,
    HealthThresholds,
    InputPartitionSample,
    LagStatus,
    LagWindow,
    OutputPartitionSample,
    VerificationSample,
    WatchMode,
    WatchOutcome,
    evaluate,
    watch_outcome,
)
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import Transaction, TxnState

T0 = 1_700_000_000_000
SECOND = 1_000
IN0 = TopicPartition("orders", 0)
IN1 = TopicPartition("orders", 1)
OUT0 = TopicPartition("orders-out", 0)
PREFIX = "orders-eos"
IN_SYNC = VerificationSample(verdict="IN_SYNC", ok=True)

# Small numbers keep the windows readable: warn after 20s, stop after 40s, hang/linger after 10s.
TH = HealthThresholds(
    warn_after_ms=20 * SECOND, stop_after_ms=40 * SECOND, hang_after_ms=10 * SECOND, lingering_after_ms=10 * SECOND
)


def sample(
    t_s: float,
    inputs: Sequence[InputPartitionSample] = (),
    *,
    outputs: Sequence[OutputPartitionSample] = (),
    commit_s: float | None = None,
    last_committed: int | None = 0,
    verification: VerificationSample | None = IN_SYNC,
    transactions: Sequence[Transaction] = (),
) -> HealthSample:
    """A sample at ``T0 + t_s`` seconds; ``commit_s`` is the newest commit's time (default: ``t_s``)."""
    commit_time = T0 + int((t_s if commit_s is None else commit_s) * SECOND)
    return HealthSample(
        taken_at_ms=T0 + int(t_s * SECOND),
        inputs=tuple(inputs),
        outputs=tuple(outputs),
        query_id="q1",
        last_committed=last_committed,
        last_commit_time_ms=None if last_committed is None else commit_time,
        verification=verification,
        transactions=tuple(transactions),
    )


def part(lso: int, committed: int | None, marker: int | None = None, *, tp: TopicPartition = IN0,
         hwm: int | None = None, log_start: int | None = 0) -> InputPartitionSample:
    return InputPartitionSample(
        tp=tp, lso=lso, hwm=lso if hwm is None else hwm, log_start=log_start, committed=committed,
        marker_batch=marker if marker is not None or committed is None else 0,
    )


def lag_window(points: Sequence[tuple[float, int, int | None, int | None]]) -> list[HealthSample]:
    """Samples of one partition from ``(t_s, lso, committed, marker)``; commits are always fresh,
    so only the lag rules can judge."""
    return [sample(t, [part(lso, committed, marker)]) for t, lso, committed, marker in points]


def run(samples: Sequence[HealthSample], thresholds: HealthThresholds = TH) -> HealthReport:
    return evaluate(LagWindow(samples), thresholds, pipeline="orders", transactional_id_prefix=PREFIX)


def lag_status(samples: Sequence[HealthSample]) -> LagStatus:
    (row,) = run(samples).partitions
    return row.status


def finding(report: HealthReport, signal: str) -> list:
    return [f for f in report.findings if f.signal == signal]


# -- lag computation ---------------------------------------------------------------------------


def test_lag_is_lso_minus_committed_clamped_at_zero_and_counts_from_the_log_start_without_a_commit() -> None:
    assert part(100, 60).lag == 40
    assert part(100, 120).lag == 0  # committed after the LSO was read: Burrow counts 0 too
    assert part(100, None, log_start=30).lag == 70
    assert part(100, None, log_start=None).lag == 100


# -- R1 OK: lag zero anywhere in the window ---------------------------------------------------


def test_r1_lag_zero_anywhere_in_the_window_is_ok_even_if_the_offset_then_stops() -> None:
    # The offset never moves and no commit happens for 75s (R3 would say STOP) ...
    samples = lag_window([(0, 50, 50, 1), (30, 80, 50, 1), (75, 90, 50, 1)])
    assert lag_status(samples) is LagStatus.OK  # ... but the lag was 0 at the start
    assert lag_status(samples[1:]) is LagStatus.STOP  # without that sample R1 no longer applies


# -- R2 REWIND ---------------------------------------------------------------------------------


def test_r2_offset_going_backwards_is_rewind() -> None:
    samples = lag_window([(0, 100, 60, 3), (5, 100, 40, 4), (10, 110, 45, 5)])
    report = run(samples)
    assert report.partitions[0].status is LagStatus.REWIND
    assert "60 to 40" in report.partitions[0].detail
    assert report.status is HealthStatus.UNHEALTHY


def test_r2_offset_disappearing_is_rewind() -> None:
    assert lag_status(lag_window([(0, 100, 60, 3), (5, 100, None, None)])) is LagStatus.REWIND


def test_r2_offsets_only_moving_forward_are_not_rewind() -> None:
    assert lag_status(lag_window([(0, 100, 40, 3), (5, 100, 60, 4), (10, 110, 80, 5)])) is LagStatus.OK


# -- R3 STOP -----------------------------------------------------------------------------------


def test_r3_no_commit_for_the_stop_threshold_while_input_waits_is_stop() -> None:
    samples = lag_window([(0, 100, 40, 3), (20, 100, 40, 3), (40, 120, 40, 3)])
    report = run(samples)
    row = report.partitions[0]
    assert row.status is LagStatus.STOP and row.commits == 0 and row.lag == 80
    assert "no commit for 40s" in row.detail
    assert report.status is HealthStatus.UNHEALTHY and not report.is_healthy


def test_r3_no_commit_for_less_than_the_stop_threshold_is_ok() -> None:
    row = run(lag_window([(0, 100, 40, 3), (20, 100, 40, 3), (39, 120, 40, 3)])).partitions[0]
    assert row.status is LagStatus.OK
    assert "no commit for 39s yet" in row.detail


def test_r3_a_commit_in_the_window_is_not_stop() -> None:
    # The marker advanced once (a commit), the offset did not: that is R4's case, not R3's.
    assert lag_status(lag_window([(0, 100, 40, 3), (20, 100, 40, 4), (40, 120, 40, 4)])) is LagStatus.STALL


# -- R4 STALL ----------------------------------------------------------------------------------


def test_r4_commits_that_do_not_move_the_offset_while_input_waits_are_stall() -> None:
    row = run(lag_window([(0, 100, 40, 3), (5, 100, 40, 4), (10, 110, 40, 5)])).partitions[0]
    assert row.status is LagStatus.STALL and row.commits == 2
    assert "offset stays at 40" in row.detail


def test_r4_needs_min_samples() -> None:
    row = run(lag_window([(0, 100, 40, 3), (5, 100, 40, 4)])).partitions[0]
    assert row.status is LagStatus.OK and "2 of 3 samples" in row.detail


def test_r4_commits_that_move_the_offset_are_not_stall() -> None:
    assert lag_status(lag_window([(0, 100, 40, 3), (5, 100, 50, 4), (10, 110, 90, 5)])) is LagStatus.OK


# -- R5 WARN -----------------------------------------------------------------------------------


def test_r5_moving_offset_with_lag_never_decreasing_is_warn() -> None:
    report = run(lag_window([(0, 100, 40, 3), (5, 130, 60, 4), (10, 170, 80, 5)]))
    row = report.partitions[0]
    assert row.status is LagStatus.WARN and (row.first_lag, row.lag) == (60, 90)
    assert report.status is HealthStatus.DEGRADED and report.is_healthy


def test_r5_constant_lag_with_moving_offset_is_warn_as_in_burrow() -> None:
    assert lag_status(lag_window([(0, 100, 40, 3), (5, 120, 60, 4), (10, 140, 80, 5)])) is LagStatus.WARN


def test_r5_lag_decreasing_once_is_ok() -> None:
    row = run(lag_window([(0, 100, 40, 3), (5, 130, 60, 4), (10, 140, 90, 5)])).partitions[0]
    assert row.status is LagStatus.OK and row.detail == "consuming"


def test_one_sample_with_lag_judges_no_trend() -> None:
    row = run(lag_window([(0, 100, 40, 3)])).partitions[0]
    assert row.status is LagStatus.OK and "1 of 3 samples" in row.detail


def test_partitions_are_judged_separately_and_the_worst_decides() -> None:
    samples = [
        sample(t, [part(100 + t, 40 + 6 * t, t, tp=IN0), part(100, 40, t, tp=IN1)]) for t in (0, 5, 10)
    ]
    report = run(samples)
    assert {row.tp: row.status for row in report.partitions} == {IN0: LagStatus.OK, IN1: LagStatus.STALL}
    assert report.status is HealthStatus.UNHEALTHY
    assert report.problems[0].subject == str(IN1)


def test_a_partition_gone_from_the_newest_sample_is_not_reported() -> None:
    samples = [sample(0, [part(10, 10, tp=IN0), part(10, 5, tp=IN1)]), sample(5, [part(10, 10, tp=IN0)])]
    assert [row.tp for row in run(samples).partitions] == [IN0]


# -- commit age --------------------------------------------------------------------------------


def commit_age(samples: Sequence[HealthSample]) -> tuple[HealthStatus, str]:
    (found,) = finding(run(samples), "commit_age")
    return found.status, found.detail


def test_commit_age_fresh_is_healthy() -> None:
    assert commit_age([sample(100, [part(100, 90)], commit_s=95)])[0] is HealthStatus.HEALTHY


def test_commit_age_over_warn_with_lag_is_degraded() -> None:
    status, detail = commit_age([sample(100, [part(100, 90)], commit_s=75, last_committed=7)])
    assert status is HealthStatus.DEGRADED
    assert "batch 7 committed 25s ago" in detail


def test_commit_age_over_stop_with_lag_is_unhealthy() -> None:
    status, detail = commit_age([sample(100, [part(100, 90)], commit_s=50)])
    assert status is HealthStatus.UNHEALTHY and "not making progress" in detail


def test_old_commit_without_lag_is_idle_and_healthy() -> None:
    status, detail = commit_age([sample(10_000, [part(100, 100)], commit_s=0)])
    assert status is HealthStatus.HEALTHY and "idle" in detail


def test_no_commit_yet_with_lag_is_degraded_then_unhealthy_once_the_window_spans_the_stop_threshold() -> None:
    first = sample(0, [part(100, None)], last_committed=None)
    assert commit_age([first])[0] is HealthStatus.DEGRADED
    assert commit_age([first, sample(40, [part(100, None)], last_committed=None)])[0] is HealthStatus.UNHEALTHY


def test_no_commit_yet_and_no_input_is_healthy() -> None:
    assert commit_age([sample(0, [part(0, None)], last_committed=None)])[0] is HealthStatus.HEALTHY


def test_commit_in_the_future_counts_as_age_zero() -> None:
    report = run([sample(10, [part(100, 90)], commit_s=12)])
    assert report.commit_age_ms == 0 and finding(report, "commit_age")[0].status is HealthStatus.HEALTHY


# -- hanging: LSO < HWM that does not move -----------------------------------------------------


def out(lso: int, hwm: int, tp: TopicPartition = OUT0, role: str = "output") -> OutputPartitionSample:
    return OutputPartitionSample(tp=tp, role=role, lso=lso, hwm=hwm)


def gap_state(samples: Sequence[HealthSample], tp: TopicPartition = OUT0) -> str:
    return next(g.state for g in run(samples).gaps if g.tp == tp)


def test_pinned_lso_unmoved_for_the_hang_threshold_is_hanging() -> None:
    samples = [sample(t, [part(10, 10)], outputs=[out(5, 9 + t)]) for t in (0, 5, 10)]
    report = run(samples)
    assert gap_state(samples) == "hanging"
    (found,) = finding(report, "hanging")
    assert found.status is HealthStatus.UNHEALTHY and found.subject == f"{OUT0} (output)"
    assert "LSO 5 < HWM 19" in found.detail and "eos abort" in found.detail


def test_pinned_for_less_than_the_hang_threshold_is_only_pinned() -> None:
    samples = [sample(t, [part(10, 10)], outputs=[out(5, 9)]) for t in (0, 5, 9)]
    report = run(samples)
    assert gap_state(samples) == "pinned" and not finding(report, "hanging")
    assert report.status is HealthStatus.HEALTHY
    assert report.gaps[-1].gap == 4 and report.gaps[-1].pinned_for_ms == 9 * SECOND


def test_pinned_lso_that_moves_is_not_hanging() -> None:
    samples = [sample(t, [part(10, 10)], outputs=[out(5 + t, 20 + t)]) for t in (0, 5, 10)]
    assert gap_state(samples) == "pinned"


def test_a_gap_that_closed_within_the_window_is_not_hanging() -> None:
    samples = [sample(0, outputs=[out(5, 9)]), sample(5, outputs=[out(9, 9)]), sample(10, outputs=[out(9, 12)])]
    assert gap_state(samples) == "pinned"


def test_a_single_pinned_sample_is_pinned_and_equal_offsets_are_ok() -> None:
    assert gap_state([sample(0, outputs=[out(5, 9)])]) == "pinned"
    assert gap_state([sample(0, outputs=[out(9, 9)])]) == "ok"


def test_hanging_input_partitions_are_reported_although_their_lag_reads_zero() -> None:
    # A foreign transaction pins the input's LSO at 40: the group is at the LSO, so lag is 0,
    # yet the records after it are unreadable for the job.
    samples = [sample(t, [part(40, 40, hwm=60)]) for t in (0, 5, 10)]
    report = run(samples)
    assert report.partitions[0].status is LagStatus.OK
    assert gap_state(samples, IN0) == "hanging"
    assert report.status is HealthStatus.UNHEALTHY


# -- lingering ---------------------------------------------------------------------------------


def txn(txn_id: str, age_s: float, *, at_s: float = 100, timeout_ms: int = 60_000,
        state: TxnState = TxnState.ONGOING) -> Transaction:
    return Transaction(
        transactional_id=txn_id, state=state, producer_id=7, producer_epoch=0,
        start_time_ms=T0 + int((at_s - age_s) * SECOND), timeout_ms=timeout_ms, partitions=frozenset({OUT0}),
    )


def test_ongoing_transaction_under_the_prefix_older_than_the_threshold_is_lingering() -> None:
    report = run([sample(100, [part(10, 10)], transactions=[txn(f"{PREFIX}-0", 11)])])
    (row,) = report.transactions
    assert row.lingering and row.limit_ms == TH.lingering_after_ms
    (found,) = finding(report, "lingering")
    assert found.status is HealthStatus.UNHEALTHY and found.subject == f"{PREFIX}-0" and "eos abort" in found.detail


def test_young_transaction_is_shown_but_not_lingering() -> None:
    report = run([sample(100, [part(10, 10)], transactions=[txn(f"{PREFIX}-0", 3)])])
    assert [t.lingering for t in report.transactions] == [False]
    assert not finding(report, "lingering") and report.status is HealthStatus.HEALTHY


def test_the_transactions_own_shorter_timeout_is_the_limit() -> None:
    report = run([sample(100, [part(10, 10)], transactions=[txn(f"{PREFIX}-0", 6, timeout_ms=5_000)])])
    assert report.transactions[0].limit_ms == 5_000 and report.transactions[0].lingering


def test_transactions_outside_the_prefix_and_completing_ones_are_ignored() -> None:
    report = run([
        sample(100, [part(10, 10)], transactions=[
            txn("someone-else-0", 500), txn(f"{PREFIX}-1", 500, state=TxnState.PREPARE_COMMIT),
        ])
    ])
    assert report.transactions == () and report.status is HealthStatus.HEALTHY


# -- verification ------------------------------------------------------------------------------


@pytest.mark.parametrize(("verdict", "ok", "expected"), [
    ("IN_SYNC", True, HealthStatus.HEALTHY),
    ("KAFKA_AHEAD_SAFE", True, HealthStatus.HEALTHY),
    ("KAFKA_BEHIND", False, HealthStatus.UNHEALTHY),
    ("NO_MARKER", False, HealthStatus.UNHEALTHY),
    ("DIVERGED", False, HealthStatus.UNHEALTHY),
])
def test_verification_verdict(verdict: str, ok: bool, expected: HealthStatus) -> None:
    result = VerificationSample(verdict=verdict, ok=ok, next_step="Rewind the checkpoint to batch 1")
    report = run([sample(0, [part(10, 10)], verification=result)])
    (found,) = finding(report, "verification")
    assert found.status is expected and report.status is expected
    assert verdict in found.detail
    assert ("Verification next step: Rewind" in report.render()) is (not ok)


def test_unsettled_or_missing_verification_is_healthy_with_a_note() -> None:
    unsettled = VerificationSample(verdict=None, ok=None, note="not settled: the group committed during each read")
    (found,) = finding(run([sample(0, [part(10, 10)], verification=unsettled)]), "verification")
    assert found.status is HealthStatus.HEALTHY and "not settled" in found.detail
    (found,) = finding(run([sample(0, [part(10, 10)], verification=None)]), "verification")
    assert found.status is HealthStatus.HEALTHY and found.detail == "not checked"


# -- overall, rendering, serialization of the report --------------------------------------------


def test_healthy_report_renders_every_table_and_serializes_to_json() -> None:
    dlq = out(3, 3, TopicPartition("dlq", 0), "dlq")
    samples = [sample(t, [part(100 + 10 * t, 100 + 10 * t, t)], outputs=[out(50, 50), dlq]) for t in (0, 5)]
    report = run(samples)
    assert report.status is HealthStatus.HEALTHY and report.is_healthy and report.problems == ()
    text = report.render()
    assert "Health of pipeline 'orders': HEALTHY" in text and "2 sample(s) over 5s" in text
    assert "Findings: none" in text
    assert "Input lag" in text and "orders-0" in text and "caught up" in text
    assert "orders-out-0  output" in text and "dlq-0" in text
    data = json.loads(json.dumps(report.to_dict()))
    assert data["status"] == "HEALTHY" and data["is_healthy"] is True and data["samples"] == 2
    assert data["partitions"][0]["status"] == "OK" and [g["role"] for g in data["gaps"]] == ["input", "output", "dlq"]
    assert data["thresholds"] == TH.to_dict()


def test_unhealthy_report_lists_the_findings_worst_first() -> None:
    samples = lag_window([(0, 100, 40, 3), (20, 100, 40, 3), (40, 100, 40, 3)])
    report = run(samples)
    statuses = [f.status.severity for f in report.findings]
    assert statuses == sorted(statuses, reverse=True)
    text = report.render()
    assert "UNHEALTHY [lag] orders-0: STOP" in text
    assert "UNHEALTHY [commit_age]" not in text  # commits/ is fresh in these samples


def test_evaluate_needs_a_sample() -> None:
    with pytest.raises(HealthError, match="without a sample"):
        run([])


# -- thresholds --------------------------------------------------------------------------------


def spec(**fields) -> PipelineSpec:
    return PipelineSpec(
        name="orders", kafka={"bootstrap.servers": "localhost:9092"}, input_topics=["orders"],
        output_topic="orders-out", group_id="orders-sink", transactional_id_prefix=PREFIX,
        checkpoint_location="/tmp/ckpt", **fields,
    )


def test_thresholds_derive_from_trigger_interval_batch_budget_and_transaction_timeout() -> None:
    # Without a budget the transaction timeout bounds a batch: cycle = max(10s, 60s).
    assert HealthThresholds.from_spec(spec(trigger="10 seconds")) == HealthThresholds(120_000, 240_000, 60_000, 60_000)
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


# -- the window --------------------------------------------------------------------------------


def rich_sample(t_s: float) -> HealthSample:
    return HealthSample(
        taken_at_ms=T0 + int(t_s * SECOND),
        inputs=(part(100, 40, 3), part(7, None, tp=TopicPartition("orders-eu", 0), log_start=2, hwm=9)),
        outputs=(out(5, 9), out(1, 1, TopicPartition("dlq-x", 0), "dlq")),
        checkpoint_exists=True,
        query_id="q1",
        last_committed=3,
        last_commit_time_ms=T0,
        verification=VerificationSample("KAFKA_BEHIND", False, "Rewind", None),
        transactions=(txn(f"{PREFIX}-0", 3),
                      Transaction("x", TxnState.EMPTY, 1, 2, None, 60_000, frozenset(), None)),
        notes=("topic 'x' does not exist",),
    )


def test_window_round_trips_through_json() -> None:
    window = LagWindow([rich_sample(0), rich_sample(5)], max_samples=4)
    data = json.loads(json.dumps(window.to_dict()))
    restored = LagWindow.from_dict(data)
    assert restored == window
    assert restored.samples[0].transactions[0].partitions == frozenset({OUT0})
    assert restored.max_samples == 4 and len(restored) == 2 and restored.span_ms == 5 * SECOND
    # Evaluation of the restored window is the same report.
    assert run(restored.samples) == run(window.samples)


def test_window_keeps_the_newest_samples() -> None:
    window = LagWindow([rich_sample(t) for t in range(5)], max_samples=3)
    assert [s.taken_at_ms for s in window.samples] == [T0 + t * SECOND for t in (2, 3, 4)]
    window.add(rich_sample(9))
    assert window.latest is not None and window.latest.taken_at_ms == T0 + 9 * SECOND and len(window) == 3
    smaller = LagWindow.from_dict(window.to_dict(), max_samples=2)
    assert [s.taken_at_ms for s in smaller.samples] == [T0 + 4 * SECOND, T0 + 9 * SECOND]


def test_window_refuses_samples_out_of_order_and_bad_sizes() -> None:
    window = LagWindow([rich_sample(5)])
    with pytest.raises(HealthError, match="older than the window's newest"):
        window.add(rich_sample(4))
    with pytest.raises(HealthError, match="at least one sample"):
        LagWindow(max_samples=0)


def test_window_from_dict_rejects_foreign_data_and_accepts_none() -> None:
    assert len(LagWindow.from_dict(None)) == 0
    with pytest.raises(HealthError, match="format 1"):
        LagWindow.from_dict({"samples": []})
    with pytest.raises(HealthError, match="no list of samples"):
        LagWindow.from_dict({"format": 1, "samples": "x"})
    with pytest.raises(HealthError, match="malformed"):
        LagWindow.from_dict({"format": 1, "samples": [{"inputs": []}]})


# -- what a sensor makes of a report -----------------------------------------------------------


def test_wait_healthy_needs_a_commit_after_the_start_and_no_unhealthy_finding() -> None:
    fresh = run([sample(100, [part(100, 100)], commit_s=95)])
    assert watch_outcome(fresh, WatchMode.WAIT_HEALTHY, T0 + 90 * SECOND) is WatchOutcome.HEALTHY
    assert watch_outcome(fresh, WatchMode.WAIT_HEALTHY, T0 + 95 * SECOND) is None  # not newer than the start
    behind = run([sample(100, [part(100, 100)], commit_s=95, verification=VerificationSample("DIVERGED", False))])
    assert watch_outcome(behind, WatchMode.WAIT_HEALTHY, T0) is None
    never = run([sample(100, [part(100, None)], last_committed=None)])
    assert watch_outcome(never, WatchMode.WAIT_HEALTHY, T0) is None


def test_watch_fails_on_unhealthy_only() -> None:
    degraded = run(lag_window([(0, 100, 40, 3), (5, 130, 60, 4), (10, 170, 80, 5)]))
    assert degraded.status is HealthStatus.DEGRADED
    assert watch_outcome(degraded, WatchMode.WATCH, T0) is None
    stopped = run(lag_window([(0, 100, 40, 3), (20, 100, 40, 3), (40, 100, 40, 3)]))
    assert watch_outcome(stopped, WatchMode.WATCH, T0) is WatchOutcome.UNHEALTHY


def test_watch_mode_parsing() -> None:
    assert WatchMode.parse(" watch ") is WatchMode.WATCH
    assert WatchMode.parse(WatchMode.WAIT_HEALTHY) is WatchMode.WAIT_HEALTHY
    with pytest.raises(HealthError, match="wait_healthy"):
        WatchMode.parse("poke")
