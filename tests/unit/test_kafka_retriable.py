"""Which Kafka client errors the named policies retry, and how the sink sees a client error."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from airflow_provider_eos.core.errors import RetryExhaustedError
from airflow_provider_eos.kafka.retriable import (
    COORDINATOR_LOADING,
    TRANSACTION_COMMIT,
    CoordinatorNotReady,
    OffsetsPending,
    coordinator_not_ready,
    local_queue_full,
    offsets_pending,
    raise_if_coordinator_not_ready,
    retriable_kafka_error,
)
from airflow_provider_eos.spark.record_producer import kafka_failure


def failing(code: int, **flags: bool) -> KafkaException:
    return KafkaException(KafkaError(code, "broker says so", **flags))


@pytest.mark.parametrize(
    "code", [KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_NOT_AVAILABLE]
)
def test_coordinator_loading_or_moving_is_retried(code: int) -> None:
    assert coordinator_not_ready(failing(code))
    with pytest.raises(CoordinatorNotReady):
        raise_if_coordinator_not_ready("read offsets", [None, KafkaError(code)])


def test_other_group_errors_are_not_retried() -> None:
    assert not coordinator_not_ready(failing(KafkaError.GROUP_AUTHORIZATION_FAILED))
    assert not coordinator_not_ready(ValueError("x"))
    raise_if_coordinator_not_ready("read offsets", [None, KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED)])


def test_pending_offsets_are_named_and_retried_by_the_stable_reads_policy() -> None:
    unstable = KafkaError(KafkaError.UNSTABLE_OFFSET_COMMIT)
    assert offsets_pending(unstable) and not offsets_pending(KafkaError(KafkaError.NOT_COORDINATOR))
    assert not offsets_pending(None)
    # Not a coordinator that is loading: the stable read names the partitions itself when it gives up.
    raise_if_coordinator_not_ready("read offsets", [unstable])
    pending = OffsetsPending("read offsets of group 'g'", ["orders-0", "orders-3"])
    assert coordinator_not_ready(pending) and pending.partitions == ["orders-0", "orders-3"]
    assert str(pending) == "read offsets of group 'g': UNSTABLE_OFFSET_COMMIT on orders-0, orders-3"


def test_commit_retries_what_the_client_flags_retriable() -> None:
    assert retriable_kafka_error(failing(KafkaError._TIMED_OUT, retriable=True))
    assert not retriable_kafka_error(failing(KafkaError._FENCED, fatal=True))
    assert local_queue_full(BufferError("Local: Queue full")) and not local_queue_full(failing(KafkaError._TIMED_OUT))


def test_coordinator_loading_gives_up_within_the_callers_timeout() -> None:
    calls = []

    def describe() -> None:
        calls.append(1)
        raise failing(KafkaError.COORDINATOR_LOAD_IN_PROGRESS)

    with pytest.raises(RetryExhaustedError) as raised:
        COORDINATOR_LOADING.bounded(timeout_s=0.4).call(describe, what="describe group 'g'")
    assert "describe group 'g': gave up waiting for the group coordinator to load the group" in raised.value.message
    assert "COORDINATOR_LOAD_IN_PROGRESS" in raised.value.message and len(calls) >= 2
    assert "__consumer_offsets" in raised.value.fix


def test_the_sink_maps_client_errors_and_exhausted_retries_to_the_classifications_input() -> None:
    fenced = kafka_failure(failing(KafkaError._FENCED, fatal=True), outlived_timeout=False)
    assert (fenced.code, fenced.fatal, fenced.retriable, fenced.txn_requires_abort) == ("_FENCED", True, False, False)
    assert fenced.detail == "broker says so"

    attempts = iter([failing(KafkaError._TIMED_OUT, retriable=True, txn_requires_abort=True)] * 5)
    with pytest.raises(RetryExhaustedError) as raised:
        TRANSACTION_COMMIT.bounded(attempts=2).call(lambda: (_ for _ in ()).throw(next(attempts)), what="commit")
    timed_out = kafka_failure(raised.value, outlived_timeout=True)
    assert (timed_out.code, timed_out.retriable, timed_out.txn_requires_abort, timed_out.outlived_timeout) == (
        "_TIMED_OUT", True, True, True)
    assert timed_out.detail.startswith("commit: gave up waiting for commit_transaction to go through after 2 attempt")

    queue = RetryExhaustedError("produce: gave up", what="produce", attempts=3, elapsed_s=1.0,
                                last_error=BufferError("Local: Queue full"))
    assert kafka_failure(queue, outlived_timeout=False).code == "_QUEUE_FULL"


def test_kafka_pythons_no_answer_errors_are_told_from_a_brokers_answer() -> None:
    from kafka import errors

    from airflow_provider_eos.kafka.retriable import kafka_python_no_answer

    for no_answer in (errors.KafkaTimeoutError("Timeout during ApiVersions check"),
                      errors.RequestTimedOutError("Request timed out after 3000 ms"),
                      errors.KafkaConnectionError("Connection lost"), errors.NodeNotReadyError(1)):
        assert kafka_python_no_answer(no_answer), no_answer
    for answer in (errors.TransactionalIdNotFoundError(), errors.TransactionalIdAuthorizationFailedError(),
                   ValueError("not Kafka")):
        assert not kafka_python_no_answer(answer), answer
