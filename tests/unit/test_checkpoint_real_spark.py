"""The checkpoint reader on a checkpoint written by real Spark 4.0 (``eos run``, json_enrich, 500 records
over 2 partitions at 200 offsets per trigger), copied verbatim with its ``.crc`` files."""

from __future__ import annotations

from pathlib import Path

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.topic_partition import TopicPartition

REAL = Path(__file__).parent / "data" / "checkpoints" / "spark400_real"


def test_reads_a_checkpoint_written_by_spark():
    reader = CheckpointReader(str(REAL))
    assert reader.offset_batches() == [0, 1, 2] and reader.commit_batches() == [0, 1, 2]
    assert reader.query_id() == "2a804c43-bfda-44a9-a8e3-192a253892d2"
    assert reader.initial_offsets() == {TopicPartition("in1", 0): 0, TopicPartition("in1", 1): 0}
    assert reader.planned_offsets(2) == {TopicPartition("in1", 0): 284, TopicPartition("in1", 1): 216}
    assert reader.start_offsets(0) == reader.initial_offsets()
    assert reader.start_offsets(2) == reader.planned_offsets(1)
    # Batches never overlap and end where the input ended: 500 records.
    assert sum(reader.planned_offsets(2).values()) == 500
    assert reader.commit_metadata(2) == {"nextBatchWatermarkMs": 0}
    snapshot = reader.snapshot()
    assert (snapshot.last_committed, snapshot.last_planned) == (2, 2)
