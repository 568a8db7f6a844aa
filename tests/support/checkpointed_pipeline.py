"""A pipeline with a hand-written checkpoint on the real broker, for tests that need no Spark run.

:func:`checkpointed_pipeline` creates the input and output topics, waits for the group
coordinator, writes a checkpoint whose batches ``0..LAST_COMMITTED`` are planned and committed
(:mod:`tests.support.checkpoints`: ``offsets/N`` of partition ``p`` ends at ``10*(N+1) + p``) and
a spec file naming them. The sink group starts empty; :meth:`CheckpointedPipeline.commit_group`
commits what the sink would.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.spec import PipelineSpec, Writers
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition
from airflow_provider_eos.core.writers_choice import WritersChoice, record_writers_choice
from airflow_provider_eos.kafka.group_offsets import read_committed_offsets, write_committed_offsets
from tests.support.checkpoints import batch_end_offsets, write_checkpoint
from tests.support.kafka import Cluster, client_settings, wait_for_group_coordinator

PARTITIONS = 2
LAST_COMMITTED = 3


@dataclass(frozen=True)
class CheckpointedPipeline:
    """A spec file, a checkpoint whose batches 0..3 are planned and committed, and the sink group.

    :param spec: the spec as written to ``spec_path`` (a test that rewrites the file reads it again).
    :param bootstrap: the cluster as the test's own clients reach it: a bootstrap string, or the
        settings of a secured cluster's administrator.
    """

    spec: PipelineSpec
    spec_path: Path
    checkpoint: Path
    bootstrap: Cluster
    query_id: str

    @property
    def input_topic(self) -> str:
        return self.spec.input_topics[0]

    @property
    def output_topic(self) -> str:
        return self.spec.output_topic

    @property
    def group_id(self) -> str:
        return self.spec.group_id

    @property
    def prefix(self) -> str:
        return self.spec.transactional_id_prefix

    def age_commits(self, seconds: float = 3600) -> None:
        """Date every ``commits/`` file ``seconds`` back: with the default the query stopped long ago, so
        a repair's liveness check finds no recent commit; with ``0`` it committed just now (looks alive)."""
        then = time.time() - seconds
        for commit in (self.checkpoint / "commits").iterdir():
            os.utime(commit, (then, then))

    def end_offsets(self, batch: int) -> OffsetMap:
        """The checkpoint's ``offsets/batch``."""
        return batch_end_offsets(self.input_topic, batch, PARTITIONS)

    def commit_group(self, batch: int, offsets_of_batch: int | None = None) -> dict[TopicPartition, tuple[int, str]]:
        """Commit the end offsets of ``offsets_of_batch`` (default ``batch``) with marker ``batch``,
        as the sink does in batch ``batch``'s transaction.

        :return: what was committed: offset and metadata per partition.
        """
        marker = BatchMarker(self.query_id, batch).encode()
        ends = self.end_offsets(batch if offsets_of_batch is None else offsets_of_batch)
        committed = {tp: (offset, marker) for tp, offset in ends.items()}
        write_committed_offsets(AdminClient(client_settings(self.bootstrap)), self.group_id, committed)
        return committed

    def open_partition_transaction(self, partition: int, batch: int, *, transactional_id: str | None = None,
                                   timeout_ms: int = 60_000) -> Producer:
        """Begin what the executor writer of input ``partition`` sends for ``batch`` and leave it open: under its
        own transactional id (or ``transactional_id``), one output record, the partition's end offset of ``batch``
        with marker ``batch``. The caller commits it, or keeps it open as a zombie's (a ``timeout_ms`` longer
        than a test waits keeps the broker from aborting it meanwhile)."""
        txn_id = transactional_id or self.spec.partition_transactional_id(self.input_topic, partition)
        producer = Producer({**client_settings(self.bootstrap), "transactional.id": txn_id,
                             "transaction.timeout.ms": timeout_ms})
        # A consumer that never subscribes supplies the group metadata, as the sink's does: it must not join G.
        group_handle = Consumer({**client_settings(self.bootstrap), "group.id": self.group_id})
        try:
            producer.init_transactions(30)
            producer.begin_transaction()
            producer.produce(self.output_topic, key=f"p{partition}".encode(), value=f"batch {batch}".encode(),
                             partition=partition)
            marker = BatchMarker(self.query_id, batch).encode()
            offsets = [KafkaTopicPartition(tp.topic, tp.partition, offset, marker)
                       for tp, offset in self.end_offsets(batch).items() if tp.partition == partition]
            producer.send_offsets_to_transaction(offsets, group_handle.consumer_group_metadata(), 30)
        finally:
            group_handle.close()
        return producer

    def commit_partition(self, partition: int, batch: int) -> str:
        """Commit ``offsets/batch`` of one input partition with marker ``batch``, as that partition's executor
        writer does (:meth:`open_partition_transaction`, then commit). Returns its transactional id."""
        self.open_partition_transaction(partition, batch).commit_transaction(30)
        return self.spec.partition_transactional_id(self.input_topic, partition)

    def record_writers(self, writers: Writers) -> WritersChoice:
        """Record ``writers`` in the checkpoint (``eos/writers.json``) as a run of ``auto`` at batch 0 would."""
        choice = WritersChoice(
            writers=writers,
            requested=Writers.AUTO,
            reason="plan is partition-aligned" if writers is Writers.EXECUTORS else "plan is not partition-aligned",
            operator=None if writers is Writers.EXECUTORS else "Exchange",
            query_id=self.query_id,
            batch_id=0,
            decided_at=dt.datetime.now(dt.UTC),
        )
        record_writers_choice(CheckpointReader(str(self.checkpoint)), choice)
        return choice

    def group(self) -> dict[TopicPartition, tuple[int, str] | None]:
        """What the sink group holds per input partition: offset and metadata, or ``None``."""
        partitions = [TopicPartition(self.input_topic, p) for p in range(PARTITIONS)]
        found = read_committed_offsets(AdminClient(client_settings(self.bootstrap)), self.group_id, partitions,
                                       transaction_timeout_ms=self.spec.transaction_timeout_ms)
        return {tp: None if c is None else (c.offset, c.metadata) for tp, c in found.items()}

    def produce_input(self, per_partition: Mapping[int, int], *, created_s_ago: float = 0) -> None:
        """Produce as many records into each input partition as ``per_partition`` says.

        :param created_s_ago: date the records' create time this far back (input that arrived while nothing ran:
            the health probe reads how long input has waited from the brokers' record timestamps).
        """
        producer = Producer({**client_settings(self.bootstrap), "linger.ms": 5})
        stamp = {"timestamp": int((time.time() - created_s_ago) * 1000)} if created_s_ago else {}
        for partition, count in per_partition.items():
            for i in range(count):
                producer.produce(self.input_topic, value=f"r{i}".encode(), partition=partition, **stamp)
        assert producer.flush(30) == 0

    def produce_input_of(self, batch: int) -> None:
        """As many records as ``offsets/batch`` names, so a group at ``batch`` has read all the input (no lag)."""
        self.produce_input({tp.partition: end for tp, end in self.end_offsets(batch).items()})


