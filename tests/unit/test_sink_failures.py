"""What a failed sink transaction was: one typed error per kind, each saying what to do.

The code names and flags below are librdkafka's as confluent-kafka reports them; the fenced and
timed-out cases were recorded against the devstack broker (Apache Kafka 4.x, confluent-kafka
2.16): a producer fenced by a second one with the same transactional id, and one whose
transaction outlived ``transaction.timeout.ms`` = 3000 (the broker's abort bumps the epoch),
both report ``_FENCED`` with fatal=True, retriable=False, txn_requires_abort=False.
"""

from __future__ import annotations

import pytest

from airflow_provider_eos.core.errors import (
    AclMissingError,
    EosError,
    ProducerFencedError,
    SinkAuthorizationError,
    SinkError,
    SinkKafkaError,
    TransactionAbortedError,
    TransactionTimedOutError,
    UnknownProducerIdError,
)
from airflow_provider_eos.core.sink_failures import (
    KafkaFailure,
    classify_sink_failure,
    must_recreate_producer,
    sink_failure_error,
)
from airflow_provider_eos.core.spec import PipelineSpec

SPEC = PipelineSpec(
    name="orders", kafka={"bootstrap.servers": "localhost:9092"}, input_topics=["orders"],
    output_topic="orders-out", dlq_topic="orders-dlq", group_id="orders-sink", transactional_id_prefix="orders-txn",
    checkpoint_location="/tmp/ckpt", transaction_timeout_ms=45_000, max_offsets_per_trigger=5000,
)
FENCED_TEXT = "Failed to add offsets to transaction: Local: This instance has been fenced by a newer instance"


@pytest.mark.parametrize(
    ("failure", "kind"),
    [
        (KafkaFailure("_FENCED", fatal=True, detail=FENCED_TEXT), ProducerFencedError),
        (KafkaFailure("PRODUCER_FENCED", fatal=True), ProducerFencedError),
        (KafkaFailure("INVALID_PRODUCER_EPOCH", fatal=True), ProducerFencedError),
        # The broker's timeout abort bumps the epoch: the same _FENCED, but the transaction was that old.
        (KafkaFailure("_FENCED", fatal=True, detail=FENCED_TEXT, outlived_timeout=True), TransactionTimedOutError),
        (KafkaFailure("_TIMED_OUT", retriable=True, txn_requires_abort=True), TransactionTimedOutError),
        (KafkaFailure("_MSG_TIMED_OUT", txn_requires_abort=True), TransactionTimedOutError),
        (KafkaFailure("INVALID_TXN_STATE", fatal=True), TransactionTimedOutError),
        (KafkaFailure("TOPIC_AUTHORIZATION_FAILED", txn_requires_abort=True), SinkAuthorizationError),
        (KafkaFailure("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", fatal=True), SinkAuthorizationError),
        (KafkaFailure("GROUP_AUTHORIZATION_FAILED", txn_requires_abort=True), SinkAuthorizationError),
        (KafkaFailure("CLUSTER_AUTHORIZATION_FAILED", fatal=True), SinkAuthorizationError),
        (KafkaFailure("UNKNOWN_PRODUCER_ID", txn_requires_abort=True), UnknownProducerIdError),
        (KafkaFailure("INVALID_PRODUCER_ID_MAPPING", fatal=True), UnknownProducerIdError),
        (KafkaFailure("MSG_SIZE_TOO_LARGE", txn_requires_abort=True), TransactionAbortedError),
        (KafkaFailure("TRANSACTION_ABORTABLE"), TransactionAbortedError),
        (KafkaFailure("_TRANSPORT", retriable=True), SinkKafkaError),
        (KafkaFailure("UNSUPPORTED_VERSION", fatal=True), SinkKafkaError),
    ],
    ids=lambda value: value.code if isinstance(value, KafkaFailure) else value.__name__,
)
def test_each_code_and_flag_set_maps_to_one_kind(failure: KafkaFailure, kind: type[SinkError]) -> None:
    assert classify_sink_failure(failure) is kind
    error = sink_failure_error(failure, batch_id=7, spec=SPEC)
    assert type(error) is kind and isinstance(error, SinkError) and isinstance(error, EosError)
    # The chaos tests find failed batches by this phrase.
    assert error.message.startswith("batch 7 was not written: ")
    assert failure.code in error.message and error.fix


def test_fenced_says_another_writer_started_and_to_check_for_a_second_job() -> None:
    error = sink_failure_error(KafkaFailure("_FENCED", fatal=True, detail=FENCED_TEXT), batch_id=3, spec=SPEC)
    assert "fenced by another writer with the same transactional id" in error.message
    assert "zombie" in error.message and FENCED_TEXT in error.message
    assert "no second job runs pipeline 'orders'" in error.fix and "orders-txn-*" in error.fix
    assert "restart" in error.fix


