"""How long a stable read of the sink group's offsets waits for a pending transactional commit."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.transactions.stable_read import (
    OBSERVER_STABLE_WAIT_MS,
    STABLE_READ_MARGIN_MS,
    observer_stable_read_timeout_ms,
    stable_read_timeout_ms,
)


@pytest.mark.parametrize("timeout_ms", [1, 60_000, 900_000])
def test_the_wait_is_the_transaction_timeout_plus_the_brokers_margin(timeout_ms: int) -> None:
    # A transaction open when the read starts ends by its timeout, and the broker's next timed-out check aborts it.
    assert stable_read_timeout_ms(timeout_ms) == timeout_ms + STABLE_READ_MARGIN_MS
    assert STABLE_READ_MARGIN_MS >= 10_000 + 10_000  # the broker's default check interval, then its markers


def test_the_default_specs_wait_outlasts_its_transactions() -> None:
    # The old fixed 60 s bound gave up before the broker aborted a default spec's (60 s) zombie transaction.
    assert stable_read_timeout_ms(60_000) > 60_000 + 10_000


@pytest.mark.parametrize("timeout_ms", [0, -5])
def test_a_timeout_that_is_not_positive_is_refused_naming_it(timeout_ms: int) -> None:
    with pytest.raises(ValueError, match=f"transaction_timeout_ms is {timeout_ms}"):
        stable_read_timeout_ms(timeout_ms)


@pytest.mark.parametrize(("timeout_ms", "expected"), [(1, 30_001), (60_000, 60_000), (900_000, 60_000)])
def test_an_observers_wait_follows_the_rule_up_to_a_minute(timeout_ms: int, expected: int) -> None:
    # A health sample or pre-flight's facts report a commit pending this long rather than hang a whole timeout.
    assert observer_stable_read_timeout_ms(timeout_ms) == expected == min(stable_read_timeout_ms(timeout_ms),
                                                                           OBSERVER_STABLE_WAIT_MS)
