"""Acting on open transactions: fence a lingering one, abort a hanging one (docs/architecture.md, recovery).

The scans and the client live in :mod:`airflow_provider_eos.kafka.transactions_admin`; this
module only changes Kafka, row by row of an abort plan the use case decided.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from airflow_provider_eos.core import transactions as txn
from airflow_provider_eos.core.acls import ResourceType
from airflow_provider_eos.core.transactional_ids import owned_transactional_id
from airflow_provider_eos.kafka.denials import raise_if_refused
from airflow_provider_eos.kafka.transactions_admin import TransactionsAdminError, admin_call, describe_producers

if TYPE_CHECKING:
    from collections.abc import Sequence

    from kafka.admin import KafkaAdminClient

    from airflow_provider_eos.core.spec import PipelineSpec

__all__ = ["abort_hanging", "fence", "fence_each"]


def fence(spec: PipelineSpec, transactional_id: str, *, timeout_s: float = 60) -> None:
    """Abort ``transactional_id``'s open transaction by fencing it.

    ``init_transactions`` with the same id makes the coordinator abort the open transaction
    (writing abort markers, so the LSO moves on) and bump the epoch, so the old producer, if
    it still runs, fails on its next call.

    :raises TransactionalIdError: if the id is outside the spec's prefix (never fenced).
    :raises TransactionsAdminError: if the fence fails.
    """
    from confluent_kafka import KafkaException, Producer

    from airflow_provider_eos.kafka.settings import common_config, with_client_logger

    # Builds the id back through the scheme's owner, so only ids of this pipeline get here.
    expected = owned_transactional_id(spec.transactional_id_prefix, transactional_id)
    producer = Producer(with_client_logger("fence-producer", {
        **common_config(spec),
        "transactional.id": expected,
        "transaction.timeout.ms": spec.transaction_timeout_ms,
        "log_level": 4,
    }))
    try:
        producer.init_transactions(timeout_s)
    except KafkaException as exc:
        raise_if_refused(exc, "InitProducerId", {ResourceType.TRANSACTIONAL_ID: [expected]}, settings=spec.kafka)
        raise TransactionsAdminError(
            f"fencing transactional id {expected!r} (init_transactions) failed: {exc}",
            fix="retry; if it keeps failing, check the broker and that the principal may Write the transactional id",
        ) from exc
    finally:
        producer.close()


#: Fences at once: each is a round trip to the transaction coordinator that waits for an abort to complete.
_FENCES_AT_ONCE = 8


def fence_each(spec: PipelineSpec, transactional_ids: Sequence[str], *, timeout_s: float = 60) -> None:
    """:func:`fence` every id, a few at a time; the first failure is raised once all have been tried."""
    if not transactional_ids:
        return
    with ThreadPoolExecutor(max_workers=min(_FENCES_AT_ONCE, len(transactional_ids)),
                            thread_name_prefix="eos-fence") as pool:
        futures = [pool.submit(fence, spec, txn_id, timeout_s=timeout_s) for txn_id in transactional_ids]
    for future in futures:
        future.result()


def abort_hanging(admin: KafkaAdminClient, row: txn.AbortRow) -> bool:
    """Abort one hanging transaction with the admin AbortTransaction (WriteTxnMarkers abort).

    The producer is looked up again first, as Kafka's ``abort --start-offset`` does, so a
    transaction that was resolved since the scan is not aborted blindly.

    :returns: ``True`` if an abort was sent, ``False`` if the transaction is no longer open.
    :raises TransactionsAdminError: if the abort fails.
    """
    from kafka.admin import AbortTransactionSpec
    from kafka.structs import TopicPartition as KafkaTopicPartition

    (tp,) = row.partitions
    current = describe_producers(admin, [tp]).get(tp, [])
    match = next(
        (p for p in current if p.producer_id == row.producer_id and p.current_txn_start_offset == row.start_offset),
        None,
    )
    if match is None:
        return False
    # Kafka's tool sends coordinator epoch 0 when DescribeProducers reports none (-1): any
    # marker epoch is >= 0, so the leader accepts it.
    spec = AbortTransactionSpec(
        KafkaTopicPartition(tp.topic, tp.partition),
        match.producer_id,
        match.producer_epoch,
        max(match.coordinator_epoch, 0),
    )
    # The admin AbortTransaction is WriteTxnMarkers on the leader, authorized by ALTER on the cluster.
    admin_call(f"WriteTxnMarkers(AbortTransaction on {tp}, producer {match.producer_id})", admin.abort_transaction,
               spec, refused={ResourceType.CLUSTER: []})
    return True
