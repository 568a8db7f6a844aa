"""Never act on a live job: the signs of life and the guard that refuses."""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_eos.core.errors import UnsafeToActError
from airflow_provider_eos.core.transactions import (
    LivenessSigns,
    SafetyCheck,
    check_safe_to_act,
    default_quiet_period_ms,
    evaluate_safety,
    recent_commit_reason,
    young_transaction_reasons,
)
from tests.unit.transactions.builders import MINUTE, NOW, txn


def _safety(**overrides: object) -> SafetyCheck:
    args: dict = {
        "last_commit_time": NOW - dt.timedelta(hours=1),
        "now": NOW,
        "transaction_timeout_ms": 60_000,
        "quiet_period_ms": 120_000,
        "force": False,
    }
    args.update(overrides)
    transactions = args.pop("transactions", [])
    force = args.pop("force")
    args["signs_of_life"] = tuple(args.get("signs_of_life", ()))
    return evaluate_safety("pfx", transactions, LivenessSigns(**args), force=force)


def test_safe_when_the_last_commit_is_old_and_nothing_young_is_open() -> None:
    check = _safety(transactions=[txn("pfx-0", age_ms=10 * MINUTE)])  # overdue: the producer is gone
    assert check.safe and check.may_act and not check.forced


def test_safe_without_a_checkpoint_commit() -> None:
    assert _safety(last_commit_time=None).safe


def test_a_recent_commit_means_alive() -> None:
    check = _safety(last_commit_time=NOW - dt.timedelta(seconds=30))
    assert not check.safe and not check.may_act
    (reason,) = check.reasons
    assert "30s old" in reason and "2m00s" in reason


def test_a_commit_from_the_future_counts_as_recent() -> None:
    # Clock skew between hosts must not turn a live job into a dead one.
    assert not _safety(last_commit_time=NOW + dt.timedelta(minutes=5)).safe


def test_a_young_ongoing_transaction_under_the_prefix_means_alive() -> None:
    check = _safety(transactions=[txn("pfx-0", age_ms=5_000)])
    (reason,) = check.reasons
    assert "'pfx-0'" in reason and "5s old" in reason and "1m00s" in reason


def test_an_ongoing_transaction_of_unknown_age_counts_as_young() -> None:
    assert not _safety(transactions=[txn("pfx-0", age_ms=None)]).safe


def test_young_transactions_outside_the_prefix_do_not_count() -> None:
    assert _safety(transactions=[txn("other-0", age_ms=1_000), txn("pfx2-0", age_ms=1_000)]).safe


def test_check_safe_to_act_refuses_naming_why_and_how_to_force() -> None:
    with pytest.raises(UnsafeToActError) as raised:
        check_safe_to_act(
            "pfx",
            [txn("pfx-0", age_ms=5_000)],
            LivenessSigns(last_commit_time=NOW - dt.timedelta(seconds=10), now=NOW, transaction_timeout_ms=60_000,
                          quiet_period_ms=60_000),
        )
    text = str(raised.value)
    assert "pfx-0" in text and "10s old" in text and "--force" in text


def test_check_safe_to_act_forced_returns_the_overridden_reasons() -> None:
    check = check_safe_to_act(
        "pfx",
        [txn("pfx-0", age_ms=5_000)],
        LivenessSigns(last_commit_time=None, now=NOW, transaction_timeout_ms=60_000, quiet_period_ms=60_000),
        force=True,
    )
    assert check.forced and check.may_act and len(check.reasons) == 1


def test_check_safe_to_act_passes_when_safe() -> None:
    check = check_safe_to_act(
        "pfx", [], LivenessSigns(last_commit_time=None, now=NOW, transaction_timeout_ms=60_000, quiet_period_ms=60_000),
        force=True,
    )
    assert check.safe and not check.forced  # force only matters when something was overridden


def test_default_quiet_period() -> None:
    assert default_quiet_period_ms(60_000, None) == 60_000
    assert default_quiet_period_ms(60_000, 10_000) == 60_000
    assert default_quiet_period_ms(60_000, 45_000) == 90_000



def test_signs_of_life_found_elsewhere_count_like_the_ones_found_here() -> None:
    driver = "the cluster manager reports application app-1 RUNNING"
    check = _safety(signs_of_life=[driver])
    assert not check.safe and not check.may_act and check.reasons == (driver,)
    forced = _safety(signs_of_life=[driver], force=True)
    assert forced.forced and forced.may_act
    with pytest.raises(UnsafeToActError, match="app-1 RUNNING"):
        check_safe_to_act(
            "pfx",
            [],
            LivenessSigns(last_commit_time=None, now=NOW, transaction_timeout_ms=60_000, quiet_period_ms=60_000,
                          signs_of_life=(driver,)),
        )


def test_each_sign_of_life_is_its_own_small_function() -> None:
    assert recent_commit_reason(None, now=NOW, quiet_period_ms=60_000) is None
    assert recent_commit_reason(NOW - dt.timedelta(minutes=2), now=NOW, quiet_period_ms=60_000) is None
    reason = recent_commit_reason(NOW - dt.timedelta(seconds=20), now=NOW, quiet_period_ms=60_000)
    assert reason is not None and "20s old" in reason and "1m00s" in reason
    reasons = young_transaction_reasons(
        "pfx", [txn("pfx-0", age_ms=5_000), txn("pfx-1", age_ms=2 * MINUTE)], now=NOW, transaction_timeout_ms=60_000
    )
    assert len(reasons) == 1 and "'pfx-0'" in reasons[0]


def test_safety_check_json() -> None:
    check = _safety(last_commit_time=NOW - dt.timedelta(seconds=30), force=True)
    data = check.to_dict()
    assert data == {"safe": False, "forced": True, "may_act": True, "reasons": list(check.reasons), "driver_gone": None}
    assert SafetyCheck.model_validate(data) == check


def test_positive_evidence_that_the_driver_is_gone_explains_the_signs_of_life_without_force() -> None:
    from airflow_provider_eos.core.transactions import check_safe_to_act, evaluate_safety

    now = dt.datetime(2026, 11, 23, 12, 0, tzinfo=dt.UTC)
    args = {"last_commit_time": now - dt.timedelta(seconds=5), "now": now, "transaction_timeout_ms": 60_000,
            "quiet_period_ms": 60_000}
    evidence = "no process on 'w1' carries EOS_DRIVER_TOKEN=eos-p-0123456789abcdef0123"
    alive = evaluate_safety("p", [], LivenessSigns(**args))
    assert alive.reasons and not alive.may_act
    gone = check_safe_to_act("p", [], LivenessSigns(driver_gone=evidence, **args))
    assert gone.may_act and not gone.forced and gone.driver_gone == evidence
    assert gone.model_dump(mode="json")["driver_gone"] == evidence
    # With nothing to explain, the evidence is not recorded: the check was safe on its own.
    quiet = evaluate_safety("p", [], LivenessSigns(driver_gone=evidence, **{**args, "last_commit_time": None}))
    assert quiet.safe and quiet.driver_gone is None
