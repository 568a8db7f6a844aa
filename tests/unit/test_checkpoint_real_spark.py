"""The checkpoint reader on checkpoints written by real Spark, copied verbatim with their ``.crc`` files.

``spark400_real``: Spark 4.0 (``eos run``, json_enrich, 500 records over 2 partitions at 200 offsets
per trigger). ``spark420_real``: Spark 4.2 with its default formats; ``spark420_real_v2``: Spark 4.2
with the opt-in v2 offset log. Both 4.2 checkpoints come from
:func:`tests.support.spark_checkpoint.write_kafka_checkpoint` (a Kafka-source ``availableNow`` query,
2 partitions of 250 records at 200 offsets per trigger). The Spark-marked test at the end writes them
again with the installed Spark and checks the fixtures still describe what it writes; run it with
``EOS_REGENERATE_CHECKPOINT_FIXTURES=1`` to replace them.

What Spark 4.2 writes by default (checked in the files, and in Spark's source:
``OffsetSeqLog.VERSION = VERSION_1`` and ``CheckpointVersionManager``'s ``CHECKPOINT_VERSION_V1``
for the offset log, overridable by ``spark.sql.streaming.offsetLog.formatVersion``; the commit log's
version is ``spark.sql.streaming.stateStore.checkpointFormatVersion``, default 1): ``offsets/N`` v1
and ``commits/N`` v1, as Spark 4.0 did.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.topic_partition import TopicPartition

DATA = Path(__file__).parent / "data" / "checkpoints"
REAL = DATA / "spark400_real"
SPARK420 = DATA / "spark420_real"
SPARK420_V2 = DATA / "spark420_real_v2"

#: The topic the Spark 4.2 fixtures read (2 partitions of 250 records); the v2 one adds ``-v2``.
FIXTURE_TOPIC = "eos-checkpoint-fixture"
#: Per batch, the end offset of each partition: 200 offsets per trigger split over 2 equal partitions.
SPARK420_ENDS = {0: 100, 1: 200, 2: 250}
#: Opt-in v2 offset log (Spark 4.1+); Spark 4.2 still writes v1 unless asked.
V2_OFFSET_LOG_CONF = {"spark.sql.streaming.offsetLog.formatVersion": "2"}


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


def test_spark400_writes_v1_logs():
    reader = CheckpointReader(str(REAL))
    assert [reader.offset_log_version(n) for n in reader.offset_batches()] == [1, 1, 1]
    assert all((REAL / "commits" / str(n)).read_text().startswith("v1\n") for n in reader.commit_batches())


def _topic(fixture: Path) -> str:
    return FIXTURE_TOPIC + ("-v2" if fixture == SPARK420_V2 else "")


def _ends(batch: int, fixture: Path = SPARK420) -> dict[TopicPartition, int]:
    return {TopicPartition(_topic(fixture), p): SPARK420_ENDS[batch] for p in (0, 1)}


# -- Spark 4.2, default formats ----------------------------------------------------------------


def test_spark420_metadata_holds_the_query_id():
    reader = CheckpointReader(str(SPARK420))
    assert reader.query_id() == json.loads((SPARK420 / "metadata").read_text())["id"]
    assert str(uuid.UUID(reader.query_id())) == reader.query_id()
    assert reader.query_id() == "48a901da-1ea4-4e7a-82cb-ec552f7f4dc5"


def test_spark420_offset_log_is_v1_by_default():
    reader = CheckpointReader(str(SPARK420))
    assert reader.offset_batches() == [0, 1, 2]
    for batch in reader.offset_batches():
        lines = (SPARK420 / "offsets" / str(batch)).read_text().split("\n")
        # Version line, batch metadata, the Kafka source's offsets: one source, by position.
        assert lines[0] == "v1" and len(lines) == 3
        assert json.loads(lines[2]) == {FIXTURE_TOPIC: {"0": SPARK420_ENDS[batch], "1": SPARK420_ENDS[batch]}}
        assert reader.offset_log_version(batch) == 1
        assert reader.source_ids(batch) == ["0"]
        assert reader.planned_offsets(batch) == _ends(batch)
        metadata = reader.batch_metadata(batch)
        assert metadata["batchWatermarkMs"] == 0 and metadata["batchTimestampMs"] > 0
        assert metadata["conf"]["spark.sql.shuffle.partitions"] == "2"


def test_spark420_commit_log_is_v1_by_default():
    reader = CheckpointReader(str(SPARK420))
    assert reader.commit_batches() == [0, 1, 2]
    for batch in reader.commit_batches():
        assert (SPARK420 / "commits" / str(batch)).read_text() == 'v1\n{"nextBatchWatermarkMs":0}'
        assert reader.commit_metadata(batch) == {"nextBatchWatermarkMs": 0}


def test_spark420_ranges_and_snapshot():
    reader = CheckpointReader(str(SPARK420))
    assert reader.initial_offsets() == {TopicPartition(FIXTURE_TOPIC, p): 0 for p in (0, 1)}
    assert reader.start_offsets(0) == reader.initial_offsets()
    assert [reader.start_offsets(n) for n in (1, 2)] == [_ends(0), _ends(1)]
    assert sum(reader.planned_offsets(2).values()) == 500
    assert not reader.state_dir_exists()
    snapshot = reader.snapshot()
    assert (snapshot.last_committed, snapshot.last_planned, snapshot.batch_in_flight) == (2, 2, False)
    assert snapshot.committed_offsets == snapshot.planned_offsets == _ends(2)


# -- Spark 4.2, opt-in v2 offset log -----------------------------------------------------------


def test_spark420_v2_offset_log_lines_carry_source_ids():
    reader = CheckpointReader(str(SPARK420_V2))
    assert reader.offset_batches() == [0, 1, 2] and reader.commit_batches() == [0, 1, 2]
    for batch in reader.offset_batches():
        lines = (SPARK420_V2 / "offsets" / str(batch)).read_text().split("\n")
        assert lines[0] == "v2" and len(lines) == 3
        assert lines[2].startswith("0:{")
        assert reader.offset_log_version(batch) == 2
        assert reader.source_ids(batch) == ["0"]
        assert reader.planned_offsets(batch) == _ends(batch, SPARK420_V2)
        assert "sourceMetadataInfo" in reader.batch_metadata(batch)
    # The commit log keeps its own version setting.
    assert all((SPARK420_V2 / "commits" / str(n)).read_text().startswith("v1\n") for n in reader.commit_batches())
    assert reader.start_offsets(2) == _ends(1, SPARK420_V2)
    assert reader.snapshot().planned_offsets == _ends(2, SPARK420_V2)


# -- the fixtures are what the installed Spark writes ------------------------------------------


def _layout(reader: CheckpointReader) -> dict:
    """What a checkpoint says, minus what differs run to run (query id, batch timestamps)."""
    offsets = reader.offset_batches()
    return {
        "offsets": offsets,
        "commits": reader.commit_batches(),
        "offset_versions": [reader.offset_log_version(n) for n in offsets],
        "source_ids": [reader.source_ids(n) for n in offsets],
        "planned": [reader.planned_offsets(n) for n in offsets],
        "initial": reader.initial_offsets(),
        "metadata_keys": [sorted(reader.batch_metadata(n)) for n in offsets],
        "conf_keys": [sorted(reader.batch_metadata(n)["conf"]) for n in offsets],
        "commit_lines": [
            reader.fs.cat_file(reader.path("commits", str(n))).split(b"\n")[0] for n in reader.commit_batches()
        ],
        "commit_metadata": [reader.commit_metadata(n) for n in reader.commit_batches()],
    }


@pytest.mark.integration
@pytest.mark.spark
@pytest.mark.parametrize(("fixture", "sql_conf"), [(SPARK420, {}), (SPARK420_V2, V2_OFFSET_LOG_CONF)],
                         ids=["default", "v2-offset-log"])
def test_fixture_matches_what_installed_spark_writes(spark, bootstrap, tmp_path, fixture, sql_conf):
    from tests.support.spark_checkpoint import REGENERATE_ENV, replace_fixture, write_kafka_checkpoint

    assert spark.version.startswith("4.2."), f"the fixtures are Spark 4.2's; installed Spark is {spark.version}"
    written = tmp_path / "checkpoint"
    write_kafka_checkpoint(spark, bootstrap, written, topic=_topic(fixture), sql_conf=sql_conf)
    if os.environ.get(REGENERATE_ENV) == "1":
        replace_fixture(written, fixture)
    assert _layout(CheckpointReader(str(written))) == _layout(CheckpointReader(str(fixture)))
