"""One transactional id's producer and its transactions, for both exactly-once writers.

The producer is created and ``init_transactions``-ed on first use: that aborts whatever an
earlier holder of the id left open and fences it, which is what makes a restart, a retried task
or a rescheduled executor safe. A Kafka failure inside a transaction aborts it (or gives it up),
drops the producer when the failure leaves nothing to reuse, and is raised as the
:class:`~airflow_provider_eos.core.errors.SinkError` subclass that says what it was
(:mod:`airflow_provider_eos.core.sink_failures`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from functools import partial

from confluent_kafka import KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from airflow_provider_eos.core.errors import RetryExhaustedError
from airflow_provider_eos.core.metrics.updates import TransactionCounts
from airflow_provider_eos.core.sink_failures import (
    KafkaFailure,
    SinkStage,
    must_recreate_producer,
    sink_failure_error,
    sink_init_error,
)
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.retriable import TRANSACTION_COMMIT
from airflow_provider_eos.kafka.settings import sink_producer_config, with_client_logger
from airflow_provider_eos.spark.record_producer import kafka_failure

__all__ = ["TransactionalProducer"]

log = logging.getLogger("airflow_provider_eos.sink")
# librdkafka's code when a commit finds records that failed delivery (each record's report has the reason).
_FAILED_DELIVERY = "_INCONSISTENT"


class TransactionalProducer:
    """The producer of one transactional id, recreated after a failure that leaves it unusable.

    :param spec: the pipeline spec (client settings, transaction timeout).
    :param transactional_id: the id (``<prefix>-0`` for the driver, ``<prefix>-<t>_<p>`` for a partition).
    :param client: the name the client's log lines carry.
    """

    def __init__(self, spec: PipelineSpec, transactional_id: str, client: str = "sink-producer") -> None:
        self.spec, self.transactional_id, self.client = spec, transactional_id, client
        self._producer: Producer | None = None
        #: The batch of the last transaction this producer committed (``None``: none yet).
        self.last_committed_batch: int | None = None
        #: Where the open transaction is (names the request of a refusal).
        self._stage: SinkStage = "produce"
        #: Transactions begun, committed, and aborted or abandoned, over the producer's life (the driver's metrics).
        self.counts = TransactionCounts()

    @property
    def timeout_s(self) -> float:
        return self.spec.transaction_timeout_ms / 1000

    @property
    def has_producer(self) -> bool:
        """Whether a producer is kept: :meth:`producer` creates one (and fences every earlier holder) when not."""
        return self._producer is not None

    def producer(self, batch_id: int | None = None) -> Producer:
        """The initialized producer, created (fencing every earlier holder of the id) when there is none.

        :param batch_id: the batch it is needed for, named by the error of a failed start.
        :raises SinkError: the typed error of a failed ``init_transactions`` (:func:`sink_init_error`).
        """
        if self._producer is None:
            config = sink_producer_config(self.spec, transactional_id=self.transactional_id)
            producer = Producer(with_client_logger(self.client, config))
            try:
                producer.init_transactions(max(30.0, self.timeout_s))
            except KafkaException as exc:
                failure = kafka_failure(exc, outlived_timeout=False)
                raise sink_init_error(failure, spec=self.spec, transactional_id=self.transactional_id,
                                      batch_id=batch_id) from exc
            self._producer = producer
        return self._producer

    def drop(self) -> None:
        """Forget the producer: the next use creates a new one, whose ``init_transactions`` cleans up."""
        self._producer = None
        self.last_committed_batch = None

    @contextmanager
    def transaction(self, batch_id: int) -> Iterator[Producer]:
        """Begin a transaction and yield its producer; the body ends with :meth:`commit`.

        :raises SinkError: the typed error of a Kafka failure inside the body, after aborting.
        """
        producer = self.producer(batch_id)
        opened = time.monotonic()
        self._stage = "produce"
        try:
            producer.begin_transaction()
            self.counts += TransactionCounts(begun=1)
            yield producer
        except (KafkaException, RetryExhaustedError) as exc:
            self.counts += TransactionCounts(aborted=1)
            outlived = (time.monotonic() - opened) * 1000 >= self.spec.transaction_timeout_ms
            failure = kafka_failure(exc, outlived_timeout=outlived)
            refused_topics: list[str] = []
            if failure.code in ("TOPIC_AUTHORIZATION_FAILED", _FAILED_DELIVERY):
                refused_topics = self._unauthorized_topics(producer)
            if failure.code == _FAILED_DELIVERY and set(refused_topics) & self._sink_topics():
                # The commit only says "failed delivery"; the records' own reports said which topic refused them.
                failure = replace(failure, code="TOPIC_AUTHORIZATION_FAILED")
            self._abandon(producer, failure)
            raise sink_failure_error(failure, batch_id=batch_id, spec=self.spec, stage=self._stage,
                                     transactional_id=self.transactional_id,
                                     unauthorized_topics=refused_topics) from exc
        except BaseException:
            # Whatever else went wrong (the spill unreadable, the lease lapsed) left the transaction open with the
            # batch's records in it: abort now, or every read_committed consumer of the output waits for the
            # broker's timeout (the query fails, so no init of this process would abort it). Aborting never commits.
            self.counts += TransactionCounts(aborted=1)
            try:
                producer.abort_transaction(min(30.0, self.timeout_s))
            except KafkaException as abort_exc:
                log.error("abort_transaction after a failure inside the transaction failed too: %s; the next "
                          "producer's init_transactions aborts it", abort_exc)
            self.drop()
            raise

    def send_offsets(self, producer: Producer, offsets: Mapping[TopicPartition, tuple[int, str]],
                     group_metadata: object) -> None:
        """Add the sink group's ``offsets`` (each with its batch marker) to the open transaction."""
        self._stage = "offsets"
        producer.send_offsets_to_transaction(
            [KafkaTopicPartition(tp.topic, tp.partition, offset, marker) for tp, (offset, marker) in offsets.items()],
            group_metadata, 30,
        )
        self._stage = "produce"

    def _sink_topics(self) -> set[str]:
        return {self.spec.output_topic, *([self.spec.dlq_topic] if self.spec.dlq_topic else [])}

    def _unauthorized_topics(self, producer: Producer) -> list[str]:
        """The pipeline's topics this principal may not even describe (the refused ones), best effort.

        Asked one topic at a time: the cluster-wide metadata leaves refused topics out instead of
        flagging them. Every one of them was written or committed to already, so naming it creates nothing.
        """
        spec = self.spec
        refused = []
        for topic in [*spec.input_topics, spec.output_topic, *([spec.dlq_topic] if spec.dlq_topic else [])]:
            try:
                found = producer.list_topics(topic, timeout=5).topics.get(topic)
            except KafkaException:
                continue
            if found is not None and found.error is not None and found.error.name() == "TOPIC_AUTHORIZATION_FAILED":
                refused.append(topic)
        return refused

    def commit(self, producer: Producer, batch_id: int) -> None:
        """Wait for every record and commit the open transaction."""
        producer.flush(self.timeout_s)
        TRANSACTION_COMMIT.call(
            partial(producer.commit_transaction, self.timeout_s),
            what=f"commit the transaction of batch {batch_id} ({self.transactional_id})",
        )
        self.last_committed_batch = batch_id
        self.counts += TransactionCounts(committed=1)

    def _abandon(self, producer: Producer, failure: KafkaFailure) -> None:
        if failure.txn_requires_abort:
            try:
                producer.abort_transaction(30)
            except KafkaException as abort_exc:
                log.error("abort_transaction failed too: %s", abort_exc)
                self.drop()
                return
        if must_recreate_producer(failure):
            self.drop()

    def close(self) -> None:
        """Deliver what is queued; the transaction state is the broker's."""
        if self._producer is not None:
            self._producer.flush(10)
