"""The retry policy: retries what it should, gives up with a typed error that says what and how long."""

from __future__ import annotations

import logging
import time

import pytest

from airflow_provider_eos.core.errors import EosError, RetryExhaustedError
from airflow_provider_eos.core.retry import RetryPolicy, Settled


class Loading(Exception):
    """Stands for "the remote side is not ready yet"."""


class Broken(Exception):
    """Stands for an error no retry fixes."""


def loading(exc: BaseException) -> bool:
    return isinstance(exc, Loading)


class Flaky:
    """Fails with ``errors`` in turn, then returns ``value``; counts its calls."""

    def __init__(self, *errors: BaseException, value: str = "done") -> None:
        self.errors, self.value, self.calls = list(errors), value, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.value


def no_sleep(pauses: list[float]):
    return pauses.append


def test_retries_a_retriable_error_then_succeeds() -> None:
    policy = RetryPolicy("the coordinator", retriable=loading, attempts=5, first_delay_s=0.1, max_delay_s=0.3)
    call, pauses = Flaky(Loading("1"), Loading("2"), Loading("3")), []

    assert policy.call(call, what="read offsets", sleep=no_sleep(pauses)) == "done"
    assert call.calls == 4
    # Exponential from the first delay, capped at the maximum.
    assert pauses == pytest.approx([0.1, 0.2, 0.3])


def test_a_non_retriable_error_escapes_at_once_unchanged() -> None:
    policy = RetryPolicy("the coordinator", retriable=loading, attempts=5)
    call, pauses = Flaky(Broken("no ACL")), []

    with pytest.raises(Broken, match="no ACL"):
        policy.call(call, what="read offsets", sleep=no_sleep(pauses))
    assert call.calls == 1 and pauses == []


def test_gives_up_after_the_attempts_with_the_last_error_wrapped() -> None:
    policy = RetryPolicy("the group coordinator to load", retriable=loading, attempts=3, first_delay_s=0,
                         max_delay_s=0, fix="check the brokers")
    call = Flaky(Loading("first"), Loading("second"), Loading("third"), Loading("never reached"))

    with pytest.raises(RetryExhaustedError) as raised:
        policy.call(call, what="read offsets of group 'g'")
    error = raised.value
    assert isinstance(error, EosError)
    assert call.calls == 3 and error.attempts == 3
    assert error.what == "read offsets of group 'g'"
    assert isinstance(error.last_error, Loading) and str(error.last_error) == "third"
    assert error.__cause__ is error.last_error
    assert error.message.startswith("read offsets of group 'g': gave up waiting for the group coordinator to load "
                                    "after 3 attempt(s) over ")
    assert "at most 3 attempts" in error.message and "the last error: third" in error.message
    assert error.fix == "check the brokers"


def test_gives_up_when_the_time_runs_out_and_says_how_long() -> None:
    policy = RetryPolicy("the coordinator", retriable=loading, timeout_s=0.5, first_delay_s=0.1, max_delay_s=0.1)
    call = Flaky(*(Loading(str(n)) for n in range(100)))

    started = time.monotonic()
    with pytest.raises(RetryExhaustedError) as raised:
        policy.call(call, what="describe group 'g'")
    took = time.monotonic() - started

    # No attempt starts past the timeout: the last one starts before 0.5 s, and no pause is wasted after it.
    assert 0.3 <= took < 0.7, took
    assert 3 <= call.calls <= 6
    assert raised.value.attempts == call.calls
    assert 0.3 <= raised.value.elapsed_s < 0.6
    assert "up to 0.5 s, every 0.1 s" in raised.value.message
    assert f"over {raised.value.elapsed_s:.1f} s" in raised.value.message


