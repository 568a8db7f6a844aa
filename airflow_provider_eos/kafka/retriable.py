"""Which Kafka client errors are worth another attempt, and the named retry policies that use them.

Every retry on the Kafka side goes through one of these policies
(:class:`~airflow_provider_eos.core.retry.RetryPolicy`): the caller names the operation and, where
the caller has its own deadline, bounds the policy with it (``COORDINATOR_LOADING.bounded(timeout_s=t)``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from confluent_kafka import KafkaError, KafkaException

from airflow_provider_eos.core.errors import KafkaNoAnswerError
from airflow_provider_eos.core.retry import RetryPolicy

__all__ = [
    "COORDINATOR_LOADING",
    "COORDINATOR_NOT_READY_CODES",
    "LOCAL_QUEUE_FULL",
    "NO_ANSWER_CODES",
    "STABLE_OFFSETS",
    "TRANSACTION_COMMIT",
    "CoordinatorNotReady",
    "OffsetsPending",
    "coordinator_not_ready",
    "kafka_error",
    "kafka_python_no_answer",
    "local_queue_full",
    "no_answer",
    "offsets_pending",
    "raise_if_coordinator_not_ready",
    "raise_if_unanswered",
    "retriable_kafka_error",
]

# The group coordinator moves or is still loading __consumer_offsets (fresh broker, failover):
# the request is fine, only early.
COORDINATOR_NOT_READY_CODES = frozenset(
    {KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE}
)


#: ``require_stable`` found a transactional offset commit not yet resolved: its transaction just
#: ended and the coordinator has not applied its marker yet, or it is still open (then the
#: transaction timeout ends it at the latest).
UNSTABLE_OFFSETS_CODES = frozenset({KafkaError.UNSTABLE_OFFSET_COMMIT})

#: librdkafka's own verdicts that a request got no answer: it timed out, or the connection it went over failed,
#: was lost or never came up. No broker checked the request, so nothing about it was refused.
NO_ANSWER_CODES = frozenset({KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN})


class CoordinatorNotReady(Exception):
    """A per-partition result said the group coordinator is not ready (the request itself succeeded)."""


class OffsetsPending(CoordinatorNotReady):
    """A ``require_stable`` read found offsets a transaction holds pending (retried by :data:`STABLE_OFFSETS`).

    :param what: the operation.
    :param partitions: the partitions answered ``UNSTABLE_OFFSET_COMMIT``, as ``topic-partition``.
    """

    def __init__(self, what: str, partitions: list[str]) -> None:
        super().__init__(f"{what}: UNSTABLE_OFFSET_COMMIT on {', '.join(partitions)}")
        self.partitions = partitions


def kafka_error(error: object) -> KafkaError | None:
    """The :class:`KafkaError` of a :class:`KafkaException` (or the error itself), else ``None``."""
    if isinstance(error, KafkaException) and error.args:
        error = error.args[0]
    return error if isinstance(error, KafkaError) else None


def coordinator_not_ready(exc: BaseException) -> bool:
    """The group coordinator is loading or moving: the same request succeeds a little later."""
    if isinstance(exc, CoordinatorNotReady):
        return True
    error = kafka_error(exc)
    return error is not None and error.code() in COORDINATOR_NOT_READY_CODES


def raise_if_coordinator_not_ready(what: str, errors: Iterable[object]) -> None:
    """Raise :class:`CoordinatorNotReady` if any per-partition error says so (retried by the policy)."""
    for error in errors:
        found = kafka_error(error)
        if found is not None and found.code() in COORDINATOR_NOT_READY_CODES:
            raise CoordinatorNotReady(f"{what}: {found.name()}")


def offsets_pending(error: object) -> bool:
    """A per-partition error of a ``require_stable`` read: a transaction holds the partition's offsets pending."""
    found = kafka_error(error)
    return found is not None and found.code() in UNSTABLE_OFFSETS_CODES


