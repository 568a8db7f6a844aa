"""The job's Kafka source takes a whole fetch per poll, and its tasks are not held at the end of a partition.

Spark asks the partition's offsets after every poll; after the poll that reached the partition's end, that
question waits behind the fetch the consumer sent ahead, which the broker holds for ``fetch.max.wait.ms``.
Counted and timed by the broker itself (its request meters, as the bench reads them), on a broker of this
module's own so no other test's requests are counted.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.kafka.settings import spark_source_options
from bench.broker_requests import BrokerRequests, Figure, served
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


class _FilledTopic:
    """A topic of :data:`RECORDS` records on the module's broker, read whole through Spark with given options."""

    def __init__(self, broker: str, spark: Any, tmp_path: Path, name: str, partitions: int) -> None:
        self.spark, self.name = spark, create_topic(broker, name, partitions)
        produce(broker, self.name, ((b"k%d" % i, b"v" * 100) for i in range(RECORDS)), **{"linger.ms": 50})
        pid = listener_pid(broker)
        assert pid is not None
        self.requests = BrokerRequests.attach(pid, tmp_path)
        spec = PipelineSpec(name=name, kafka={"bootstrap.servers": broker}, input_topics=[self.name],
                            output_topic="unused", group_id=f"{name}-g", transactional_id_prefix=name,
                            checkpoint_location=str(tmp_path / "ckpt"))
        self.options = spark_source_options(spec)

    def served_while_read(self, options: dict[str, str], figures: Callable[[], Mapping[str, Figure]],
                          kind: str) -> Figure:
        """The broker's ``figures`` of request type ``kind`` while Spark read the whole topic with ``options``."""
        before = figures()
        rows = (self.spark.read.format("kafka").options(**options).option("subscribe", self.name)
                .option("startingOffsets", "earliest").load().count())
        assert rows == RECORDS
        return served(before, figures()).get(kind, 0)

    def without(self, option: str) -> dict[str, str]:
        """The job's source options without ``option``: Spark's (and Kafka's) default for it."""
        return {key: value for key, value in self.options.items() if key != option}


def test_the_jobs_source_asks_for_offsets_a_fraction_as_often_as_with_sparks_default(
        own_broker: str, spark, tmp_path: Path) -> None:
    topic = _FilledTopic(own_broker, spark, tmp_path, "polls", 1)
    with_ours, with_default = (topic.served_while_read(options, topic.requests.counts, "ListOffsets")
                               for options in (topic.options, topic.without("kafka.max.poll.records")))
    # Spark's default polls 500 records at a time, each poll followed by two ListOffsets: at least 80 here.
    assert with_default >= 2 * RECORDS // 500, (with_ours, with_default)
    assert with_ours * 4 <= with_default, (with_ours, with_default)


def test_the_broker_holds_no_fetch_of_the_jobs_source_at_the_end_of_a_partition(
        own_broker: str, spark, tmp_path: Path) -> None:
    topic = _FilledTopic(own_broker, spark, tmp_path, "ends", PARTITIONS)
    with_ours, with_default = (topic.served_while_read(options, topic.requests.held_ms, "FetchConsumer")
                               for options in (topic.options, topic.without("kafka.fetch.max.wait.ms")))
    # Spark's default: every partition's read ends with a fetch held for Kafka's whole wait.
    assert with_default >= PARTITIONS * KAFKA_FETCH_MAX_WAIT_MS * 0.9, (with_ours, with_default)
    assert with_ours * 10 <= with_default, (with_ours, with_default)