def test_timeout_names_the_timeout_and_the_knobs() -> None:
    error = sink_failure_error(KafkaFailure("_FENCED", fatal=True, outlived_timeout=True), batch_id=3, spec=SPEC)
    assert "timed out" in error.message and "transaction.timeout.ms=45000" in error.message
    # A broker timeout abort surfaces as a fence: the message says so, so "fenced" in the log is explained.
    assert "fenced this producer's epoch" in error.message
    assert "lower max_offsets_per_trigger (now 5000)" in error.fix
    assert "transaction.max.timeout.ms" in error.fix


@pytest.mark.parametrize(
    ("code", "stage", "unauthorized", "needed"),
    [
        ("TOPIC_AUTHORIZATION_FAILED", "produce", (),
         "Produce: it needs WRITE on TOPIC 'orders-out', TOPIC 'orders-dlq'"),
        ("TOPIC_AUTHORIZATION_FAILED", "produce", ("orders-dlq",), "Produce: it needs WRITE on TOPIC 'orders-dlq'"),
        ("TOPIC_AUTHORIZATION_FAILED", "offsets", (), "TxnOffsetCommit: it needs READ on TOPIC 'orders'"),
        ("TRANSACTIONAL_ID_AUTHORIZATION_FAILED", "init", (), "InitProducerId: it needs WRITE on TRANSACTIONAL_ID "
         "'orders-txn-0'"),
        ("GROUP_AUTHORIZATION_FAILED", "offsets", (), "TxnOffsetCommit: it needs READ on GROUP 'orders-sink'"),
        ("CLUSTER_AUTHORIZATION_FAILED", "init", (), "InitProducerId: it needs IDEMPOTENT_WRITE on CLUSTER"),
    ],
)
def test_authorization_names_the_missing_acl_and_the_job_roles_grant(
        code: str, stage: str, unauthorized: tuple[str, ...], needed: str) -> None:
    error = sink_failure_error(KafkaFailure(code, txn_requires_abort=True), batch_id=1, spec=SPEC, stage=stage,
                               transactional_id="orders-txn-0", unauthorized_topics=unauthorized)
    assert isinstance(error, AclMissingError) and error.role == "job"
    assert error.message.startswith("batch 1 was not written: Kafka refused the client's principal ")
    assert needed in error.message, error.message
    assert "--role job --apply" in str(error.fix) and "'orders'" in str(error.fix)


def test_unknown_producer_id_aborted_and_other_say_what_happens_next() -> None:
    unknown = sink_failure_error(KafkaFailure("UNKNOWN_PRODUCER_ID"), batch_id=1, spec=SPEC)
    assert "no longer knows this producer's id" in unknown.message
    assert "transactional.id.expiration.ms" in unknown.fix
    aborted = sink_failure_error(KafkaFailure("MSG_SIZE_TOO_LARGE", txn_requires_abort=True, detail="too big"),
                                 batch_id=1, spec=SPEC)
    assert "had to be aborted (MSG_SIZE_TOO_LARGE: too big)" in aborted.message
    other = sink_failure_error(KafkaFailure("_TRANSPORT", retriable=True, detail="down"), batch_id=1, spec=SPEC)
    assert "Kafka error _TRANSPORT: down (retriable)" in other.message


@pytest.mark.parametrize(
    ("failure", "recreate"),
    [
        (KafkaFailure("_FENCED", fatal=True), True),
        (KafkaFailure("UNSUPPORTED_VERSION", fatal=True), True),
        # librdkafka's classic protocol: after a timeout the producer starts afresh (docs/architecture.md).
        (KafkaFailure("_MSG_TIMED_OUT", txn_requires_abort=True), True),
        (KafkaFailure("UNKNOWN_PRODUCER_ID", txn_requires_abort=True), True),
        # Nothing asked for an abort: only a new producer's init_transactions clears the transaction.
        (KafkaFailure("_TRANSPORT", retriable=True), True),
        (KafkaFailure("MSG_SIZE_TOO_LARGE", txn_requires_abort=True), False),
        (KafkaFailure("TOPIC_AUTHORIZATION_FAILED", txn_requires_abort=True), False),
    ],
    ids=lambda value: value.code if isinstance(value, KafkaFailure) else str(value),
)
def test_which_failures_need_a_new_producer(failure: KafkaFailure, recreate: bool) -> None:
    assert must_recreate_producer(failure) is recreate
