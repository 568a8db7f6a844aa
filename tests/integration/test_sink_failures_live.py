"""The sink's failures on a real broker: a zombie is told it was fenced, a batch slower than the
transaction timeout is told it timed out (librdkafka reports both as ``_FENCED``), and both
leave the sink to start a new producer."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from airflow_provider_eos.core.errors import ProducerFencedError, TransactionTimedOutError
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings import sink_producer_config
from airflow_provider_eos.spark.sink import ExactlyOnceKafkaSink

pytestmark = pytest.mark.integration


def _sink(bootstrap: str, topic: str, tmp_path, transaction_timeout_ms: int) -> ExactlyOnceKafkaSink:
    name = f"f{uuid.uuid4().hex[:8]}"
    spec = PipelineSpec(
        name=name, kafka={"bootstrap.servers": bootstrap}, input_topics=[f"{topic}-in"], output_topic=topic,
        group_id=f"{name}-sink", transactional_id_prefix=f"{name}-txn", checkpoint_location=str(tmp_path / "ckpt"),
        transaction_timeout_ms=transaction_timeout_ms,
    )
    return ExactlyOnceKafkaSink(spec)


def _open_transaction(sink: ExactlyOnceKafkaSink, topic: str) -> Producer:
    producer = sink._transactional_producer()
    producer.begin_transaction()
    producer.produce(topic, value=b"batch 4")
    producer.flush(10)
    return producer


def _send_offsets(sink: ExactlyOnceKafkaSink, producer: Producer, topic: str) -> None:
    offsets = [KafkaTopicPartition(topic, 0, 1, "eos1:q:4")]
    producer.send_offsets_to_transaction(offsets, sink._group_handle.consumer_group_metadata(), 10)


def test_a_zombie_is_told_another_writer_fenced_it(bootstrap, topic_factory, tmp_path):
    topic = topic_factory("fence")
    sink = _sink(bootstrap, topic, tmp_path, 60_000)
    try:
        producer = _open_transaction(sink, topic)
        successor = Producer(sink_producer_config(sink.spec))
        successor.init_transactions(30)  # a second driver of the same pipeline starts

        with pytest.raises(ProducerFencedError) as raised, sink._kafka_failures_as_sink_error(producer, 4):
            _send_offsets(sink, producer, topic)
        assert raised.value.message.startswith("batch 4 was not written: the producer was fenced by another writer")
        assert "_FENCED" in raised.value.message and "no second job runs" in raised.value.fix
        assert sink._producer is None, "a fenced producer must be replaced"
    finally:
        sink.close()


def test_a_batch_slower_than_the_transaction_timeout_is_told_it_timed_out(bootstrap, topic_factory, tmp_path):
    topic = topic_factory("slow")
    sink = _sink(bootstrap, topic, tmp_path, 3000)
    try:
        producer = _open_transaction(sink, topic)
        # The devstack broker looks for timed-out transactions every second.
        with pytest.raises(TransactionTimedOutError) as raised, sink._kafka_failures_as_sink_error(producer, 4):
            time.sleep(7)
            _send_offsets(sink, producer, topic)
        assert "the transaction timed out (_FENCED" in raised.value.message
        assert "transaction.timeout.ms=3000" in raised.value.message
        assert "max_offsets_per_trigger" in raised.value.fix
        assert sink._producer is None
        # The next batch's producer starts cleanly under the same id.
        sink._transactional_producer().begin_transaction()
        sink._producer.abort_transaction(10)
    finally:
        sink.close()
