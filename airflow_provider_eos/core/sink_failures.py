"""What a failed sink transaction was, and what to do about it.

The sink maps a Kafka client error to a :class:`KafkaFailure` (the error's code name and
flags); :func:`classify_sink_failure` turns that into one :class:`~airflow_provider_eos.core.
errors.SinkError` subclass, and :func:`sink_failure_error` writes the message and the fix.
:func:`must_recreate_producer` says whether the sink may keep its producer afterwards.

One case the code alone cannot tell: when the broker aborts a transaction that outlived
``transaction.timeout.ms`` it bumps the producer's epoch, and librdkafka reports the next call
as ``_FENCED``, exactly as if a second writer had started. The sink therefore also says whether
the transaction had been open that long (``outlived_timeout``); if it had, it is a timeout.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from airflow_provider_eos.core.acls.acl import ResourceType
from airflow_provider_eos.core.acls.denials import AUTHORIZATION_CODES, acl_missing, for_role
from airflow_provider_eos.core.acls.roles import required_acls
from airflow_provider_eos.core.errors import (
    ProducerFencedError,
    SinkAuthorizationError,
    SinkError,
    SinkKafkaError,
    TransactionAbortedError,
    TransactionTimedOutError,
    UnknownProducerIdError,
)

if TYPE_CHECKING:
    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = [
    "KafkaFailure",
    "SinkStage",
    "classify_sink_failure",
    "must_recreate_producer",
    "sink_failure_error",
    "sink_refusal",
]

# librdkafka's local codes start with "_"; the others are the broker's protocol errors.
FENCED_CODES = frozenset({"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})
# INVALID_TXN_STATE: the coordinator already aborted the transaction (its timeout ran out) when
# the producer tried to add to it or end it.
TIMED_OUT_CODES = frozenset({"_TIMED_OUT", "_MSG_TIMED_OUT", "_TIMED_OUT_QUEUE", "REQUEST_TIMED_OUT",
                             "INVALID_TXN_STATE"})
UNKNOWN_PRODUCER_CODES = frozenset({"UNKNOWN_PRODUCER_ID", "INVALID_PRODUCER_ID_MAPPING"})
# KIP-890's code for "abort and retry"; older brokers say it with the txn_requires_abort flag.
ABORTABLE_CODES = frozenset({"TRANSACTION_ABORTABLE"})

_REPLAYED = "Spark replays the batch on restart and the sink writes it once."


@dataclass(frozen=True)
class KafkaFailure:
    """A Kafka client error as the classification sees it.

    :param code: the error's code name (``KafkaError.name()``, e.g. ``"_FENCED"``).
    :param fatal: the producer cannot be used any more.
    :param retriable: the same call may succeed if repeated.
    :param txn_requires_abort: the transaction must be aborted (and may then be retried).
    :param detail: the client's text, quoted in the message.
    :param outlived_timeout: the transaction had been open at least ``transaction.timeout.ms``.
    """

    code: str
    fatal: bool = False
    retriable: bool = False
    txn_requires_abort: bool = False
    detail: str = ""
    outlived_timeout: bool = False


def classify_sink_failure(failure: KafkaFailure) -> type[SinkError]:
    """The kind of failure a Kafka error's code and flags mean for a sink transaction.

    The code decides first (fenced, authorization, unknown producer id, timed out), then the
    ``txn_requires_abort`` flag (aborted); anything else is :class:`SinkKafkaError`. A fence of a
    transaction that outlived its timeout is the broker's timeout abort, not another writer.
    """
    if failure.code in FENCED_CODES:
        return TransactionTimedOutError if failure.outlived_timeout else ProducerFencedError
    if failure.code in AUTHORIZATION_CODES:
        return SinkAuthorizationError
    if failure.code in UNKNOWN_PRODUCER_CODES:
        return UnknownProducerIdError
    if failure.code in TIMED_OUT_CODES:
        return TransactionTimedOutError
    if failure.txn_requires_abort or failure.code in ABORTABLE_CODES:
        return TransactionAbortedError
    return SinkKafkaError


def must_recreate_producer(failure: KafkaFailure) -> bool:
    """Whether the sink must drop its producer (the next batch's ``init_transactions`` cleans up).

    A fatal error leaves nothing to reuse, and an error that does not ask for an abort leaves the
    transaction in a state only a new producer clears; after a timeout the classic transaction
    protocol librdkafka speaks cannot tell which requests the broker saw, so it starts afresh
    (docs/architecture.md, executor writers). An abortable error keeps the producer once the abort went through.
    """
    recreated = (ProducerFencedError, TransactionTimedOutError, UnknownProducerIdError)
    return failure.fatal or not failure.txn_requires_abort or classify_sink_failure(failure) in recreated


#: Where in the sink's transaction a request was refused: the producer's init, produce, or the offsets' commit.
SinkStage = Literal["init", "produce", "offsets"]


def _refused_request(resource_type: ResourceType, stage: SinkStage, spec: PipelineSpec, transactional_id: str | None,
                     unauthorized_topics: Iterable[str]) -> tuple[str, list[str]]:
    """The request the sink sent and the resources it named, for a refusal of ``resource_type`` at ``stage``."""
    if resource_type is ResourceType.TRANSACTIONAL_ID:
        request = {"init": "InitProducerId", "produce": "AddPartitionsToTxn", "offsets": "AddOffsetsToTxn"}[stage]
        return request, [transactional_id or f"{spec.transactional_id_prefix}-*"]
    if resource_type is ResourceType.GROUP:
        return "TxnOffsetCommit", [spec.group_id]
    if resource_type is ResourceType.CLUSTER:
        return "InitProducerId", []
    # A topic: the input topics when the offsets were refused (TxnOffsetCommit checks READ on them), else the
    # topics produced to; narrowed to those the principal may not even see, when the sink could tell.
    if stage == "offsets":
        request, candidates = "TxnOffsetCommit", list(spec.input_topics)
    else:
        request, candidates = "Produce", [t for t in (spec.output_topic, spec.dlq_topic) if t]
    narrowed = [t for t in candidates if t in set(unauthorized_topics)]
    return request, narrowed or candidates


def sink_refusal(failure: KafkaFailure, *, batch_id: int | None, spec: PipelineSpec, stage: SinkStage,
                 transactional_id: str | None = None,
                 unauthorized_topics: Iterable[str] = ()) -> SinkAuthorizationError:
    """The error of the sink's request refused for want of an ACL, naming it and the job role's grant.

    :param failure: the refusal (an authorization code).
    :param batch_id: the batch whose transaction was refused (``None``: before any batch).
    :param stage: where in the transaction it was refused.
    :param transactional_id: the producer's id.
    :param unauthorized_topics: topics the principal may not describe, if the sink asked.
    """
    request, names = _refused_request(AUTHORIZATION_CODES[failure.code], stage, spec, transactional_id,
                                      unauthorized_topics)
    refused = acl_missing(request, AUTHORIZATION_CODES[failure.code], names, settings=spec.kafka,
                          detail=failure.detail or failure.code)
    denial = for_role(refused, "job", pipeline=spec.name,
                      role_acls=required_acls(spec, refused.principal or "User:NAME", "job"))
    head = "the sink could not start its producer" if batch_id is None else f"batch {batch_id} was not written"
    tail = "" if batch_id is None else f" The transaction was aborted; {_REPLAYED}"
    return SinkAuthorizationError(
        f"{head}: {denial.message}.{tail}", fix=denial.fix, request=denial.request,
        resource_type=denial.resource_type, resource_names=denial.resource_names, operation=denial.operation,
        principal=denial.principal, role=denial.role,
    )


def sink_init_error(failure: KafkaFailure, *, spec: PipelineSpec, transactional_id: str,
                    batch_id: int | None = None) -> SinkError:
    """The typed error of a transactional producer that could not start (``initTransactions`` failed), for both
    writers: an ACL refusal names the grant (:func:`sink_refusal`); a timeout above the brokers' maximum names
    both values' places; anything else the Kafka error and where to look.

    :param batch_id: the batch it was started for (``None``: before any batch).
    """
    if failure.code in AUTHORIZATION_CODES:
        return sink_refusal(failure, batch_id=None, spec=spec, stage="init", transactional_id=transactional_id)
    cause = f"{failure.code}: {failure.detail}" if failure.detail else failure.code
    head = f"the sink could not start its transactional producer {transactional_id}" + (
        "" if batch_id is None else f" for batch {batch_id}")
    tail = "nothing was written" if batch_id is None else f"nothing of batch {batch_id} was written. {_REPLAYED}"
    if failure.code == "INVALID_TRANSACTION_TIMEOUT":
        return SinkKafkaError(
            f"{head}: the broker refused transaction.timeout.ms={spec.transaction_timeout_ms} ({cause}), which is "
            f"above its transaction.max.timeout.ms; {tail}",
            fix="lower the spec's transaction_timeout_ms to the brokers' transaction.max.timeout.ms or below, or raise "
            "transaction.max.timeout.ms on every broker (pre-flight EOS104 names the value)",
        )
    return SinkKafkaError(
        f"{head}: Kafka error {cause}; {tail}",
        fix="check that the brokers and the transaction coordinator answer (pre-flight EOS201 checks "
        "__transaction_state), then restart the job",
    )


def sink_failure_error(failure: KafkaFailure, *, batch_id: int, spec: PipelineSpec, stage: SinkStage = "produce",
                       transactional_id: str | None = None, unauthorized_topics: Iterable[str] = ()) -> SinkError:
    """The typed error for a batch that failed with ``failure``, saying which it was and what to do.

    ``stage``, ``transactional_id`` and ``unauthorized_topics`` name the ACL of a refusal (:func:`sink_refusal`).
    """
    kind = classify_sink_failure(failure)
    cause = f"{failure.code}: {failure.detail}" if failure.detail else failure.code
    head = f"batch {batch_id} was not written"
    timeout = f"transaction.timeout.ms={spec.transaction_timeout_ms}"
    if kind is ProducerFencedError:
        return ProducerFencedError(
            f"{head}: the producer was fenced by another writer with the same transactional id (this one is a "
            f"zombie) ({cause}). The other writer aborted this transaction; {_REPLAYED}",
            fix=f"check that no second job runs pipeline {spec.name!r} (transactional ids "
            f"{spec.transactional_id_prefix}-*), stop the extra one, then restart this one",
        )
    if kind is TransactionTimedOutError:
        fenced = " the broker aborted it and fenced this producer's epoch" if failure.code in FENCED_CODES else ""
        return TransactionTimedOutError(
            f"{head}: the transaction timed out ({cause}); the batch took longer than {timeout} or a "
            f"delivery did not finish in time;{fenced or ' it was aborted'}. {_REPLAYED} (If another job runs "
            "this pipeline, a fence can also come from it.)",
            fix="make batches fit the timeout: lower max_offsets_per_trigger (now "
            f"{spec.max_offsets_per_trigger}) or raise transaction_timeout_ms within the broker's "
            "transaction.max.timeout.ms; check the brokers' health if deliveries time out",
        )
    if kind is SinkAuthorizationError:
        return sink_refusal(failure, batch_id=batch_id, spec=spec, stage=stage, transactional_id=transactional_id,
                            unauthorized_topics=unauthorized_topics)
    if kind is UnknownProducerIdError:
        return UnknownProducerIdError(
            f"{head}: the broker no longer knows this producer's id ({cause}): its state expired "
            "(transactional.id.expiration.ms, or the partition's records of it were deleted). The sink starts a "
            f"new producer; {_REPLAYED}",
            fix="if the pipeline pauses longer than the broker's transactional.id.expiration.ms, raise it; "
            "otherwise restart the job",
        )
    if kind is TransactionAbortedError:
        return TransactionAbortedError(
            f"{head}: the transaction had to be aborted ({cause}). {_REPLAYED}",
            fix="restart the job; if it repeats, the broker error above names the cause (leader changes, "
            "a broker down, a record too large)",
        )
    flags = ", ".join(name for name, on in (("fatal", failure.fatal), ("retriable", failure.retriable)) if on)
    return SinkKafkaError(
        f"{head}: Kafka error {cause}{f' ({flags})' if flags else ''}. Its transaction was aborted; {_REPLAYED}",
        fix="see the Kafka error; restart the job once its cause is fixed",
    )
