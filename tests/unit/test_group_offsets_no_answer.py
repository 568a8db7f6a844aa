"""The librdkafka reads of the sink group: a request no broker answered ends as a kafka-python call's does.

A broker that accepts connections and never answers (its process paused) fails librdkafka's requests with its
own verdicts (``_TIMED_OUT``, ``_TRANSPORT``...), or the caller's wait on the request's future runs out first.
verify's Metadata request (:func:`verification_partitions`) and the writers' offset reads
(:func:`read_committed_offsets` with the spec's brokers) then raise the retryable :class:`KafkaNoAnswerError`
naming the brokers and the request, as every kafka-python call does; an answer of the broker (a refusal, an
invalid group) stays what it was. verify reads the offsets themselves over kafka-python (design note 85:
tests/unit/test_group_offset_fetch.py). The real paused broker: tests/integration/test_silent_broker.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException

from airflow_provider_eos.core.errors import AclMissingError, KafkaNoAnswerError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.group_offsets import (
    GroupOffsetsError,
    read_committed_offsets,
    verification_partitions,
)
from airflow_provider_eos.usecases.clients import PipelineClients
from airflow_provider_eos.usecases.verify import verify
from tests.support.silent_admin import BROKERS, TIMED_OUT, TRANSPORT, silent_spec
from tests.support.silent_admin import SilentAdmin as _Admin


@pytest.fixture
def spec(tmp_path: Path) -> PipelineSpec:
    return silent_spec(tmp_path)


def _writers_read(spec: PipelineSpec, admin: _Admin) -> None:
    read_committed_offsets(admin, spec.group_id, [TopicPartition("orders", 0)],  # type: ignore[arg-type]  # the fake
                           transaction_timeout_ms=spec.transaction_timeout_ms, timeout_s=3, brokers=spec.brokers)


def _verification_partitions(spec: PipelineSpec, admin: _Admin) -> None:
    verification_partitions(admin, spec, PipelineClients(spec).checkpoint, timeout_s=3)  # type: ignore[arg-type]


def test_verify_ends_with_the_no_answer_error_naming_the_brokers_and_the_request(spec: PipelineSpec) -> None:
    clients = PipelineClients(spec, timeout_s=3)
    clients.__dict__["admin"] = _Admin(metadata=TIMED_OUT)  # the probed admin client, as require_kafka caches it
    with pytest.raises(KafkaNoAnswerError) as raised:
        verify(clients)
    assert raised.value.retryable
    assert raised.value.message == (
        f"Metadata: no answer from the Kafka broker(s) at {BROKERS} within 3 s "
        "(_TIMED_OUT: Failed to get metadata: Local: Timed out)")
    assert raised.value.fix is not None and raised.value.fix.startswith("check that the brokers are answering")
    assert raised.value.__cause__ is TIMED_OUT


@pytest.mark.parametrize(("error", "detail"), [
    (TRANSPORT, "_TRANSPORT: broker-1:9093/1: Connection reset by peer"),
    (KafkaException(KafkaError(KafkaError._ALL_BROKERS_DOWN, "2/2 brokers are down")),
     "_ALL_BROKERS_DOWN: 2/2 brokers are down"),
    (TimeoutError(), "connected, but the broker does not answer"),  # the future's wait: the client said nothing
])
def test_the_group_offsets_request_unanswered_is_the_no_answer_error(
    spec: PipelineSpec, error: BaseException, detail: str
) -> None:
    with pytest.raises(KafkaNoAnswerError) as raised:
        _writers_read(spec, _Admin(offsets=error))
    assert raised.value.message == (
        f"OffsetFetch('orders-eos'): no answer from the Kafka broker(s) at {BROKERS} within 3 s ({detail})")


def test_an_answer_of_the_broker_keeps_its_own_error(spec: PipelineSpec) -> None:
    invalid = KafkaException(KafkaError(KafkaError.INVALID_GROUP_ID, "Broker: Invalid group.id"))
    with pytest.raises(GroupOffsetsError, match="could not read committed offsets of group 'orders-eos'"):
        _writers_read(spec, _Admin(offsets=invalid))
    refused = KafkaException(KafkaError(KafkaError.GROUP_AUTHORIZATION_FAILED, "Broker: Group authorization failed"))
    with pytest.raises(AclMissingError):
        _writers_read(spec, _Admin(offsets=refused))
    unknown = KafkaException(KafkaError(KafkaError._INVALID_ARG, "Local: Invalid argument or configuration"))
    with pytest.raises(GroupOffsetsError, match="could not read topic metadata from 'broker-1:9093,broker-2:9093'"):
        _verification_partitions(spec, _Admin(metadata=unknown))


@pytest.mark.parametrize("error", [TIMED_OUT, TimeoutError()])
def test_a_reader_that_names_no_brokers_gets_the_group_offsets_error(error: BaseException) -> None:
    # Every reader of the package names them (tests/unit/test_offset_readers_no_answer.py); a caller that names
    # none (a test's own read) gets the group's typed error (a future's wait that ran out was an untyped
    # TimeoutError before).
    with pytest.raises(GroupOffsetsError, match="could not read committed offsets of group 'g'"):
        read_committed_offsets(_Admin(offsets=error), "g", [TopicPartition("orders", 0)],  # type: ignore[arg-type]
                               transaction_timeout_ms=60_000, timeout_s=3)