def test_bounded_replaces_only_the_bounds_it_is_given() -> None:
    policy = RetryPolicy("x", retriable=loading, timeout_s=30, first_delay_s=0.2, max_delay_s=2.0)

    short = policy.bounded(timeout_s=1.5)
    assert (short.timeout_s, short.attempts, short.first_delay_s, short.retriable) == (1.5, None, 0.2, loading)
    assert policy.bounded().timeout_s == 30
    assert policy.bounded(attempts=2).describe() == "up to 30 s, at most 2 attempts, backoff 0.2-2 s"


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [({}, "needs timeout_s or attempts"), ({"attempts": 0}, "attempts is 0"),
     ({"attempts": 2, "first_delay_s": 3.0, "max_delay_s": 1.0}, "delays 3.0..1.0")],
)
def test_a_policy_must_give_up_some_time(kwargs: dict, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        RetryPolicy("x", **kwargs)


def test_each_retry_is_logged_at_the_policy_level(caplog: pytest.LogCaptureFixture) -> None:
    policy = RetryPolicy("the commit", retriable=loading, attempts=2, first_delay_s=0, max_delay_s=0,
                         log_level=logging.WARNING)
    with caplog.at_level(logging.WARNING, logger="airflow_provider_eos.core.retry"):
        policy.call(Flaky(Loading("leader moved")), what="commit batch 3")
    assert [r.getMessage() for r in caplog.records] == [
        "commit batch 3: waiting for the commit (attempt 1: leader moved); next attempt in 0.0 s"
    ]


def test_poll_returns_the_first_value_that_settles() -> None:
    policy = RetryPolicy("the rescan to come back empty", attempts=10, first_delay_s=0.5, max_delay_s=0.5)
    reads, pauses = iter([3, 2, 0, 0]), []

    settled = policy.poll(lambda: next(reads), until=lambda left: left == 0, what="rescan", sleep=no_sleep(pauses))

    assert (settled.value, settled.settled, settled.attempts) == (0, True, 3)
    assert pauses == [0.5, 0.5]


def test_poll_that_runs_out_returns_the_last_value_unsettled() -> None:
    policy = RetryPolicy("the group to stop committing", attempts=4, first_delay_s=0, max_delay_s=0)
    reads = iter(range(10))

    settled = policy.poll(lambda: next(reads), until=lambda _: False, what="verify")

    assert isinstance(settled, Settled)
    assert (settled.value, settled.settled, settled.attempts) == (3, False, 4)


def test_poll_retries_retriable_errors_and_raises_when_they_last() -> None:
    policy = RetryPolicy("the rescan", retriable=loading, attempts=3, first_delay_s=0, max_delay_s=0)

    recovered = policy.poll(Flaky(Loading("a"), value="ok"), until=lambda v: v == "ok", what="rescan")
    assert (recovered.value, recovered.settled, recovered.attempts) == ("ok", True, 2)

    with pytest.raises(RetryExhaustedError, match="rescan: gave up waiting for the rescan after 3 attempt"):
        policy.poll(Flaky(Loading("a"), Loading("b"), Loading("c")), until=lambda v: True, what="rescan")
    with pytest.raises(Broken):
        policy.poll(Flaky(Broken("x")), until=lambda v: True, what="rescan")


def test_within_returns_what_the_call_returns_and_raises_what_it_raises() -> None:
    from airflow_provider_eos.core.retry import within

    assert within(lambda: 42, timeout_s=5, on_timeout=lambda: EosError("late")) == 42

    def broken() -> None:
        raise Broken("no")

    with pytest.raises(Broken, match="no"):
        within(broken, timeout_s=5, on_timeout=lambda: EosError("late"))


def test_within_raises_the_callers_error_at_the_deadline_of_a_call_that_never_returns() -> None:
    import threading

    from airflow_provider_eos.core.retry import within

    released = threading.Event()
    started = time.monotonic()
    try:
        with pytest.raises(EosError, match=r"no answer in 0\.3 s"):
            within(lambda: released.wait(30), timeout_s=0.3, on_timeout=lambda: EosError("no answer in 0.3 s"))
    finally:
        released.set()  # the call left behind ends, as closing a client ends kafka-python's
    assert time.monotonic() - started < 3
