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
from functools import partial

from confluent_kafka import KafkaException, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from airflow_provider_eos.core.errors import RetryExhaustedError
from airflow_provider_eos.core.sink_failures import KafkaFailure, must_recreate_producer, sink_failure_error
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import TopicPartition
from airflow_provider_eos.kafka.retriable import TRANSACTION_COMMIT
from airflow_provider_eos.kafka.settings import sink_producer_config, with_client_logger
from airflow_provider_eos.spark.record_producer import kafka_failure

__all__ = ["TransactionalProducer"]

log = logging.getLogger("airflow_provider_eos.sink")


class TransactionalProducer:
    """The producer of one transactional id, recreated after a failure that leaves it unusable.

    :param spec: the pipeline spec (client settings, transaction timeout).
    :param transactional_id: the id (``<prefix>-0`` for the driver, ``<prefix>-<t>_<p>`` for a partition).
    :param client: the name the client's log lines carry.
    """

    def __init__(self, spec: PipelineSpec, transactional_id: str, client: str = "sink-producer") -> None:
        self.spec, self.transactional_id, self.client = spec, transactional_id, client
        self._producer: Producer | None = None
        #: Whether the producer was created (fencing every earlier holder) since its last commit: a
        #: fence then means another writer started after it, never that a cached producer went stale.
        self.fresh = False
        #: The batch of the last transaction this producer committed (``None``: none yet).
        self.last_committed_batch: int | None = None

    @property
    def timeout_s(self) -> float:
        return self.spec.transaction_timeout_ms / 1000

    def producer(self) -> Producer:
        """The initialized producer, created (fencing every earlier holder of the id) when there is none."""
        if self._producer is None:
            config = sink_producer_config(self.spec, transactional_id=self.transactional_id)
            producer = Producer(with_client_logger(self.client, config))
            producer.init_transactions(max(30.0, self.timeout_s))
            self._producer, self.fresh = producer, True
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
        producer = self.producer()
        opened = time.monotonic()
        try:
            producer.begin_transaction()
            yield producer
        except (KafkaException, RetryExhaustedError) as exc:
            outlived = (time.monotonic() - opened) * 1000 >= self.spec.transaction_timeout_ms
            failure = kafka_failure(exc, outlived_timeout=outlived)
            self._abandon(producer, failure)
            raise sink_failure_error(failure, batch_id=batch_id, spec=self.spec) from exc
        except BaseException:
            # Whatever else went wrong left a transaction open: the next producer's init aborts it.
            self.drop()
            raise

    @staticmethod
    def send_offsets(producer: Producer, offsets: Mapping[TopicPartition, tuple[int, str]],
                     group_metadata: object) -> None:
        """Add the sink group's ``offsets`` (each with its batch marker) to the open transaction."""
        producer.send_offsets_to_transaction(
            [KafkaTopicPartition(tp.topic, tp.partition, offset, marker) for tp, (offset, marker) in offsets.items()],
            group_metadata, 30,
        )

    def commit(self, producer: Producer, batch_id: int) -> None:
        """Wait for every record and commit the open transaction."""
        producer.flush(self.timeout_s)
        TRANSACTION_COMMIT.call(
            partial(producer.commit_transaction, self.timeout_s),
            what=f"commit the transaction of batch {batch_id} ({self.transactional_id})",
        )
        self.fresh = False
        self.last_committed_batch = batch_id

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
