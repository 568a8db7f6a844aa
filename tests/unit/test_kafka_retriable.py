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


def test_librdkafkas_no_answer_errors_are_told_from_a_brokers_answer() -> None:
    from concurrent.futures import TimeoutError as FutureTimeout

    from airflow_provider_eos.kafka.retriable import no_answer

    for code in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN):
        assert no_answer(failing(code)), KafkaError(code).name()
    assert no_answer(FutureTimeout()) and no_answer(TimeoutError())  # the caller's wait on a request ran out
    for code in (KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.COORDINATOR_NOT_AVAILABLE,
                 KafkaError.INVALID_GROUP_ID, KafkaError.REQUEST_TIMED_OUT, KafkaError._INVALID_ARG):
        assert not no_answer(failing(code)), KafkaError(code).name()
    assert not no_answer(ValueError("not Kafka"))


def test_an_unanswered_request_raises_the_no_answer_error_naming_the_brokers_and_the_request() -> None:
    from airflow_provider_eos.core.errors import KafkaNoAnswerError
    from airflow_provider_eos.kafka.retriable import raise_if_unanswered

    timed_out = failing(KafkaError._TIMED_OUT)
    with pytest.raises(KafkaNoAnswerError) as raised:
        raise_if_unanswered(timed_out, brokers="b:9092", what="Metadata", timeout_s=3)
    assert raised.value.message == "Metadata: no answer from the Kafka broker(s) at b:9092 within 3 s " \
        "(_TIMED_OUT: broker says so)"
    assert raised.value.__cause__ is timed_out and raised.value.retryable
    raise_if_unanswered(failing(KafkaError.INVALID_GROUP_ID), brokers="b:9092", what="Metadata", timeout_s=3)
