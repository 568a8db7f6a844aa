"""The job's Kafka source takes a whole fetch per poll, and its tasks are not held at the end of a partition.

Spark asks the partition's offsets after every poll; after the poll that reached the partition's end, that
question waits behind the fetch the consumer sent ahead, which the broker holds for ``fetch.max.wait.ms``.
Counted and timed by the broker itself (its request meters, as the bench reads them), on a broker of this
module's own so no other test's requests are counted.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings import spark_source_options
from bench.broker_requests import BrokerRequests, served
from bench.process_tree import listener_pid
from tests.support.kafka import create_topic, produce

pytestmark = pytest.mark.integration

RECORDS = 20_000
#: Partitions of the topic read to its end: each one's read ends with a fetch sent ahead.
PARTITIONS = 4
#: Kafka's default ``fetch.max.wait.ms``, which the broker holds a fetch at a partition's end for.
KAFKA_FETCH_MAX_WAIT_MS = 500


@pytest.fixture(scope="module")
def own_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from airflow_provider_eos.devstack.broker import LocalKafka

    kafka = LocalKafka(tmp_path_factory.mktemp("polls-broker"))
    try:
        yield kafka.up(stop_with_pid=os.getpid()).bootstrap_servers
    finally:
        kafka.down()


def test_the_jobs_source_asks_for_offsets_a_fraction_as_often_as_with_sparks_default(
        own_broker: str, spark, tmp_path: Path) -> None:
    topic = create_topic(own_broker, "polls", 1)
    produce(own_broker, topic, ((b"k%d" % i, b"v" * 100) for i in range(RECORDS)), **{"linger.ms": 50})
    pid = listener_pid(own_broker)
    assert pid is not None
    requests = BrokerRequests.attach(pid, tmp_path)
    spec = PipelineSpec(name="polls", kafka={"bootstrap.servers": own_broker}, input_topics=[topic],
                        output_topic="unused", group_id="polls-g", transactional_id_prefix="polls",
                        checkpoint_location=str(tmp_path / "ckpt"))

    def list_offsets(options: dict[str, str]) -> int:
        before = requests.counts()
        rows = (spark.read.format("kafka").options(**options).option("subscribe", topic)
                .option("startingOffsets", "earliest").load().count())
        assert rows == RECORDS
        return served(before, requests.counts()).get("ListOffsets", 0)

    ours = spark_source_options(spec)
    sparks_default = {key: value for key, value in ours.items() if key != "kafka.max.poll.records"}
    with_ours, with_default = list_offsets(ours), list_offsets(sparks_default)
    # Spark's default polls 500 records at a time, each poll followed by two ListOffsets: at least 80 here.
    assert with_default >= 2 * RECORDS // 500, (with_ours, with_default)
    assert with_ours * 4 <= with_default, (with_ours, with_default)


def test_the_broker_holds_no_fetch_of_the_jobs_source_at_the_end_of_a_partition(
        own_broker: str, spark, tmp_path: Path) -> None:
    topic = create_topic(own_broker, "ends", PARTITIONS)
    produce(own_broker, topic, ((b"k%d" % i, b"v" * 100) for i in range(RECORDS)), **{"linger.ms": 50})
    pid = listener_pid(own_broker)
    assert pid is not None
    requests = BrokerRequests.attach(pid, tmp_path)
    spec = PipelineSpec(name="ends", kafka={"bootstrap.servers": own_broker}, input_topics=[topic],
                        output_topic="unused", group_id="ends-g", transactional_id_prefix="ends",
                        checkpoint_location=str(tmp_path / "ckpt"))

    def held_ms(options: dict[str, str]) -> float:
        before = requests.held_ms()
        rows = (spark.read.format("kafka").options(**options).option("subscribe", topic)
                .option("startingOffsets", "earliest").load().count())
        assert rows == RECORDS
        return served(before, requests.held_ms()).get("FetchConsumer", 0.0)

    ours = spark_source_options(spec)
    sparks_default = {key: value for key, value in ours.items() if key != "kafka.fetch.max.wait.ms"}
    with_ours, with_default = held_ms(ours), held_ms(sparks_default)
    # Spark's default: every partition's read ends with a fetch held for Kafka's whole wait.
    assert with_default >= PARTITIONS * KAFKA_FETCH_MAX_WAIT_MS * 0.9, (with_ours, with_default)
    assert with_ours * 10 <= with_default, (with_ours, with_default)