def kafka_python_no_answer(exc: BaseException) -> bool:
    """A kafka-python error that says the broker gave no answer: a request timed out, a connection was lost or not
    made. Nothing the broker checked: the same call may go through once it answers again."""
    from kafka import errors

    return isinstance(exc, (errors.KafkaTimeoutError, errors.RequestTimedOutError, errors.KafkaConnectionError,
                            errors.NodeNotReadyError))


def no_answer(exc: BaseException) -> bool:
    """A confluent-kafka failure that says the broker gave no answer (:data:`NO_ANSWER_CODES`), or the caller's
    wait on a request's future ran out first (``concurrent.futures.TimeoutError``, the builtin ``TimeoutError``
    since Python 3.11). The counterpart of :func:`kafka_python_no_answer`: the same call may go through once
    the broker answers again."""
    if isinstance(exc, TimeoutError):
        return True
    error = kafka_error(exc)
    return error is not None and error.code() in NO_ANSWER_CODES


def raise_if_unanswered(exc: BaseException, *, brokers: str, what: str, timeout_s: float,
                        error: type[KafkaNoAnswerError] = KafkaNoAnswerError) -> None:
    """Raise :class:`~airflow_provider_eos.core.errors.KafkaNoAnswerError`, chained to ``exc``, if ``exc`` says the
    broker gave no answer (:func:`no_answer`): the retryable error every kafka-python call ends with in that case
    (``transactions_admin.answered_within``), so a silent broker reads the same whichever client met it.

    :param brokers: the ``bootstrap.servers`` the client was connected to.
    :param what: the request that got no answer (``Metadata``, ``OffsetFetch('g')``...).
    :param timeout_s: the request's timeout.
    :param error: the type raised; a write's is
        :class:`~airflow_provider_eos.core.errors.KafkaWriteNoAnswerError` (it may have gone through).
    """
    if no_answer(exc):
        found = kafka_error(exc)
        detail = None if found is None else f"{found.name()}: {found.str()}"  # a future's own wait says nothing
        raise error(brokers, what, timeout_s, detail=detail) from exc


def retriable_kafka_error(exc: BaseException) -> bool:
    """The client flags the error retriable (the call may be repeated as is)."""
    error = kafka_error(exc)
    return error is not None and error.retriable()


def local_queue_full(exc: BaseException) -> bool:
    """``produce`` found the producer's local queue full; serving delivery reports makes room."""
    return isinstance(exc, BufferError)


COORDINATOR_LOADING = RetryPolicy(
    waiting_for="the group coordinator to load the group",
    retriable=coordinator_not_ready,
    timeout_s=30,
    first_delay_s=0.1,
    max_delay_s=2.0,
    fix="check that the brokers are up: the leader of the group's __consumer_offsets partition did not "
    "become available; a cluster that is still starting needs a longer timeout",
)

# Always bounded by its caller, read_committed_offsets, with the spec's transaction timeout plus a margin
# (core/transactions/stable_read.py): no pending offset commit of the sink's transactions outlives that.
STABLE_OFFSETS = RetryPolicy(
    waiting_for="the group's offsets to be stable (no transactional offset commit pending)",
    retriable=coordinator_not_ready,
    timeout_s=60,
    first_delay_s=0.05,
    max_delay_s=1.0,
    fix="a transaction that commits offsets to the sink group is still open: if no job runs, abort lingering "
    "transactions (`eos abort --spec <spec file> --execute`); otherwise check the brokers' health",
)

TRANSACTION_COMMIT = RetryPolicy(
    waiting_for="commit_transaction to go through",
    retriable=retriable_kafka_error,
    attempts=5,
    first_delay_s=0.2,
    max_delay_s=2.0,
    log_level=logging.WARNING,
    fix="check the brokers' health (leader changes, a broker down); the batch is replayed on restart",
)

# Bounded by the caller with the transaction timeout: a queue that does not drain by then means
# deliveries are failing, and the transaction cannot commit anyway.
LOCAL_QUEUE_FULL = RetryPolicy(
    waiting_for="room in the producer's local queue",
    retriable=local_queue_full,
    timeout_s=60,
    first_delay_s=0.1,
    max_delay_s=0.1,
    fix="check that the brokers accept the output (deliveries did not drain the queue)",
)
