"""The writers' transaction failures on a real broker: a zombie is told it was fenced, a batch slower
than the transaction timeout is told it timed out (librdkafka reports both as ``_FENCED``), and
both leave the writer to start a new producer."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from airflow_provider_eos.core.errors import ProducerFencedError, TransactionTimedOutError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings import sink_producer_config
from airflow_provider_eos.spark.sink_clients import SinkClients
from tests.support.kafka import consume_all

pytestmark = pytest.mark.integration


def _sink(bootstrap: str, topic: str, tmp_path, transaction_timeout_ms: int) -> SinkClients:
    name = f"f{uuid.uuid4().hex[:8]}"
    spec = PipelineSpec(
        name=name, kafka={"bootstrap.servers": bootstrap}, input_topics=[f"{topic}-in"], output_topic=topic,
        group_id=f"{name}-sink", transactional_id_prefix=f"{name}-txn", checkpoint_location=str(tmp_path / "ckpt"),
        transaction_timeout_ms=transaction_timeout_ms,
    )
    return SinkClients(spec)


def _produce(producer: Producer, topic: str) -> None:
    producer.produce(topic, value=b"batch 4")
    producer.flush(10)


def _send_offsets(sink: SinkClients, producer: Producer, topic: str) -> None:
    offsets = [KafkaTopicPartition(topic, 0, 1, "eos1:q:4")]
    producer.send_offsets_to_transaction(offsets, sink.group_metadata(), 10)


def test_a_zombie_is_told_another_writer_fenced_it(bootstrap, topic_factory, tmp_path):
    topic = topic_factory("fence")
    sink = _sink(bootstrap, topic, tmp_path, 60_000)
    try:
        with pytest.raises(ProducerFencedError) as raised, sink.driver_producer.transaction(4) as producer:
            _produce(producer, topic)
            successor = Producer(sink_producer_config(sink.spec))
            successor.init_transactions(30)  # a second driver of the same pipeline starts
            _send_offsets(sink, producer, topic)
        assert raised.value.message.startswith("batch 4 was not written: the producer was fenced by another writer")
        assert "_FENCED" in raised.value.message and "no second job runs" in raised.value.fix
        assert sink.driver_producer._producer is None, "a fenced producer must be replaced"
    finally:
        sink.close()


def test_a_batch_slower_than_the_transaction_timeout_is_told_it_timed_out(bootstrap, topic_factory, tmp_path):
    topic = topic_factory("slow")
    sink = _sink(bootstrap, topic, tmp_path, 3000)
    try:
        # The devstack broker looks for timed-out transactions every second.
        with pytest.raises(TransactionTimedOutError) as raised, sink.driver_producer.transaction(4) as producer:
            _produce(producer, topic)
            time.sleep(7)
            _send_offsets(sink, producer, topic)
        assert "the transaction timed out (_FENCED" in raised.value.message
        assert "transaction.timeout.ms=3000" in raised.value.message
        assert "max_offsets_per_trigger" in raised.value.fix
        assert sink.driver_producer._producer is None
        # The next batch's producer starts cleanly under the same id.
        successor = sink.driver_producer.producer()
        successor.begin_transaction()
        successor.abort_transaction(10)
    finally:
        sink.close()


def test_a_failure_inside_the_transaction_that_is_not_kafkas_aborts_it_at_once(bootstrap, topic_factory, tmp_path):
    """The spill unreadable, the lease lapsed: the batch's records must not hold the output's LSO for the timeout."""
    topic = topic_factory("stray")
    sink = _sink(bootstrap, topic, tmp_path, 120_000)
    try:
        with pytest.raises(OSError, match="spill"), sink.driver_producer.transaction(4) as producer:
            _produce(producer, topic)
            raise OSError("the spill file of partition 0 went missing")
        assert sink.driver_producer._producer is None
        assert sink.driver_producer.counts.aborted == 1
    finally:
        sink.close()
    after = Producer({"bootstrap.servers": bootstrap})
    after.produce(topic, value=b"after")
    after.flush(10)
    # read_committed sees the record produced after the batch at once: the batch's transaction no longer
    # pins the LSO (before the abort it did for the whole 120 s timeout).
    assert [m.value() for m in consume_all(bootstrap, topic, timeout_s=20)] == [b"after"]
