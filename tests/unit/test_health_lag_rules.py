"""Lag per input partition (core/health/lag_rules.py): each Burrow-style rule, through evaluate and on its own."""

from __future__ import annotations

from collections.abc import Sequence

from airflow_provider_eos.core.health import HealthSample, HealthStatus, LagStatus
from airflow_provider_eos.core.health.lag_rules import (
    LAG_RULES,
    PartitionHistory,
    batch_advancing,
    between_runs,
    caught_up,
    consuming,
    judge_partition,
    lagging,
    rewound,
    stalled,
    stopped,
)
from tests.support.health_samples import IN0, IN1, TH, lag_status, lag_window, part, run, sample


def history(points: Sequence[tuple[float, int, int | None, int | None]]) -> PartitionHistory:
    """IN0's history from ``(t_s, lso, committed, marker)`` points."""
    samples: list[HealthSample] = lag_window(points)
    return PartitionHistory.of(IN0, [(s.taken_at_ms, s.inputs[0]) for s in samples])


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


# -- each rule on its own ----------------------------------------------------------------------


def test_rules_are_tried_in_burrows_order() -> None:
    # between_runs and batch_advancing are this package's: an available_now pipeline between runs is not
    # expected to commit, and a batch longer than the window commits at its end only.
    assert (caught_up, rewound, between_runs, batch_advancing, stopped, stalled, lagging) == LAG_RULES


def test_between_runs_applies_only_when_no_run_of_an_available_now_pipeline_is_active() -> None:
    found = history([(0, 100, 40, 3), (60, 110, 40, 3)])
    waiting = PartitionHistory.of(IN0, list(zip(found.times, found.points, strict=True)), run_active=False)
    assert between_runs(waiting, TH) == (LagStatus.OK, "idle between runs: 70 record(s) wait for the next run")
    for active in (True, None):
        assert between_runs(PartitionHistory.of(IN0, [], run_active=active), TH) is None
    # The same window with a run active (or a continuously running pipeline) is STOP.
    assert stopped(waiting, TH) is not None


def test_caught_up_applies_only_with_a_zero_lag() -> None:
    assert caught_up(history([(0, 100, 40, 3), (5, 110, 60, 4)]), TH) is None
    assert caught_up(history([(0, 100, 100, 3), (5, 110, 60, 4)]), TH) == (LagStatus.OK, "lag was 0 within the window")
    assert caught_up(history([(0, 100, 40, 3), (5, 110, 110, 4)]), TH) == (LagStatus.OK, "caught up")


def test_rewound_applies_only_to_an_offset_going_back_or_away() -> None:
    assert rewound(history([(0, 100, 40, 3), (5, 110, 60, 4)]), TH) is None
    assert rewound(history([(0, 100, 40, 3)]), TH) is None
    found = rewound(history([(0, 100, 60, 3), (5, 110, None, None)]), TH)
    assert found is not None and found.status is LagStatus.REWIND and "60 to nothing" in found.detail


def test_stopped_needs_two_samples_no_commit_and_the_stop_span() -> None:
    assert stopped(history([(0, 100, 40, 3)]), TH) is None
    assert stopped(history([(0, 100, 40, 3), (39, 100, 40, 3)]), TH) is None
    assert stopped(history([(0, 100, 40, 3), (40, 100, 40, 4)]), TH) is None  # a commit (new marker)
    found = stopped(history([(0, 100, 40, 3), (40, 100, 40, 3)]), TH)
    assert found == (LagStatus.STOP, "no commit for 40s (stop after 40s) while 60 record(s) wait")


def test_stalled_needs_min_samples_a_commit_and_an_unmoving_offset() -> None:
    assert stalled(history([(0, 100, 40, 3), (5, 100, 40, 4)]), TH) is None  # 2 of 3 samples
    assert stalled(history([(0, 100, 40, 3), (5, 100, 40, 3), (10, 100, 40, 3)]), TH) is None  # no commit
    assert stalled(history([(0, 100, 40, 3), (5, 100, 50, 4), (10, 100, 50, 5)]), TH) is None  # moved
    found = stalled(history([(0, 100, 40, 3), (5, 100, 40, 4), (10, 100, 40, 5)]), TH)
    assert found is not None and found.status is LagStatus.STALL and "2 commit(s)" in found.detail


def test_lagging_needs_a_moving_offset_and_a_lag_that_never_decreases() -> None:
    assert lagging(history([(0, 100, 40, 3), (5, 130, 60, 4)]), TH) is None  # 2 of 3 samples
    assert lagging(history([(0, 100, 40, 3), (5, 130, 60, 4), (10, 140, 90, 5)]), TH) is None  # decreased
    found = lagging(history([(0, 100, 40, 3), (5, 130, 60, 4), (10, 170, 80, 5)]), TH)
    assert found == (LagStatus.WARN, "the offset moves but the lag never decreased (60 -> 90)")


def test_consuming_says_what_the_window_could_not_judge_yet() -> None:
    assert consuming(history([(0, 100, 40, 3), (5, 100, 40, 3)]), TH).detail.startswith("no commit for 5s yet")
    assert consuming(history([(0, 100, 40, 3)]), TH).detail == "1 of 3 samples: trend not judged yet"
    assert consuming(history([(0, 100, 40, 3), (5, 130, 60, 4), (10, 140, 90, 5)]), TH).detail == "consuming"


def test_the_first_rule_that_applies_decides() -> None:
    # The offset went back (REWIND), but the lag was 0 first: caught_up comes first and says OK.
    row = judge_partition(history([(0, 100, 100, 3), (5, 110, 50, 4)]), TH)
    assert row.status is LagStatus.OK and row.detail == "lag was 0 within the window"
    assert (row.lag, row.first_lag, row.samples, row.commits, row.committed) == (60, 0, 2, 1, 50)
