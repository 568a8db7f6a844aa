"""One way to retry and to wait: a named :class:`RetryPolicy` on tenacity.

A policy says which errors are worth another attempt, how long to keep trying and how to back
off. :meth:`RetryPolicy.call` retries a call and, when the policy gives up, raises
:class:`~airflow_provider_eos.core.errors.RetryExhaustedError` naming what was retried, how
often and for how long, with the last error as its cause. :meth:`RetryPolicy.poll` waits for a
condition ("the rescan shows nothing left to abort") and returns the last value read, settled or
not, because such waits report what is left rather than fail.

A wait that lasts shows progress (:mod:`airflow_provider_eos.core.progress`): a line after two
seconds, then every ten, so that a person at a terminal sees what is awaited and for how long.

A call that can block without a bound of its own (a client that waits for an answer forever)
runs under :func:`within`, which gives up on it after a deadline with the caller's typed error.

The policies that recognise a client's errors live beside that client (for Kafka:
:mod:`airflow_provider_eos.kafka.retriable`); this module knows no client.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, NoReturn, TypeVar

from tenacity import (
    RetryCallState,
    Retrying,
    retry_if_exception,
    retry_if_result,
    stop_after_attempt,
    stop_any,
    stop_before_delay,
    wait_exponential,
)
from tenacity.retry import retry_base
from tenacity.stop import stop_base

from airflow_provider_eos.core.errors import EosError, RetryExhaustedError
from airflow_provider_eos.core.progress import Cadence, say

__all__ = ["RetryPolicy", "Settled", "never", "within"]

log = logging.getLogger(__name__)
_T = TypeVar("_T")


def never(_: BaseException) -> bool:
    """No error is retriable (polls that only wait for a condition)."""
    return False


def within(fn: Callable[[], _T], *, timeout_s: float, on_timeout: Callable[[], EosError], name: str = "eos-call") -> _T:
    """``fn()``, or ``on_timeout()`` raised once ``timeout_s`` passed without it returning.

    For a blocking call with no deadline of its own (kafka-python's admin calls wait on their event
    loop without a bound while a connected broker never answers). ``fn`` runs in a daemon thread,
    which a call that gave up leaves behind: the caller ends it by closing the client ``fn`` waits
    on (a closed kafka-python client fails its waiting calls), and it never keeps the process up.

    :param timeout_s: the deadline of the whole call.
    :param on_timeout: the typed error to raise when the deadline passes (retryable as it says).
    :param name: the thread's name, for a thread dump.
    :raises EosError: ``on_timeout()``, when ``fn`` did not return within ``timeout_s``.
    """
    outcome: list[tuple[bool, object]] = []
    done = threading.Event()

    def run() -> None:
        try:
            outcome.append((True, fn()))
        except BaseException as exc:  # re-raised in the caller's thread below
            outcome.append((False, exc))
        finally:
            done.set()

    threading.Thread(target=run, name=name, daemon=True).start()
    if not done.wait(timeout_s):
        raise on_timeout()
    returned, value = outcome[0]
    if not returned:
        raise value  # type: ignore[misc]  # the exception fn raised
    return value  # type: ignore[return-value]  # what fn returned


@dataclass(frozen=True)
class Settled(Generic[_T]):
    """The outcome of :meth:`RetryPolicy.poll`.

    :param value: the last value read.
    :param settled: whether it met the condition (``False``: the policy ran out first).
    :param attempts: how many reads were made.
    :param elapsed_s: seconds from the first read to the last.
    """

    value: _T
    settled: bool
    attempts: int
    elapsed_s: float


@dataclass(frozen=True)
class RetryPolicy:
    """How one kind of call is retried.

    :param waiting_for: what the retries wait for, as the error says it ("the group coordinator
        to load the group").
    :param retriable: whether an error means "try again"; any other error propagates at once,
        unchanged.
    :param timeout_s: no attempt starts later than this after the first (``None``: no time bound).
    :param attempts: at most this many attempts (``None``: no count bound). At least one bound.
    :param first_delay_s: the pause after the first failed attempt; it doubles up to
        ``max_delay_s`` (equal values: a fixed interval).
    :param max_delay_s: the longest pause between attempts.
    :param log_level: level of the line logged before each retry.
    :param fix: what an operator should do when the policy gives up.
    """

    waiting_for: str
    retriable: Callable[[BaseException], bool] = never
    timeout_s: float | None = None
    attempts: int | None = None
    first_delay_s: float = 0.1
    max_delay_s: float = 2.0
    log_level: int = logging.DEBUG
    fix: str | None = None

    def __post_init__(self) -> None:
        # An unbounded retry hides an outage behind a hang: every policy must give up some time.
        if self.timeout_s is None and self.attempts is None:
            raise ValueError(f"retry policy for {self.waiting_for!r} needs timeout_s or attempts")
        if self.attempts is not None and self.attempts < 1:
            raise ValueError(f"retry policy for {self.waiting_for!r}: attempts is {self.attempts}, at least 1")
        if self.first_delay_s < 0 or self.max_delay_s < self.first_delay_s:
            raise ValueError(
                f"retry policy for {self.waiting_for!r}: delays {self.first_delay_s}..{self.max_delay_s} s"
            )

    def bounded(self, *, timeout_s: float | None = None, attempts: int | None = None) -> RetryPolicy:
        """The same policy with the caller's bounds (``None`` keeps the policy's own)."""
        return dataclasses.replace(
            self,
            timeout_s=self.timeout_s if timeout_s is None else timeout_s,
            attempts=self.attempts if attempts is None else attempts,
        )

    def describe(self) -> str:
        """The bounds in words, e.g. ``"up to 30 s, backoff 0.1-2 s"``."""
        bounds = [f"up to {self.timeout_s:g} s"] if self.timeout_s is not None else []
        bounds += [f"at most {self.attempts} attempts"] if self.attempts is not None else []
        backoff = (
            f"every {self.first_delay_s:g} s"
            if self.first_delay_s == self.max_delay_s
            else f"backoff {self.first_delay_s:g}-{self.max_delay_s:g} s"
        )
        return ", ".join([*bounds, backoff])

    def call(self, fn: Callable[[], _T], *, what: str, sleep: Callable[[float], object] | None = None) -> _T:
        """Run ``fn`` until it returns, a non-retriable error escapes, or the policy gives up.

        :param what: the operation, for the log and the error ("read offsets of group 'g'").
        :param sleep: how to pause between attempts (default :func:`time.sleep`); a producer
            passes its ``poll`` so that the pause serves delivery reports.
        :raises RetryExhaustedError: when the policy gives up; the last error is its cause.
        """

        def give_up(state: RetryCallState) -> NoReturn:
            error = self._exhausted(what, state)
            raise error from error.last_error

        return self._retrying(what, retry_if_exception(self.retriable), give_up, sleep)(fn)

    def poll(
        self,
        read: Callable[[], _T],
        *,
        until: Callable[[_T], bool],
        what: str,
        sleep: Callable[[float], object] | None = None,
    ) -> Settled[_T]:
        """Read until ``until(value)`` holds or the policy runs out; retriable errors are retried.

        :param what: the wait, for the log ("rescan after the abort").
        :returns: the last value read and whether it settled; running out is not an error here.
        :raises RetryExhaustedError: only if the policy ran out while the reads kept failing.
        """

        def ran_out(state: RetryCallState) -> Settled[_T]:
            outcome = state.outcome
            assert outcome is not None  # tenacity calls back only after an attempt
            if outcome.failed:
                error = self._exhausted(what, state)
                raise error from error.last_error
            log.log(self.log_level, "%s: gave up waiting for %s (%s)", what, self.waiting_for, self.describe())
            return Settled(outcome.result(), False, state.attempt_number, state.seconds_since_start or 0.0)

        started = time.monotonic()
        condition = retry_if_exception(self.retriable) | retry_if_result(lambda value: not until(value))
        retrying = self._retrying(what, condition, ran_out, sleep)
        result = retrying(read)
        if isinstance(result, Settled):
            return result
        return Settled(result, True, retrying.statistics.get("attempt_number", 1), time.monotonic() - started)

    def _exhausted(self, what: str, state: RetryCallState) -> RetryExhaustedError:
        last = state.outcome.exception() if state.outcome is not None else None
        elapsed = state.seconds_since_start or 0.0
        return RetryExhaustedError(
            f"{what}: gave up waiting for {self.waiting_for} after {state.attempt_number} attempt(s) over "
            f"{elapsed:.1f} s ({self.describe()}); the last error: {last}",
            what=what,
            attempts=state.attempt_number,
            elapsed_s=elapsed,
            last_error=last,
            fix=self.fix,
        )

    def _retrying(
        self,
        what: str,
        retry: retry_base,
        on_give_up: Callable[[RetryCallState], object],
        sleep: Callable[[float], object] | None,
    ) -> Retrying:
        cadence = Cadence()

        def before_sleep(state: RetryCallState) -> None:
            outcome = state.outcome
            reason = outcome.exception() if outcome is not None and outcome.failed else "not yet"
            log.log(
                self.log_level,
                "%s: waiting for %s (attempt %d: %s); next attempt in %.1f s",
                what, self.waiting_for, state.attempt_number, reason, state.upcoming_sleep,
            )
            # The log line above is for debugging; a person waiting sees a line now and then instead.
            elapsed = state.seconds_since_start or 0.0
            if cadence.due(elapsed):
                say(f"{what}: waiting for {self.waiting_for} ({elapsed:.0f} s so far, attempt "
                    f"{state.attempt_number}; {self.describe()})")

        stops: list[stop_base] = []
        if self.timeout_s is not None:
            stops.append(stop_before_delay(self.timeout_s))
        if self.attempts is not None:
            stops.append(stop_after_attempt(self.attempts))
        return Retrying(
            stop=stop_any(*stops),
            wait=wait_exponential(multiplier=self.first_delay_s, min=self.first_delay_s, max=self.max_delay_s),
            retry=retry,
            before_sleep=before_sleep,
            retry_error_callback=on_give_up,
            sleep=sleep or time.sleep,  # type: ignore[arg-type]  # tenacity types it as returning None
        )
