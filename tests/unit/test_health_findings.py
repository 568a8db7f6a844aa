"""The health signals besides lag (core/health/findings.py): commit age, hanging, lingering, verification."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from airflow_provider_eos.core.health import HealthSample, HealthStatus, LagStatus, VerificationSample
from airflow_provider_eos.core.presentation import health_text
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.core.transactions import TxnState
from tests.support.health_samples import IN0, OUT0, PREFIX, SECOND, TH, finding, out, part, run, sample, txn

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
    # yet the records after it are unreadable for the job. The input hangs after 30s, not 10s.
    samples = [sample(t, [part(40, 40, hwm=60)]) for t in (0, 15, 30)]
    report = run(samples)
    assert report.partitions[0].status is LagStatus.OK
    assert gap_state(samples, IN0) == "hanging" and gap_state(samples[:2], IN0) == "pinned"
    (found,) = finding(report, "input_hanging")
    assert found.subject == f"{IN0} (input)" and "find-hanging" in found.detail and "eos abort" not in found.detail
    assert report.status is HealthStatus.UNHEALTHY and not finding(report, "hanging")


# -- lingering ---------------------------------------------------------------------------------


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
    assert ("Verification next step: Rewind" in health_text(report)) is (not ok)


def test_unsettled_or_missing_verification_is_healthy_with_a_note() -> None:
    unsettled = VerificationSample(verdict=None, ok=None, note="not settled: the group committed during each read")
    (found,) = finding(run([sample(0, [part(10, 10)], verification=unsettled)]), "verification")
    assert found.status is HealthStatus.HEALTHY and "not settled" in found.detail
    (found,) = finding(run([sample(0, [part(10, 10)], verification=None)]), "verification")
    assert found.status is HealthStatus.HEALTHY and found.detail == "not checked"
