"""How long a stable read of the sink group's offsets waits for a pending transactional commit."""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.transactions.stable_read import STABLE_READ_MARGIN_MS, stable_read_timeout_ms


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
