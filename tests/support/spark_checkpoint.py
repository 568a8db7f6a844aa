"""Write a Spark checkpoint with real Spark: a Kafka-source streaming query, run to the end of its input.

The checkpoint reader's tests read checkpoints the installed Spark wrote; this is how such a checkpoint
is (re)made, from a test, with no script: ``tests/unit/test_checkpoint_real_spark.py`` calls it and, with
``EOS_REGENERATE_CHECKPOINT_FIXTURES=1``, copies the result over the fixture of the Spark version.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from confluent_kafka import Producer

from tests.support.kafka import create_topic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Set to ``1`` to replace a checkpoint fixture with the one the installed Spark just wrote.
REGENERATE_ENV = "EOS_REGENERATE_CHECKPOINT_FIXTURES"


def produce_per_partition(bootstrap: str, topic: str, partitions: int, records_per_partition: int) -> None:
    """The same number of records in every partition, so Spark's rate limit splits batches evenly."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for partition in range(partitions):
        for index in range(records_per_partition):
            producer.produce(topic, key=f"k{index}".encode(), value=f"v{partition}-{index}".encode(),
                             partition=partition)
    assert producer.flush(30) == 0, "records were not delivered"


def write_kafka_checkpoint(
    spark: SparkSession,
    bootstrap: str,
    checkpoint: Path,
    *,
    topic: str,
    partitions: int = 2,
    records_per_partition: int = 250,
    max_offsets_per_trigger: int = 200,
    sql_conf: Mapping[str, str] | None = None,
    timeout_s: float = 300,
) -> None:
    """Create ``topic``, fill it, and run an ``availableNow`` query over it with ``checkpoint`` as location.

    Spark's defaults decide the checkpoint's format (offset-log and commit-log versions) unless
    ``sql_conf`` sets them; it applies to a new session of ``spark`` (same SparkContext, own SQL
    conf), so the shared session is left as it was. With the default sizes, 2 partitions of 250
    records at 200 offsets per trigger make 3 batches ending at 100, 200 and 250 per partition.
    The sink is Spark's ``noop``: only the checkpoint matters.

    :raises AssertionError: if the query fails or does not end within ``timeout_s``.
    """
    create_topic(bootstrap, topic, partitions)
    produce_per_partition(bootstrap, topic, partitions, records_per_partition)
    session = spark.newSession()
    for key, value in (sql_conf or {}).items():
        session.conf.set(key, value)
    frame = (
        session.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
        .load()
    )
    query = (
        frame.writeStream.format("noop")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    try:
        finished = query.awaitTermination(timeout_s)
    finally:
        if query.isActive:
            query.stop()
    assert finished, f"the query over {topic} did not end within {timeout_s}s"
    assert query.exception() is None, f"the query over {topic} failed: {query.exception()}"


def replace_fixture(written: Path, fixture: Path) -> None:
    """Copy a checkpoint verbatim (``.crc`` sidecars included) over ``fixture``."""
    if fixture.exists():
        shutil.rmtree(fixture)
    shutil.copytree(written, fixture)
