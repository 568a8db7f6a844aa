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

from dataclasses import dataclass
from typing import TYPE_CHECKING

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

__all__ = ["KafkaFailure", "classify_sink_failure", "must_recreate_producer", "sink_failure_error"]

# librdkafka's local codes start with "_"; the others are the broker's protocol errors.
FENCED_CODES = frozenset({"_FENCED", "PRODUCER_FENCED", "INVALID_PRODUCER_EPOCH"})
# INVALID_TXN_STATE: the coordinator already aborted the transaction (its timeout ran out) when
# the producer tried to add to it or end it.
TIMED_OUT_CODES = frozenset({"_TIMED_OUT", "_MSG_TIMED_OUT", "_TIMED_OUT_QUEUE", "REQUEST_TIMED_OUT",
                             "INVALID_TXN_STATE"})
AUTHORIZATION_CODES = frozenset({"TOPIC_AUTHORIZATION_FAILED", "TRANSACTIONAL_ID_AUTHORIZATION_FAILED",
                                 "GROUP_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"})
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
    (DESIGN.md section 2b). An abortable error keeps the producer once the abort went through.
    """
    recreated = (ProducerFencedError, TransactionTimedOutError, UnknownProducerIdError)
    return failure.fatal or not failure.txn_requires_abort or classify_sink_failure(failure) in recreated


def _acl(code: str, spec: PipelineSpec) -> str:
    topics = ", ".join(repr(t) for t in (spec.output_topic, spec.dlq_topic) if t)
    return {
        "TOPIC_AUTHORIZATION_FAILED": f"WRITE on topic {topics}",
        "TRANSACTIONAL_ID_AUTHORIZATION_FAILED":
            f"WRITE and DESCRIBE on the transactional ids prefixed {spec.transactional_id_prefix!r} (a PREFIXED ACL)",
        "GROUP_AUTHORIZATION_FAILED":
            f"READ on group {spec.group_id!r} (each batch commits its offsets to it inside the transaction)",
        "CLUSTER_AUTHORIZATION_FAILED": "IDEMPOTENT_WRITE on the cluster",
    }[code]


def sink_failure_error(failure: KafkaFailure, *, batch_id: int, spec: PipelineSpec) -> SinkError:
    """The typed error for a batch that failed with ``failure``, saying which it was and what to do."""
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
        acl = _acl(failure.code, spec)
        return SinkAuthorizationError(
            f"{head}: the broker refused the sink's principal ({cause}); the missing ACL is {acl}. "
            f"The transaction was aborted; {_REPLAYED}",
            fix=f"grant the principal of the spec's kafka settings {acl}; `eos acls` prints every ACL the job needs",
        )
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
