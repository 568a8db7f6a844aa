"""The driver writer's output spill and its protocol around it (docs/architecture.md, docs/design-notes.md item 12):
files written and read one Arrow batch at a time, only reported files read, folders removed; the
skip-replay decision before any Spark work, the transaction only after the Spark job."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any

import fsspec
import pyarrow as pa
import pytest

from airflow_provider_eos.core.checkpoint import CheckpointReader
from airflow_provider_eos.core.errors import SinkError
from airflow_provider_eos.core.sink_protocol import BatchAction, PlannedBatch
from airflow_provider_eos.core.spec import PipelineSpec
from airflow_provider_eos.core.topic_partition import OffsetMap, TopicPartition
from airflow_provider_eos.spark import driver_writer
from airflow_provider_eos.spark.driver_writer import DriverWriter
from airflow_provider_eos.spark.jvm_spill import JvmSpillTasks
from airflow_provider_eos.spark.output_spill import (
    OutputSpill,
    SpilledPart,
    SpillTasks,
    read_spill_file,
    spill_summary,
    write_spill_file,
)
from airflow_provider_eos.spark.record_producer import DLQ_REASON_COLUMN
from tests.support.faults.driver import FaultInjector, FaultPoint


def _batch(start: int, count: int, dead_every: int = 0) -> pa.RecordBatch:
    reasons = [("bad" if dead_every and i % dead_every == 0 else None) for i in range(start, start + count)]
    return pa.RecordBatch.from_pydict({
        "key": pa.array([b"k%d" % i for i in range(start, start + count)], pa.binary()),
        "value": pa.array([b"v%d" % i for i in range(start, start + count)], pa.binary()),
        DLQ_REASON_COLUMN: pa.array(reasons, pa.string()),
    })


@pytest.mark.parametrize("location", ["local", "memory"])
def test_a_file_holds_the_batches_as_written_and_is_read_back_one_batch_at_a_time(tmp_path, location) -> None:
    url = str(tmp_path / "spill") if location == "local" else "memory://spill-test"
    fs, root = fsspec.core.url_to_fs(url)
    path = f"{root.rstrip('/')}/3/w1/0-17.arrow"
    written = [_batch(0, 100, dead_every=7), _batch(100, 100), _batch(200, 5, dead_every=2)]

    rows, dead, size = write_spill_file(fs, path, iter(written))

    assert (rows, dead) == (205, 15 + 0 + 3) and size == fs.size(path) > 0
    read = list(read_spill_file(fs, SpilledPart(0, 0, path, rows, dead, size)))
    assert [b.num_rows for b in read] == [100, 100, 5], "the writer's batches, never one table of the file"
    assert pa.Table.from_batches(read).equals(pa.Table.from_batches(written))


def test_an_empty_partition_leaves_no_file_and_reads_as_nothing(tmp_path) -> None:
    fs, root = fsspec.core.url_to_fs(str(tmp_path))
    assert write_spill_file(fs, f"{root}/0/w/1-3.arrow", iter([])) == (0, 0, 0)
    assert not (tmp_path / "0").exists()
    assert list(read_spill_file(fs, SpilledPart(1, 0, None, 0, 0, 0))) == []


def test_a_file_with_other_rows_than_its_task_reported_fails_the_batch(tmp_path) -> None:
    fs, root = fsspec.core.url_to_fs(str(tmp_path))
    path = f"{root}/1/w/0-1.arrow"
    rows, dead, size = write_spill_file(fs, path, iter([_batch(0, 10)]))
    with pytest.raises(SinkError, match="holds 10 rows, its task reported 11") as err:
        list(read_spill_file(fs, SpilledPart(0, 0, path, rows + 1, dead, size)))
    assert "eos/spill" in err.value.fix


def test_the_spill_reads_only_the_reported_files_in_partition_order_and_removes_folders(tmp_path) -> None:
    checkpoint = CheckpointReader(str(tmp_path / "checkpoint"))
    spill = OutputSpill(checkpoint)
    folder = f"{spill.batch_folder(5)}/w"
    fs = checkpoint.fs
    parts = []
    for partition, start in ((0, 0), (1, 50)):
        path = f"{folder}/{partition}-{10 + partition}.arrow"
        parts.append(SpilledPart(partition, 0, path, *write_spill_file(fs, path, iter([_batch(start, 50)]))))
    # A killed attempt's complete file of partition 0 lies next to the reported ones.
    write_spill_file(fs, f"{folder}/0-9.arrow", iter([_batch(0, 50)]))
    stale = f"{spill.batch_folder(4)}/old/0-1.arrow"
    write_spill_file(fs, stale, iter([_batch(0, 1)]))

    values = [v for b in spill.read(parts) for v in b.column("value").to_pylist()]
    assert values == [b"v%d" % i for i in range(100)]

    spill.remove(5)
    assert not fs.exists(spill.batch_folder(5)) and fs.exists(stale)
    spill.remove(5)  # nothing there: no error
    spill.clear()
    assert not fs.exists(spill.root)
    spill.clear()


def test_the_task_carries_the_drivers_storage_options_and_hides_them() -> None:
    """The task is pickled into the job's closure: the driver's WebHDFS address travels in it (design note 39)."""
    from pyspark import cloudpickle

    from airflow_provider_eos.spark.output_spill import SpillTask
    from airflow_provider_eos.spark.sink_points import TaskObserver

    driver = CheckpointReader("hdfs://nn:8020/c", {"token": "t0k"},
                              hadoop_conf={"fs.defaultFS": "hdfs://nn:8020", "dfs.namenode.http-address": "nn:9870"})
    task = SpillTask(driver.location, ("eos", "spill", "1", "w"), 1, TaskObserver(), driver.storage_options)

    shipped = cloudpickle.loads(cloudpickle.dumps(task))
    assert shipped.storage_options == {"host": "nn", "port": 9870, "token": "t0k"} == driver.storage_options
    assert "t0k" not in repr(shipped)
    reopened = CheckpointReader(shipped.location, shipped.storage_options, hadoop_conf={})
    assert reopened.fs.url == driver.fs.url and reopened.root == driver.root


def test_the_summary_names_retried_partitions_by_their_winning_attempt() -> None:
    parts = [SpilledPart(0, 0, "/a", 3, 1, 100), SpilledPart(1, 2, "/b", 4, 0, 50), SpilledPart(2, 0, None, 0, 0, 0)]
    assert spill_summary(parts) == {"writers": "driver", "spill_files": 2, "spill_bytes": 150,
                                    "spill_retried": {"1": 2}}


# -- the driver writer's protocol, with the Kafka clients and Spark faked ---------------------------------


class _Events(list):
    pass


class _FakeSpill:
    def __init__(self, events: _Events, parts: list[SpilledPart], batches: list[pa.RecordBatch]) -> None:
        self.events, self.parts, self.batches = events, parts, batches

    def clear(self) -> None:
        self.events.append("spill.clear")

    def write(self, batch: Any, batch_id: int, faults: Any) -> list[SpilledPart]:
        self.events.append(f"spill.write {batch_id}")
        return self.parts

    def read(self, parts: list[SpilledPart]):
        for batch in self.batches:
            self.events.append(f"spill.read {batch.num_rows}")
            yield batch

    def remove(self, batch_id: int) -> None:
        self.events.append(f"spill.remove {batch_id}")


class _FakeProducer:
    def __init__(self, events: _Events) -> None:
        self.events = events

    def flush(self, timeout: float) -> int:
        self.events.append("flush")
        return 0


class _FakeWriter:
    timeout_s = 60.0

    def __init__(self, events: _Events) -> None:
        self.events = events

    def producer(self, batch_id: int | None = None) -> _FakeProducer:
        self.events.append("init_transactions")
        return _FakeProducer(self.events)

    @contextmanager
    def transaction(self, batch_id: int):
        self.events.append("begin")
        yield _FakeProducer(self.events)

    def send_offsets(self, producer: Any, offsets: Any, metadata: Any) -> None:
        self.events.append(f"send_offsets {sorted(o for o, _ in offsets.values())}")

    def commit(self, producer: Any, batch_id: int) -> None:
        self.events.append("commit")


class _FakeCheckpoint:
    def query_id(self) -> str:
        return "q1"

    def planned_offsets(self, batch_id: int) -> dict[TopicPartition, int]:
        return {TopicPartition("in", 0): 10 * (batch_id + 1)}

    def start_offsets(self, batch_id: int) -> dict[TopicPartition, int]:
        return {TopicPartition("in", 0): 10 * batch_id}


class _FakeClients:
    def __init__(self, events: _Events, dlq_topic: str | None = "dlq") -> None:
        self.spec = PipelineSpec(name="orders", kafka={"bootstrap.servers": "b:9092"}, input_topics=["in"],
                                 output_topic="out", dlq_topic=dlq_topic, group_id="orders-g",
                                 transactional_id_prefix="orders-eos", checkpoint_location="/tmp/ckpt")
        self.checkpoint, self.driver_producer, self.admin = _FakeCheckpoint(), _FakeWriter(events), object()
        self.checkpoint_events = events

    def group_metadata(self) -> object:
        return object()

    def planned_batch(self, query_id: str, batch_id: int, start: OffsetMap, end: OffsetMap) -> PlannedBatch:
        return PlannedBatch.of(query_id=query_id, batch_id=batch_id, start=start, end=end)

    def guard(self) -> None:  # the driver's lease: may it still commit?
        self.checkpoint_events.append("lease guard")


class _RecordingFaults:
    def __init__(self, events: _Events) -> None:
        self.events = events

    def hit(self, point: FaultPoint) -> None:
        self.events.append(f"fault {point.value}")


@pytest.fixture
def events(monkeypatch: pytest.MonkeyPatch) -> _Events:
    found = _Events()
    monkeypatch.setattr(driver_writer, "read_committed_offsets", lambda *a, **k: found.append("read_group") or {})
    monkeypatch.setattr(driver_writer, "produce_rows",
                        lambda producer, spec, rows: found.append(f"produce {rows.num_rows}") or (rows.num_rows, 0))
    return found


def _writer(events: _Events, *, action: BatchAction, monkeypatch: pytest.MonkeyPatch, dead: int = 0,
            dlq_topic: str | None = "dlq") -> DriverWriter:
    monkeypatch.setattr(driver_writer, "decide_batch", lambda *a, **kw: events.append("decide") or action)
    parts = [SpilledPart(0, 0, "/f0", 30, dead, 1), SpilledPart(1, 1, "/f1", 5, 0, 1)]
    return DriverWriter(_FakeClients(events, dlq_topic), _FakeSpill(events, parts, [_batch(0, 30), _batch(30, 5)]))


def test_a_batch_is_spilled_by_spark_first_and_the_transaction_opens_after_the_job(events, monkeypatch) -> None:
    writer = _writer(events, action=BatchAction.PRODUCE, monkeypatch=monkeypatch)

    stats = writer.write(object(), 2, _RecordingFaults(events))

    assert events == [
        "init_transactions", "spill.clear", "read_group", "decide", "spill.write 2",
        "begin", "fault before_produce", "spill.read 30", "produce 30", "spill.read 5", "produce 5", "flush",
        "fault after_produce", "fault slow_transaction", "send_offsets [30]", "lease guard", "commit",
        "fault after_kafka_commit",
        "spill.remove 2",
    ]
    assert (stats.action, stats.rows_out, stats.extra["spill_files"], stats.extra["spill_retried"]) == (
        "produce", 35, 2, {"1": 1})


def test_a_replayed_batch_is_skipped_before_any_spark_work(events, monkeypatch) -> None:
    writer = _writer(events, action=BatchAction.SKIP_REPLAY, monkeypatch=monkeypatch)
    stats = writer.write(object(), 2, FaultInjector().for_batch(2))
    assert stats.action == "skip_replay"
    assert events == ["init_transactions", "spill.clear", "read_group", "decide"]


def test_dead_letters_without_a_dlq_topic_fail_before_the_transaction_and_the_spill_is_removed(
        events, monkeypatch) -> None:
    writer = _writer(events, action=BatchAction.PRODUCE, monkeypatch=monkeypatch, dead=3, dlq_topic=None)
    with pytest.raises(SinkError, match="3 dead-letter row"):
        writer.write(object(), 4, FaultInjector().for_batch(4))
    assert "begin" not in events and events[-1] == "spill.remove 4"


def test_a_failure_while_producing_still_removes_the_batch_spill(events, monkeypatch) -> None:
    writer = _writer(events, action=BatchAction.PRODUCE, monkeypatch=monkeypatch)

    def failing(producer: Any, spec: Any, rows: pa.RecordBatch) -> tuple[int, int]:
        raise SinkError("broker gone", fix="retry")

    monkeypatch.setattr(driver_writer, "produce_rows", failing)
    with pytest.raises(SinkError, match="broker gone"):
        writer.write(object(), 7, FaultInjector().for_batch(7))
    assert "commit" not in events and events[-1] == "spill.remove 7"


def _spill_tasks(executor_writer: str) -> SpillTasks:
    return driver_writer.spill_tasks(_FakeClients(_Events()).spec.with_overrides(executor_writer=executor_writer))


@pytest.mark.spark
@pytest.mark.parametrize("executor_writer", ["python", "jvm"])
def test_spark_tasks_spill_their_partitions_in_arrow_batches_of_max_records_per_batch(spark, tmp_path,
                                                                                     executor_writer) -> None:
    from tests.support.faults.tasks import TaskFaults

    rows = [(f"k{i}", f"v{i}", None if i % 7 else "bad") for i in range(1000)]
    output = spark.createDataFrame(rows, f"key string, value string, {DLQ_REASON_COLUMN} string").repartition(
        4).sortWithinPartitions("value")
    expected = [(r.key.encode(), r.value.encode(), r[DLQ_REASON_COLUMN]) for r in output.collect()]
    tasks = _spill_tasks(executor_writer)
    # The JVM spill has no fallback to Python workers: its type is the path that ran.
    assert isinstance(tasks, JvmSpillTasks) == (executor_writer == "jvm")
    spill = OutputSpill(CheckpointReader(str(tmp_path / "checkpoint")), tasks)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "100")
    try:
        parts = spill.write(output, 9, TaskFaults())
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxRecordsPerBatch")

    assert [p.spark_partition for p in parts] == [0, 1, 2, 3]
    assert sum(p.rows for p in parts) == 1000 and sum(p.dead for p in parts) == len(expected) - sum(
        1 for i in range(1000) if i % 7)
    assert all(p.file and p.file.startswith(spill.batch_folder(9) + "/") for p in parts)
    batches = list(spill.read(parts))
    assert all(0 < b.num_rows <= 100 for b in batches)
    assert [(k, v, r) for b in batches for k, v, r in zip(*b.to_pydict().values(), strict=True)] == expected
    spill.remove(9)
    assert not (tmp_path / "checkpoint" / "eos" / "spill" / "9").exists()
    empty = spill.write(output.limit(0), 10, TaskFaults())
    assert all(p.file is None and p.rows == 0 for p in empty) and not (tmp_path / "checkpoint" / "eos" / "spill" /
                                                                       "10").exists()


@pytest.mark.spark
def test_the_jvm_spill_writes_the_arrow_the_python_spill_writes_with_mixed_headers_and_a_byte_bound(
        spark, tmp_path) -> None:
    """Spark's own Arrow writer in the executor JVM: the same columns, types and rows as the Python workers' files;
    a record batch ends at maxBytesPerBatch before maxRecordsPerBatch (large records), checked every 256 rows."""
    from pyspark.sql import functions as F

    from tests.support.faults.tasks import TaskFaults

    frame = spark.range(3000).select(
        F.col("id").cast("string").alias("key"), F.concat(F.lit("v" * 500), F.col("id").cast("string")).alias("value"),
        F.when(F.col("id") % 10 == 0, F.array(F.struct(F.lit("h").alias("key"),
                                                        F.col("id").cast("string").cast("binary").alias("value"))))
        .alias("headers")).repartition(2).sortWithinPartitions("key")
    spark.conf.set("spark.sql.execution.arrow.maxBytesPerBatch", str(256 * 1024))
    try:
        written = {}
        for executor_writer in ("python", "jvm"):
            tasks = _spill_tasks(executor_writer)
            assert isinstance(tasks, JvmSpillTasks) == (executor_writer == "jvm")
            spill = OutputSpill(CheckpointReader(str(tmp_path / executor_writer)), tasks)
            parts = spill.write(frame, 1, TaskFaults())
            batches = list(spill.read(parts))
            written[executor_writer] = (parts, batches)
    finally:
        spark.conf.unset("spark.sql.execution.arrow.maxBytesPerBatch")

    (python_parts, python_batches), (jvm_parts, jvm_batches) = written["python"], written["jvm"]
    assert pa.Table.from_batches(jvm_batches).equals(pa.Table.from_batches(python_batches))
    assert [(p.spark_partition, p.attempt, p.rows) for p in jvm_parts] == [
        (p.spark_partition, p.attempt, p.rows) for p in python_parts]
    assert all(p.file.endswith(".arrow") and p.bytes == CheckpointReader(str(tmp_path / "jvm")).fs.size(p.file)
               for p in jvm_parts)
    # The JVM task names its file as Hadoop qualifies it (file:/...); the driver keeps only its name, under the
    # batch's folder as the checkpoint's filesystem spells it, as the Python task's.
    for writer, parts in (("jvm", jvm_parts), ("python", python_parts)):
        assert all(p.file.startswith(f"{tmp_path}/{writer}/eos/spill/1/") for p in parts), [p.file for p in parts]
    # ~510 bytes a row: 256 KiB ends a batch near 512 rows, far below the 10,000 of maxRecordsPerBatch.
    assert all(256 <= b.num_rows <= 768 for b in jvm_batches[:-1]), [b.num_rows for b in jvm_batches]
    headers = pa.Table.from_batches(jvm_batches).column("headers").to_pylist()
    assert sum(1 for h in headers if h) == 300 and all(h == [] or len(h) == 1 for h in headers)
