"""A pipeline with a hand-written checkpoint on the real broker, for tests that need no Spark run.

:func:`checkpointed_pipeline` creates the input and output topics, waits for the group
coordinator, writes a checkpoint whose batches ``0..LAST_COMMITTED`` are planned and committed
(:mod:`tests.support.checkpoints`: ``offsets/N`` of partition ``p`` ends at ``10*(N+1) + p``) and
a spec file naming them. The sink group starts empty; :meth:`CheckpointedPipeline.commit_group`
commits what the sink would.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from airflow_provider_eos.core.markers import BatchMarker
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition
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

    def group(self) -> dict[TopicPartition, tuple[int, str] | None]:
        """What the sink group holds per input partition: offset and metadata, or ``None``."""
        partitions = [TopicPartition(self.input_topic, p) for p in range(PARTITIONS)]
        found = read_committed_offsets(AdminClient(client_settings(self.bootstrap)), self.group_id, partitions)
        return {tp: None if c is None else (c.offset, c.metadata) for tp, c in found.items()}

    def produce_input(self, per_partition: Mapping[int, int]) -> None:
        """Produce as many records into each input partition as ``per_partition`` says."""
        producer = Producer({**client_settings(self.bootstrap), "linger.ms": 5})
        for partition, count in per_partition.items():
            for i in range(count):
                producer.produce(self.input_topic, value=f"r{i}".encode(), partition=partition)
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