def checkpointed_pipeline(
    bootstrap: Cluster, topic_factory: Callable[..., str], root: Path, *, stem: str, **fields: Any
) -> CheckpointedPipeline:
    """Create the topics, the checkpoint and the spec file of a new pipeline.

    :param bootstrap: the cluster (a bootstrap string, or a secured cluster's admin settings: they are then the
        spec's ``kafka`` settings too, and ``topic_factory`` must create topics there).
    :param topic_factory: the ``topic_factory`` fixture.
    :param root: the test's folder; the spec goes to ``root/specs/<name>.json`` (the only spec in that
        folder, for the pre-flight's sharing rules), the checkpoint to ``root/checkpoints/<name>``.
    :param stem: the topics' stem: ``<stem>-in-...`` and ``<stem>-out-...``.
    :param fields: spec fields to add or override (``trigger``, ``dlq_topic``, ``transaction_timeout_ms``).
    """
    input_topic = topic_factory(f"{stem}-in", partitions=PARTITIONS)
    wait_for_group_coordinator(bootstrap, input_topic)
    output_topic = topic_factory(f"{stem}-out", partitions=PARTITIONS)
    name = f"p{uuid.uuid4().hex[:8]}"
    query_id = str(uuid.uuid4())
    checkpoint = write_checkpoint(
        root / "checkpoints" / name,
        topic=input_topic,
        partitions=PARTITIONS,
        query_id=query_id,
        offsets=range(LAST_COMMITTED + 1),
        commits=range(LAST_COMMITTED + 1),
    )
    spec = {
        "name": name,
        "kafka": client_settings(bootstrap),
        "input_topics": [input_topic],
        "output_topic": output_topic,
        "group_id": f"{name}-sink",
        "transactional_id_prefix": f"{name}-eos",
        "checkpoint_location": str(checkpoint),
        "transaction_timeout_ms": 60_000,
        **fields,
    }
    spec_path = root / "specs" / f"{name}.json"
    spec_path.parent.mkdir(parents=True, exist_ok=True)
    spec_path.write_text(json.dumps(spec))
    return CheckpointedPipeline(PipelineSpec.from_dict(spec, source=str(spec_path)), spec_path, checkpoint, bootstrap,
                                query_id)


def leave_batch_half_written(pipeline: CheckpointedPipeline) -> int:
    """Plan batch ``LAST_COMMITTED + 1`` and leave it as executor writers stopped in its middle: partition 0's
    transaction committed it, partition 1 is still at ``LAST_COMMITTED``. Returns the batch in flight."""
    in_flight = LAST_COMMITTED + 1
    write_checkpoint(pipeline.checkpoint, topic=pipeline.input_topic, partitions=PARTITIONS,
                     query_id=pipeline.query_id, offsets=[in_flight], commits=[])
    pipeline.produce_input_of(in_flight)
    pipeline.commit_partition(1, LAST_COMMITTED)
    pipeline.commit_partition(0, in_flight)
    return in_flight
