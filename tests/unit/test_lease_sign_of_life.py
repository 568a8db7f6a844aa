"""The driver lease as a sign of life for the recovery gate (abort, rewind, align): pure judgement.

An idle processing-time stream commits no batch and opens no transaction, so only its renewed
lease says that it runs; the gate must count it like the other signs and let ``force`` override it.
"""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_eos.core import transactions as txn
from airflow_provider_eos.core.driver_lease import CLOCK_SKEW_MARGIN, DriverLease, lease_sign_of_life
from airflow_provider_eos.core.errors import UnsafeToActError

NOW = dt.datetime(2026, 12, 6, 12, 0, tzinfo=dt.UTC)
SKEW = CLOCK_SKEW_MARGIN.total_seconds()


def _lease(age_s: float, *, ttl_s: float = 30, released: bool = False) -> DriverLease:
    return DriverLease(token="eos-orders-run1", app_id="local-1700000000", host="worker-7", pid=4242,
                       started_at=NOW - dt.timedelta(hours=1), renewed_at=NOW - dt.timedelta(seconds=age_s),
                       ttl_s=ttl_s, sequence=12, released=released)


@pytest.mark.parametrize(("name", "lease", "alive"), [
    ("no lease", None, False),
    ("fresh", _lease(5), True),
    ("within ttl + skew", _lease(30 + SKEW - 1), True),
    ("renewed in the future (clock skew)", _lease(-20), True),
    ("expired by ttl + skew", _lease(30 + SKEW + 1), False),
    ("released at once", _lease(1, released=True), False),
    ("a long ttl is still within it", _lease(150, ttl_s=300), True),
])
def test_a_lease_is_a_sign_of_life_while_unreleased_and_within_ttl_plus_skew(name, lease, alive) -> None:
    sign = lease_sign_of_life(lease, observed_at=NOW)
    assert (sign is not None) is alive, name


def test_the_sign_names_the_lease_holder() -> None:
    sign = lease_sign_of_life(_lease(5), observed_at=NOW)
    assert sign is not None
    for value in ("eos-orders-run1", "worker-7", "4242", "local-1700000000", "2026-12-06T11:59:55+00:00", "ttl 30s"):
        assert value in sign, value


def _signs(lease: DriverLease | None) -> txn.LivenessSigns:
    sign = lease_sign_of_life(lease, observed_at=NOW)
    # The commit is an hour old and nothing is open: without the lease the job looks dead.
    return txn.LivenessSigns(last_commit_time=NOW - dt.timedelta(hours=1), now=NOW, transaction_timeout_ms=60_000,
                             quiet_period_ms=60_000, signs_of_life=() if sign is None else (sign,))


def test_the_gate_refuses_an_idle_job_with_a_fresh_lease_unless_forced() -> None:
    with pytest.raises(UnsafeToActError, match="worker-7") as refused:
        txn.check_safe_to_act("eos-orders", [], _signs(_lease(5)), action="rewind")
    assert "refusing to rewind the checkpoint" in str(refused.value)
    forced = txn.check_safe_to_act("eos-orders", [], _signs(_lease(5)), force=True, action="rewind")
    assert forced.forced and forced.may_act and "driver lease" in forced.reasons[0]


def test_the_gate_lets_a_released_or_expired_lease_through() -> None:
    for lease in (_lease(1, released=True), _lease(30 + SKEW + 1), None):
        check = txn.check_safe_to_act("eos-orders", [], _signs(lease), action="align")
        assert check.safe and not check.forced


def test_a_wait_for_a_drivers_end_outlasts_its_lease() -> None:
    from airflow_provider_eos.core.driver_lease import LEASE_WAIT_MARGIN, lease_expiry_wait_s

    # The reviewer's case: ttl 150 s, the DAG's fixed 120 s wait ended before a crashed driver's lease expired.
    assert lease_expiry_wait_s(150, 120) == 150 + SKEW + LEASE_WAIT_MARGIN.total_seconds()
    assert lease_expiry_wait_s(150, 120) > 150 + SKEW
    assert lease_expiry_wait_s(30, 120) == 120  # the given wait, when it is the longer one
    assert lease_expiry_wait_s(3, 1) == 3 + SKEW + LEASE_WAIT_MARGIN.total_seconds()
